"""The curriculum: per-environment difficulty frontiers (the RLVE rule), an environment
sampler by learnability, persisted in SQLite; simulated learners to test it."""

from envfactory.curriculum.controller import (
    Curriculum,
    CurriculumConfig,
    Draw,
    EnvState,
    LevelStats,
)
from envfactory.curriculum.store import CurriculumError, CurriculumStore, Event, Outcome

__all__ = [
    "Curriculum",
    "CurriculumConfig",
    "CurriculumError",
    "CurriculumStore",
    "Draw",
    "EnvState",
    "Event",
    "LevelStats",
    "Outcome",
]
