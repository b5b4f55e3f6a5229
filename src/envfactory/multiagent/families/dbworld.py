"""What the multi-agent worlds built on a database world share: the world, its tasks at the
same address (so the split and the difficulty ladder carry over), its tools as seat tools."""

from __future__ import annotations

import random
from typing import Any

from envfactory.contract.tasks import Split, Task
from envfactory.db.environment import DatabaseEnvironment
from envfactory.multiagent.environment import MultiAgentEnvironment
from envfactory.multiagent.tools import SeatTool
from envfactory.registry import make


class DatabaseBacked(MultiAgentEnvironment):
    """A multi-agent world over the database world ``world``; its id is ``family`` (for
    retail) or ``family-world``."""

    family = ""
    self_play = True
    symmetric = False

    def __init__(self, world: str = "retail", seed: int = 0, scale: float = 1.0) -> None:
        super().__init__(seed=seed, scale=scale)
        db = make(world, seed=seed, scale=scale)
        if not isinstance(db, DatabaseEnvironment):
            raise TypeError(f"{self.family} needs a database world, not {db.kind} {world!r}")
        self.world = db
        self.id = self.family if world == "retail" else f"{self.family}-{world}"

    @classmethod
    def db_task(cls, task: Task) -> Task:
        """The database world's task that ``task`` is built on."""
        game = cls.game(task)
        world = make(str(game["world"]))
        assert isinstance(world, DatabaseEnvironment)
        _, split, difficulty, index = str(game["task"]).rsplit("/", 3)
        return world.task(split, int(difficulty), int(index))  # type: ignore[arg-type]

    def pick(self, split: Split, difficulty: int, index: int) -> Task:
        """The database task behind the task at (split, difficulty, index): the one at the
        same address, unless a world needs otherwise."""
        return self.world.task(split, difficulty, index)

    def generate(
        self, rng: random.Random, split: Split, difficulty: int, index: int
    ) -> dict[str, Any]:
        db_task = self.pick(split, difficulty, index)
        return {"world": self.world.id, "task": db_task.task_id, **self.extra(db_task)}

    def extra(self, db_task: Task) -> dict[str, Any]:
        """More of the set-up, derived from the database task."""
        return {"fingerprint": db_task.hidden.fingerprint}

    def db_tools(self, read_only: bool = False) -> list[SeatTool]:
        return [
            db_tool(t)
            for t in self.world.tools("mcp")
            if not read_only or t.get("annotations", {}).get("readOnlyHint")
        ]


def db_tool(spec: dict[str, Any]) -> SeatTool:
    """A database world's tool (MCP form) as a seat tool."""
    schema = spec["inputSchema"]
    return SeatTool(
        name=spec["name"],
        description=spec["description"],
        properties=schema.get("properties", {}),
        required=tuple(schema.get("required", ())),
        read_only=bool(spec.get("annotations", {}).get("readOnlyHint")),
    )
