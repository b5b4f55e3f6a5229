"""A multi-agent world as an :class:`~envfactory.contract.environment.Environment`
(kind ``multiagent``).

Tasks keep the discipline of every world: the task at (split, difficulty, index) comes from a
hashed seed, and each set-up belongs to exactly one split (:mod:`envfactory.multiagent.tasks`
says how and why), so train, validation and test never share one. Worlds built on a database
world take its task at the same address, and with it its split. Addresses are checked as the
supply checks them (``check_address``). The difficulty ladder is
the strength of the scripted opponents a task is played against by default.
"""

from __future__ import annotations

import random
import threading
from abc import abstractmethod
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Literal

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import EnvInfo, Environment
from envfactory.contract.tasks import PublicTask, Split, Task
from envfactory.episode.seats import SeatPolicy
from envfactory.multiagent.episode import MultiAgentEpisode
from envfactory.multiagent.tasks import Deck, MultiAgentHidden, digest, partitioned
from envfactory.multiagent.tools import SeatTool
from envfactory.tasks.seeds import stable_hash, task_seed
from envfactory.tasks.supply import check_address

SPLIT_TRIES = 2000


class MultiAgentEnvironment(Environment):
    """The shared part of every multi-agent world; see the module docstring."""

    kind = "multiagent"
    agents: tuple[str, ...] = ()
    name = ""
    description = ""
    rules: tuple[str, ...] = ()
    levels: tuple[int, ...] = (1, 2, 3, 4)
    strengths: tuple[int, ...] = (0, 1, 2, 3)  # scripted seat levels, weakest first
    check_pair: tuple[int, int] = (0, 3)  # (weak, strong) levels ``envfactory check`` compares
    check_seat: str | None = None  # the seat ``check`` measures (None: every seat)
    check_fixed = 2  # the level of the seats ``check`` does not measure
    symmetric = True  # seats are interchangeable rivals (else partners with their own roles)
    self_play = False  # by default every seat is the learner (else one seat, the rest scripted)

    def __init__(self, seed: int = 0, scale: float = 1.0) -> None:
        self.seed = seed
        self.scale = scale
        self._lock = threading.RLock()
        self._deck: Deck | None = None
        self._enumerated = False
        self._make: Callable[[Split, int, int], Task] = lru_cache(maxsize=4096)(self._build)

    # -- the world's part ------------------------------------------------------------------------

    def draw(self, rng: random.Random, difficulty: int) -> dict[str, Any]:
        """One random set-up (JSON-able), for worlds too large to enumerate."""
        raise NotImplementedError(f"{type(self).__name__} defines neither draw() nor space()")

    def space(self) -> list[dict[str, Any]] | None:
        """Every set-up, for worlds small enough to enumerate (None: use :meth:`draw`)."""
        return None

    def generate(
        self, rng: random.Random, split: Split, difficulty: int, index: int
    ) -> dict[str, Any]:
        """The set-up of the task at (split, difficulty, index). An enumerable world deals its
        split's set-ups in a seeded order per difficulty, so a cell repeats none until it runs
        out; a larger one draws until a set-up of the split comes up."""
        cell = self._cell(split, difficulty)
        if cell is not None:
            return cell[index % len(cell)]
        return partitioned(self.id, rng, split, lambda r: self.draw(r, difficulty))

    def _cell(self, split: Split, difficulty: int) -> list[dict[str, Any]] | None:
        """The set-ups of an enumerable world's cell, in the cell's seeded order."""
        with self._lock:
            if not self._enumerated:
                every = self.space()
                self._deck = None if every is None else Deck(self.id, every)
                self._enumerated = True
            return None if self._deck is None else self._deck.cell(split, difficulty)

    def capacity(self, split: Split, difficulty: int) -> int | None:
        cell = self._cell(split, difficulty)
        return None if cell is None else len(cell)

    @abstractmethod
    def instruction(self, game: dict[str, Any], difficulty: int) -> str:
        """What every seat knows about the task (no secrets)."""

    @abstractmethod
    def seat_tools(self, seat: str) -> list[SeatTool]:
        """The tools of ``seat``."""

    @abstractmethod
    def scripted(self, seat: str, strength: int, seed: int = 0) -> SeatPolicy:
        """A scripted policy for ``seat`` at ``strength`` (one of :attr:`strengths`)."""

    @abstractmethod
    def episode(self, config: EpisodeConfig | None = None) -> MultiAgentEpisode: ...

    def knobs(self, game: dict[str, Any], difficulty: int) -> dict[str, int]:
        return {"opponent": self.opponent(difficulty)}

    # -- tasks -----------------------------------------------------------------------------------

    @property
    def seats(self) -> tuple[str, ...]:
        return self.agents

    @property
    def difficulties(self) -> list[int]:
        return list(self.levels)

    def opponent(self, difficulty: int) -> int:
        """The strength of the scripted opponents of a task at ``difficulty``."""
        ladder = self.strengths[-len(self.levels) :]
        return ladder[self.levels.index(difficulty)]

    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        check_address(self.id, self.splits, self.levels, split, difficulty, index)
        with self._lock:
            return self._make(split, difficulty, index)

    def _build(self, split: Split, difficulty: int, index: int) -> Task:
        task_id = f"{self.id}/{split}/{difficulty}/{index}"
        seed = task_seed(self.id, split, difficulty, index)
        rng = random.Random(seed if self.seed == 0 else stable_hash(seed, self.seed))
        game = self.generate(rng, split, difficulty, index)
        fingerprint = digest(game)
        public = PublicTask(
            task_id=task_id,
            env_id=self.id,
            split=split,
            difficulty=difficulty,
            instruction=self.instruction(game, difficulty),
            persona=f"You are one of the agents of {self.name}: {', '.join(self.agents)}.",
            rules=list(self.rules),
            tools=[t["name"] for t in self.tools("mcp")],
        )
        hidden = MultiAgentHidden(
            task_id=task_id,
            goals=[self.id],
            gold_plan=[],
            target=[],
            knobs=self.knobs(game, difficulty),
            fingerprint=fingerprint,
            game=game,
        )
        return Task(public=public, hidden=hidden, initial_hash=fingerprint)

    @staticmethod
    def game(task: Task) -> dict[str, Any]:
        """The seeded set-up of ``task`` (secrets included: for episodes and scripted seats)."""
        hidden = task.hidden
        if not isinstance(hidden, MultiAgentHidden):
            raise TypeError(f"{task.task_id} is not a multi-agent task")
        return hidden.game

    def default_seats(self, task: Task) -> dict[str, int | None]:
        """Who plays ``task`` by default: None for the learner, else a scripted strength. Games
        seat the learner in turn by task index, opposite scripted seats at the task's level."""
        if self.self_play:
            return dict.fromkeys(self.agents)
        index = int(task.task_id.rsplit("/", 1)[1])
        learner = self.agents[index % len(self.agents)]
        level = self.opponent(task.public.difficulty)
        return {seat: None if seat == learner else level for seat in self.agents}

    # -- schemas and info ------------------------------------------------------------------------

    def tools(self, fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
        """Every seat's tools (each name once)."""
        seen: dict[str, SeatTool] = {}
        for seat in self.agents:
            for tool in self.seat_tools(seat):
                seen.setdefault(tool.name, tool)
        return [t.spec(fmt) for t in seen.values()]

    def seat_schemas(
        self, seat: str, fmt: Literal["openai", "mcp"] = "openai"
    ) -> list[dict[str, Any]]:
        return [t.spec(fmt) for t in self.seat_tools(seat)]

    def info(self) -> EnvInfo:
        names = [t["name"] for t in self.tools("mcp")]
        return EnvInfo(
            id=self.id,
            kind=self.kind,
            name=self.name,
            description=self.description,
            tools=len(names),
            tool_names=names,
            difficulties=self.difficulties,
            tables=0,
            rows=0,
            rules=len(self.rules),
            goal_templates=1,
            agents=len(self.agents),
        )
