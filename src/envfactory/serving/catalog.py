"""Task addressing for servers: (split, difficulty, index) references and flat split indices.

The task supply of an environment is unbounded, but the Open Reward Standard numbers the tasks
of a split ``0..num_tasks-1``. A split's flat index runs through the difficulties in order, each
contributing its distinct tasks (``Environment.capacity``, or ``block`` when unknown).
A task spec on the wire names a task and nothing else: ``task_id`` or split, difficulty, index.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from envfactory.contract.environment import Environment
from envfactory.contract.errors import EnvFactoryError
from envfactory.contract.tasks import Split, Task
from envfactory.rollout.types import TaskRef as TaskRef  # the servers' task address too
from envfactory.serving.errors import BadRequest

DEFAULT_BLOCK = 1000


def task_spec(ref: TaskRef) -> dict[str, Any]:
    """The task spec of the wire: enough to name the task, nothing it hides."""
    return {
        "task_id": ref.task_id,
        "split": ref.split,
        "difficulty": ref.difficulty,
        "index": ref.index,
    }


class TaskCatalog:
    """The addressable tasks of one environment."""

    def __init__(self, env: Environment, block: int = DEFAULT_BLOCK) -> None:
        self.env = env
        self.block = block
        self._blocks = cache(self._compute_blocks)

    def _compute_blocks(self, split: Split) -> tuple[tuple[int, int], ...]:
        out = []
        for d in self.env.difficulties:
            known = self.env.capacity(split, d)
            out.append((d, self.block if known is None else known))
        return tuple(out)

    def split(self, name: str) -> Split:
        for s in self.env.splits:
            if s == name:
                return s
        raise BadRequest(f"unknown split {name!r}; splits are: {', '.join(self.env.splits)}")

    def num_tasks(self, split: str) -> int:
        return sum(n for _, n in self._blocks(self.split(split)))

    def at(self, split: str, position: int) -> TaskRef:
        """The task at flat index ``position`` of ``split`` (negative counts from the end)."""
        s = self.split(split)
        total = self.num_tasks(s)
        if position < 0:
            position += total
        if not 0 <= position < total:
            raise BadRequest(f"index {position} is out of range: split {s!r} has {total} tasks")
        for difficulty, n in self._blocks(s):
            if position < n:
                return TaskRef(self.env.id, s, difficulty, position)
            position -= n
        raise AssertionError("unreachable")  # pragma: no cover

    def span(self, split: str, start: int | None, stop: int | None) -> list[TaskRef]:
        """Tasks ``start..stop`` of ``split`` with Python slice rules (clamped, negatives)."""
        total = self.num_tasks(split)
        lo, hi, _ = slice(start, stop).indices(total)
        return [self.at(split, i) for i in range(lo, hi)]

    def ref(self, split: str, difficulty: int, index: int) -> TaskRef:
        """A direct reference; the index space of a (split, difficulty) cell is unbounded."""
        s = self.split(split)
        if difficulty not in self.env.difficulties:
            raise BadRequest(
                f"unknown difficulty {difficulty}; {self.env.id} has {self.env.difficulties}"
            )
        if index < 0:
            raise BadRequest("index must be >= 0")
        size = self.env.capacity(s, difficulty) if self.env.finite else None
        if size is not None and index >= size:
            raise BadRequest(f"index {index} is out of range: {s}/{difficulty} has {size} tasks")
        return TaskRef(self.env.id, s, difficulty, index)

    def parse_task_id(self, task_id: str) -> TaskRef:
        parts = task_id.split("/")
        if len(parts) != 4 or parts[0] != self.env.id:
            form = f"{self.env.id}/split/difficulty/index"
            raise BadRequest(f"task_id {task_id[:80]!r} is not of the form {form!r}")
        try:
            difficulty, index = int(parts[2]), int(parts[3])
        except ValueError:
            raise BadRequest(
                f"task_id {task_id[:80]!r}: difficulty and index are integers"
            ) from None
        return self.ref(parts[1], difficulty, index)

    def parse_spec(self, spec: Mapping[str, Any]) -> TaskRef:
        """A task spec: ``{"task_id": ...}`` or ``{"split", "difficulty", "index"}``."""
        task_id = spec.get("task_id")
        if isinstance(task_id, str):
            return self.parse_task_id(task_id)
        split, difficulty, index = spec.get("split"), spec.get("difficulty"), spec.get("index")
        if (
            isinstance(split, str)
            and isinstance(difficulty, int)
            and isinstance(index, int)
            and not isinstance(difficulty, bool)
            and not isinstance(index, bool)
        ):
            return self.ref(split, difficulty, index)
        raise BadRequest(
            "a task spec is {'task_id': 'env/split/difficulty/index'} "
            "or {'split': str, 'difficulty': int, 'index': int}"
        )

    def task(self, ref: TaskRef) -> Task:
        """Synthesise the task; a cell that cannot make it is a bad request, not a crash."""
        try:
            return self.env.task(ref.split, ref.difficulty, ref.index)
        except EnvFactoryError as exc:
            raise BadRequest(f"no task at {ref.task_id}: {exc}") from None
