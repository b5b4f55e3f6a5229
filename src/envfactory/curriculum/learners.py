"""Simulated learners: a stand-in for a policy in training, for tests and demos.

A learner has a skill per environment, in level units. Its chance of solving a task of level
``d`` is σ(slope · (skill − d)). It learns from successes, more from harder ones: a success at
chance p raises the skill by ``rate`` · (1 − p), so the expected gain is rate · p(1 − p), the
most at the edge of its ability and nothing far above or far below it, like the policy
gradient of a binary reward. Practice in one environment transfers a share to the others.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class LearnerSpec:
    """A population of learners: each simulated seed draws one from these ranges."""

    skill: tuple[float, float] = (0.0, 2.0)
    slope: tuple[float, float] = (0.9, 1.3)
    rate: tuple[float, float] = (0.08, 0.14)
    transfer: tuple[float, float] = (0.0, 0.2)
    env_offset: tuple[float, float] = (-1.0, 1.0)


class SimulatedLearner:
    """One learner over named environments."""

    def __init__(
        self,
        envs: list[str],
        rng: random.Random,
        spec: LearnerSpec | None = None,
    ) -> None:
        spec = spec or LearnerSpec()
        self.rng = rng
        base = rng.uniform(*spec.skill)
        self.skill = {e: base - rng.uniform(*spec.env_offset) for e in envs}
        self.slope = rng.uniform(*spec.slope)
        self.rate = rng.uniform(*spec.rate)
        self.transfer = rng.uniform(*spec.transfer)

    def p(self, env: str, level: float) -> float:
        """The chance of solving a task of ``level`` in ``env``."""
        return 1.0 / (1.0 + math.exp(-self.slope * (self.skill[env] - level)))

    def attempt(self, env: str, level: float) -> bool:
        """Try one task; learn from it."""
        p = self.p(env, level)
        success = self.rng.random() < p
        if success:
            gain = self.rate * (1.0 - p)
            for e in self.skill:
                self.skill[e] += gain if e == env else self.transfer * gain
        return success

    def mean_skill(self) -> float:
        return sum(self.skill.values()) / len(self.skill)
