"""Typed errors. Errors an agent causes become observations; these are for the rest."""

from __future__ import annotations


class EnvFactoryError(Exception):
    """Base class of envfactory's own errors."""


class DomainError(EnvFactoryError):
    """A domain description is invalid (bad field, unknown tool, unsafe expression)."""


class UnknownEnvironment(EnvFactoryError, KeyError):
    """No environment is registered under that id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown environment"


class EnvironmentUnavailable(UnknownEnvironment):
    """An environment is known but cannot be made here: its data or runtime is missing."""


class WrongKind(EnvFactoryError):
    """A world of another kind than the code asked for (a benchmark of research worlds given a
    database world)."""


class SynthesisError(EnvFactoryError):
    """No valid task could be made for a (split, difficulty, index)."""


class EpisodeError(EnvFactoryError):
    """The episode API was used out of order (step before reset, step after done)."""


class ForkUnsupported(EpisodeError):
    """This kind of episode cannot be forked: its state lives outside the process (a sandbox's
    files and processes, a browser's page) or is shared with other players. The message says
    which kind and why."""
