"""A terminal task family as an environment: tasks from hashed seeds, sandboxed episodes."""

from __future__ import annotations

import re
from typing import Any, Literal

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import EnvInfo, Environment
from envfactory.contract.tasks import Split, Task
from envfactory.tasks.supply import PerAddress, TaskSupply
from envfactory.terminal import tools
from envfactory.terminal.episode import TerminalEpisode
from envfactory.terminal.family import DIFFICULTIES, Family, TerminalHidden
from envfactory.terminal.sandbox import Limits, unavailable_reason
from envfactory.terminal.tasks import RULES, TerminalDrafter

MAX_ATTEMPTS = 400


class TerminalEnvironment(Environment):
    """Procedural shell tasks in a bubblewrap sandbox, judged by completion tests."""

    kind = "terminal"

    def __init__(
        self, family: Family, *, seed: int = 0, scale: float = 1.0, limits: Limits | None = None
    ) -> None:
        """``seed`` changes every task; ``scale`` is accepted like every world's and unused
        (a family's difficulty sets the size of its inputs)."""
        self.id = family.id
        self.family = family
        self.seed = seed
        self.limits = limits or Limits()
        self.supply = TaskSupply(
            self.id,
            TerminalDrafter(family),
            DIFFICULTIES,
            seed=seed,
            order=PerAddress(attempts=MAX_ATTEMPTS),
        )

    @property
    def difficulties(self) -> list[int]:
        return list(DIFFICULTIES)

    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        """The first of the address's own draws that lands in ``split`` (by the hashes of
        what it asks, its gold plan and its tests) and fails at the start."""
        return self.supply.task(split, difficulty, index)

    def episode(self, config: EpisodeConfig | None = None) -> TerminalEpisode:
        return TerminalEpisode(self, config)

    def tools(self, fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
        return tools.schemas(fmt)

    def info(self) -> EnvInfo:
        return EnvInfo(
            id=self.id,
            kind=self.kind,
            name=self.family.name,
            description=self.family.description,
            tools=len(tools.TOOLS),
            tool_names=list(tools.TOOLS),
            difficulties=self.difficulties,
            tables=0,
            rows=0,
            rules=len(RULES),
            goal_templates=1,
        )

    def plan_shape(self, task: Task) -> tuple[str, ...]:
        """The gold plan's structure: per step, the tool with the programs a command runs
        and the kinds of file it names (the generic tools say little on their own)."""
        hidden = task.hidden
        extra = tuple(hidden.shape) if isinstance(hidden, TerminalHidden) else ()
        return tuple(step_signature(s.tool, s.arguments) for s in hidden.gold_plan) + extra

    @staticmethod
    def available() -> str | None:
        """Why sandboxes cannot run on this machine, or None when they can."""
        return unavailable_reason()


_PROGRAM = re.compile(r"(?:^|[;&|(\n]|\$\()\s*(?:[A-Z_]+=\S+\s+)*([a-z][\w.+-]*)")
_EXT = re.compile(r"\.([A-Za-z]{1,5})\b")


def step_signature(tool: str, arguments: dict[str, Any]) -> str:
    """``run_command:mkdir+mv:jpg+png`` or ``write_file:py``."""
    if tool == "run_command":
        text = str(arguments.get("command", "")).split("<<", 1)[0]
        programs = dict.fromkeys(_PROGRAM.findall(text))
    else:
        text, programs = str(arguments.get("path", "")), {}
    exts = sorted({e.lower() for e in _EXT.findall(text)})
    return ":".join([tool, "+".join(programs), "+".join(exts)])
