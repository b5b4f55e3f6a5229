"""Worlds composed by the synthesiser: database environments of kind ``synth``."""

from __future__ import annotations

from envfactory.db.environment import DatabaseEnvironment


class SynthEnvironment(DatabaseEnvironment):
    """A database world composed by the world grammar (``envfactory synth``)."""

    kind = "synth"
