"""Worlds composed by the synthesiser: database environments of kind ``synth``."""

from __future__ import annotations

from envfactory.db.environment import DatabaseEnvironment


class SynthEnvironment(DatabaseEnvironment):
    """A database world whose domain was composed from reusable parts (``envfactory synth``)."""

    kind = "synth"
