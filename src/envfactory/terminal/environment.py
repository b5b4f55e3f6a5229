"""A terminal task family as an environment: tasks from hashed seeds, sandboxed episodes."""

from __future__ import annotations

import json
import random
import re
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import EnvInfo, Environment
from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import PublicTask, Split, Task
from envfactory.tasks.seeds import TRAIN_SHARE, content_unit, stable_hash, task_seed
from envfactory.terminal import tools
from envfactory.terminal.checks import static_passes
from envfactory.terminal.episode import TerminalEpisode
from envfactory.terminal.family import DIFFICULTIES, STARTER, Draft, Family, TerminalHidden
from envfactory.terminal.fs import tree_hash, tree_of
from envfactory.terminal.sandbox import Limits, unavailable_reason

PERSONA = "You are a careful assistant working in a Linux shell."
RULES = [
    "Work inside /work; the rest of the system is read-only and there is no network.",
    "Do what the request asks and nothing more; do not delete files you were not asked to.",
    "When you are done, reply with a short final message.",
]
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
        self._lock = threading.Lock()
        self._make = lru_cache(maxsize=1024)(self._generate)

    @property
    def difficulties(self) -> list[int]:
        return list(DIFFICULTIES)

    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        if difficulty not in DIFFICULTIES:
            raise SynthesisError(f"{self.id} has difficulties {DIFFICULTIES}, not {difficulty}")
        with self._lock:
            return self._make(split, difficulty, index)

    def _generate(self, split: Split, difficulty: int, index: int) -> Task:
        """Draw until a task lands in ``split`` (by hashes of its content) and fails at start."""
        base = task_seed(self.id, split, difficulty, index)
        for attempt in range(MAX_ATTEMPTS):
            rng = random.Random(stable_hash(base, self.seed, attempt))
            draft = (
                self.family.starter(rng)
                if difficulty == STARTER
                else self.family.generate(rng, difficulty)
            )
            if self.split_of(draft, split) != split:
                continue
            initial = tree_of(draft.initial_files())
            if static_passes(draft.tests, initial):
                continue
            fp = _fingerprint(draft)
            return self._task(draft, split, difficulty, index, fp, tree_hash(initial))
        raise SynthesisError(f"no {split} task at {self.id} difficulty {difficulty}")

    def split_of(self, draft: Draft, wanted: Split | None = None) -> Split | None:
        """The split ``draft`` belongs to, or None when it belongs to none.

        Its instruction, its gold plan and its tests (what it asks, its solution, its
        target) each hash to train or held-out; a task is train when all three do, held-out
        when all three do, and is drawn again otherwise. So no instruction, solution or
        target of a held-out task is ever those of a train task. Held-out tasks divide into
        validation and test by their solution's hash. With ``wanted`` it stops (None) at the
        first key that rules that split out, cheapest first: most drafts are drawn for a
        split they miss, and their plan and tests need not be serialised."""
        held = content_unit(self.id, "instruction", draft.instruction) >= TRAIN_SHARE
        if wanted is not None and held != (wanted != "train"):
            return None
        solution = _dump(draft.gold)
        if (content_unit(self.id, "solution", solution) >= TRAIN_SHARE) != held:
            return None
        split: Split = "train"
        if held:
            split = "validation" if content_unit(self.id, "held-out", solution) < 0.5 else "test"
        if wanted is not None and split != wanted:
            return None
        if (content_unit(self.id, "target", _dump(draft.tests)) >= TRAIN_SHARE) != held:
            return None
        return split

    def _task(
        self, d: Draft, split: Split, difficulty: int, index: int, fp: str, initial: str
    ) -> Task:
        task_id = f"{self.id}/{split}/{difficulty}/{index}"
        public = PublicTask(
            task_id=task_id,
            env_id=self.id,
            split=split,
            difficulty=difficulty,
            instruction=d.instruction,
            persona=PERSONA,
            rules=RULES,
            tools=d.tools or list(tools.TOOLS),
        )
        hidden = TerminalHidden(
            task_id=task_id,
            goals=d.goals or [self.id],
            gold_plan=d.gold,
            target=[],
            knobs={"difficulty": difficulty, **d.knobs},
            fingerprint=fp,
            files=d.initial_files(),
            tests=d.tests,
            shape=d.shape,
        )
        return Task(public=public, hidden=hidden, initial_hash=initial)

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


def _fingerprint(d: Draft) -> str:
    parts = [d.instruction]
    parts += [f.model_dump_json() for f in d.initial_files()]
    parts += [t.model_dump_json() for t in d.tests]
    return f"{stable_hash(*parts):016x}"


def _dump(models: Sequence[BaseModel]) -> str:
    """A split key: the models as canonical JSON."""
    return json.dumps([m.model_dump() for m in models], sort_keys=True)
