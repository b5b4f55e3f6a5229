"""Hashed seeds and split assignment.

A task's randomness comes from a hash of (env, split, difficulty, index), never from
``seed + index``, so neighbouring splits and indices share nothing. Splits are disjoint by
construction: every anchor row belongs to exactly one split, by a hash of its id.
"""

from __future__ import annotations

import hashlib

from envfactory.tasks.types import Split

SPLIT_SHARES: tuple[tuple[Split, float], ...] = (
    ("train", 0.7),
    ("validation", 0.15),
    ("test", 0.15),
)


def stable_hash(*parts: object) -> int:
    """A 64-bit hash of the parts, the same in every process (unlike ``hash``)."""
    text = "\x1f".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")


def task_seed(env_id: str, split: str, difficulty: int, index: int) -> int:
    return stable_hash("task", env_id, split, difficulty, index)


def split_of(env_id: str, entity: str, row_id: str) -> Split:
    """The split an anchor row belongs to."""
    u = stable_hash("split", env_id, entity, row_id) / 2**64
    acc = 0.0
    for split, share in SPLIT_SHARES:
        acc += share
        if u < acc:
            return split
    return SPLIT_SHARES[-1][0]
