"""Keeping the cyclic garbage collector from pausing a process that holds thousands of live
episodes. They hold millions of objects, and a full (generation 2) collection walks all of them:
over a hundred milliseconds here, every few seconds under load. So what exists before the run
(worlds, tasks) is frozen out of every collection, automatic full collections are switched off,
and the owner runs one when it chooses (the rollout engine at the end of a run, the server after
many sessions have closed). Young generations are collected as usual, and finished episodes are
freed at once by reference counting."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

NEVER = 1_000_000_000


@contextlib.contextmanager
def quiet_gc(enabled: bool = True) -> Iterator[None]:
    """Within the block: startup objects frozen, no automatic full collection."""
    if not enabled:
        yield
        return
    old = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(old[0], old[1], NEVER)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


class CollectAfter:
    """A full collection once ``every`` more episodes have been closed: cyclic garbage of
    closed episodes stays bounded while the pauses stay rare (0 never collects)."""

    def __init__(self, every: int) -> None:
        self.every = every
        self._at = 0

    def maybe_collect(self, closed_total: int) -> bool:
        if not self.every or closed_total - self._at < self.every:
            return False
        self._at = closed_total
        gc.collect()
        return True
