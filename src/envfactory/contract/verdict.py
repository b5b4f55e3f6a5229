"""A verdict: the reward and every rubric item behind it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

from envfactory.contract.actions import EpisodeStatus


class RubricItem(BaseModel):
    """One line of the rubric. ``score`` items are averaged by weight; a ``gate`` multiplies
    the result, so a failed gate (a broken rule, collateral damage) zeroes the reward."""

    name: str
    kind: Literal["score", "gate"]
    weight: float
    score: float = Field(ge=0.0, le=1.0)
    reason: str


class Verdict(BaseModel):
    """How an episode went. ``reward`` is None when the episode failed for reasons that are
    not the agent's (env_error, infra_error): such episodes are not scored at all."""

    reward: float | None
    status: EpisodeStatus
    items: list[RubricItem]
    state_hash: str

    @property
    def success(self) -> bool:
        return self.reward is not None and self.reward >= 1.0 - 1e-9

    def item(self, name: str) -> RubricItem:
        for i in self.items:
            if i.name == name:
                return i
        raise KeyError(name)


def weighted_mean(pairs: Iterable[tuple[float, float]]) -> float | None:
    """The mean of ``(weight, score)`` pairs by weight, pairs weighing nothing left out; None
    when nothing weighs. Each weight is divided by the total first: a tiny weight times a score
    could underflow to zero."""
    counted = [(w, s) for w, s in pairs if w > 0]
    total = sum(w for w, _ in counted)
    if not total:
        return None
    return sum(w / total * s for w, s in counted)


def combine(items: list[RubricItem]) -> float:
    """Weighted mean of the score items, times every gate."""
    mean = weighted_mean((i.weight, i.score) for i in items if i.kind == "score")
    reward = 0.0 if mean is None else mean
    for gate in (i for i in items if i.kind == "gate"):
        reward *= gate.score
    return round(reward, 6)
