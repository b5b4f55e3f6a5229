"""Hashed seeds and split assignment.

A task's randomness comes from a hash of (env, split, difficulty, index), never from
``seed + index``, so neighbouring splits and indices share nothing. Splits are disjoint by
construction: every row belongs to exactly one split (:class:`Ownership`), and a task only
changes rows of its own split.
"""

from __future__ import annotations

import hashlib

from envfactory.contract.tasks import Split
from envfactory.world.store import Base

SPLIT_SHARES: tuple[tuple[Split, float], ...] = (
    ("train", 0.7),
    ("validation", 0.15),
    ("test", 0.15),
)


def stable_hash(*parts: object) -> int:
    """A 64-bit hash of the parts, the same in every process (unlike ``hash``)."""
    text = "\x1f".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")


TRAIN_SHARE = 0.5
"""Of each content key's hash range: a generated task is train when all its keys fall below."""


def content_unit(env_id: str, kind: str, key: str) -> float:
    """A content key's place in [0, 1), by a stable hash (worlds that split tasks by what they
    ask, solve and target)."""
    return stable_hash("split", env_id, kind, key) / 2**64


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


class Ownership:
    """The split every row of a world belongs to, so that held-out tasks stay held out.

    A row whose entity names an ``owner`` (a ref field: an order's customer) belongs to its
    owner's split, so the rows one task is about (a customer, their orders and items) share a
    split; any other row belongs to a split by a hash of its id. A task may change only rows of
    its own split, and a row it inserts may point only at rows of its own split.
    """

    def __init__(self, env_id: str, base: Base, owners: dict[str, str]) -> None:
        self.env_id = env_id
        self.base = base
        self.owners = {
            entity: (base.tables[entity].columns.index(field), base.tables[entity].refs[field])
            for entity, field in owners.items()
        }
        self._splits: dict[tuple[str, str], Split] = {}

    def split(self, entity: str, row_id: str) -> Split:
        """The split of an existing row (of a row the base state has)."""
        key = (entity, row_id)
        found = self._splits.get(key)
        if found is None:
            found = self._splits[key] = self._resolve(entity, row_id, depth=0)
        return found

    def _resolve(self, entity: str, row_id: str, depth: int) -> Split:
        owner = self.owners.get(entity)
        if owner is not None and depth < len(self.owners):  # a cycle of owners stops here
            position, parent = owner
            values = self.base.rows[entity].get(row_id)
            parent_id = None if values is None else values[position]
            if isinstance(parent_id, str) and parent_id in self.base.rows[parent]:
                return self._resolve(parent, parent_id, depth + 1)
        return split_of(self.env_id, entity, row_id)

    def pointed_at(self, entity: str, values: tuple[object, ...]) -> list[tuple[str, str]]:
        """The existing rows a row's ref fields point at."""
        table = self.base.tables[entity]
        out = []
        for field, ref in table.refs.items():
            value = values[table.columns.index(field)]
            if isinstance(value, str) and value in self.base.rows[ref]:
                out.append((ref, value))
        return out
