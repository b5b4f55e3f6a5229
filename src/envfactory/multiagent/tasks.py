"""A multi-agent world's tasks: seeded set-ups, each in one split.

A drawn set-up belongs to a split by a hash of its content (:func:`partitioned` draws until one
of the wanted split comes up); an enumerable world's set-ups belong to splits by a hash of their
place in the space, and a :class:`Deck` deals a cell's in a seeded order per difficulty. Either
way the split is 70/15/15 on one key, the set-up (``tasks.seeds.split_of``), which the task
supply's content keys (:mod:`envfactory.tasks.supply`) would put at 50/25/25: small enumerable
spaces keep more train set-ups this way.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import Field

from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import SPLITS, HiddenTask, Split
from envfactory.tasks.seeds import split_of, stable_hash

SPLIT_TRIES = 2000
Setup = dict[str, Any]


class MultiAgentHidden(HiddenTask):
    """The hidden half of a multi-agent task: the seeded set-up, every seat's secrets included.
    Only the episode reads it; each seat is shown its own part."""

    game: Setup = Field(default_factory=dict)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def digest(value: Any) -> str:
    return hashlib.blake2b(canonical(value).encode(), digest_size=16).hexdigest()


def partitioned(
    env_id: str, rng: random.Random, split: Split, draw: Callable[[random.Random], Setup]
) -> Setup:
    """A set-up from ``draw`` that belongs to ``split`` (by a hash of its content)."""
    for _ in range(SPLIT_TRIES):
        game = draw(rng)
        if split_of(env_id, "game", canonical(game)) == split:
            return game
    raise SynthesisError(f"{env_id}: no {split} set-up in {SPLIT_TRIES} draws")


class Deck:
    """An enumerable world's set-ups, each once in one split (by a hash of its place), dealt
    into cells in a seeded order per (split, difficulty). Not locked: its world's lock is."""

    def __init__(self, env_id: str, every: Sequence[Setup]) -> None:
        self.env_id = env_id
        self.splits: dict[str, list[Setup]] = {s: [] for s in SPLITS}
        for i, game in enumerate(every):
            self.splits[split_of(env_id, "game", str(i))].append(game)
        self._cells: dict[tuple[Split, int], list[Setup]] = {}

    def cell(self, split: Split, difficulty: int) -> list[Setup]:
        key = (split, difficulty)
        if key not in self._cells:
            cell = list(self.splits[split])
            random.Random(stable_hash("cell", self.env_id, split, difficulty)).shuffle(cell)
            self._cells[key] = cell
        return self._cells[key]
