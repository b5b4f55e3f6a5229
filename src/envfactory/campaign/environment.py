"""A campaign world: a database world's tasks served K at a time over one evolving state.

Request k of a campaign is a task of the underlying world synthesised from the state at its
start (the state the agent and the events left), so it is solvable by construction whatever
happened before. ``task(split, difficulty, index)`` plays the campaign with the oracle once to
record the gold plan (each request's plan, then ``close_request`` with its reply); the live
episode makes every request again from the state it meets, cached by state hash.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache
from typing import Any, Literal

from envfactory.campaign.episode import DEFAULT_CONFIG, CampaignEpisode
from envfactory.campaign.events import EventSource, State
from envfactory.campaign.gold import record
from envfactory.campaign.levels import CampaignLevel, ladder
from envfactory.campaign.setting import Opening, Setting
from envfactory.campaign.tool import CLOSE, close_tool
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import EnvInfo, Environment
from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import Split, Task
from envfactory.db.environment import DatabaseEnvironment
from envfactory.tasks.seeds import stable_hash
from envfactory.world.seed import generate
from envfactory.world.state import hash_rows
from envfactory.world.tables import Row
from envfactory.world.world import World

WORLD_CACHE = 16  # worlds of states (task factories included, ~3 MB each) kept
REQUEST_CACHE = 2048  # requests made (a task and its world's state, no factory) kept
TRIES = 8  # task indices a request tries per task level on a state before the level below


def campaign_info(base: EnvInfo, env_id: str) -> EnvInfo:
    """A campaign world's listing, from its underlying world's."""
    return base.model_copy(
        update={
            "id": env_id,
            "kind": CampaignEnvironment.kind,
            "name": f"{base.name} (campaign)",
            "description": f"Runs of requests over one evolving state: {base.description}",
            "tools": base.tools + 1,
            "tool_names": [*base.tool_names, CLOSE],
            "difficulties": sorted(ladder(base.difficulties)),
        }
    )


class CampaignEnvironment(Environment):
    """Campaigns over the database world ``base`` (any: built-in, synthesised, imported)."""

    kind = "campaign"
    blocking = False
    #: the audit's diversity sample (each task is a whole campaign played by the oracle)
    audit_diversity = 120

    def __init__(self, base: DatabaseEnvironment, env_id: str | None = None) -> None:
        self.base = base
        self.id = env_id or f"campaign-{base.id}"
        self.spec = base.spec
        self.levels: dict[int, CampaignLevel] = ladder(base.difficulties)
        world = base.world
        self.events = EventSource(self.spec, world.tables, _event_rows(world))
        self._worlds: OrderedDict[int, DatabaseEnvironment] = OrderedDict()
        self._requests: OrderedDict[tuple[Any, ...], Opening] = OrderedDict()
        self._base_key = hash_rows(world.base.rows)
        self._lock = threading.RLock()
        self._make = lru_cache(maxsize=1024)(self._task)

    @property
    def difficulties(self) -> list[int]:
        return sorted(self.levels)

    def level(self, difficulty: int) -> CampaignLevel:
        if difficulty not in self.levels:
            raise SynthesisError(f"difficulty must be one of {self.difficulties}, got {difficulty}")
        return self.levels[difficulty]

    # -- states and requests -----------------------------------------------------------------

    def opening(
        self, state: State | None, split: Split, difficulty: int, index: int, number: int
    ) -> Opening:
        """Request ``number`` of campaign (split, difficulty, index) on ``state`` (None: the
        world's initial state) and the world it runs on; None when the state offers none.
        Made once per state and address, and kept (the states an oracle or a replay reaches
        come back)."""
        at = self._base_key if state is None else hash_rows(state)
        key = (at, split, difficulty, index, number)
        with self._lock:
            if key in self._requests:
                self._requests.move_to_end(key)
                return self._requests[key]
        world = self.base if state is None else self.world_at(key[0], state)
        task = self.request(world, split, difficulty, index, number)
        made = (
            None
            if task is None
            else (Setting(world.id, world.world, world.rules, world.rubric), task)
        )
        with self._lock:
            self._requests[key] = made
            while len(self._requests) > REQUEST_CACHE:
                self._requests.popitem(last=False)
        return made

    def world_at(self, key: int, state: State) -> DatabaseEnvironment:
        """The underlying world whose initial state is ``state`` (``key``: its hash)."""
        if key == self._base_key:
            return self.base
        with self._lock:
            found = self._worlds.get(key)
            if found is not None:
                self._worlds.move_to_end(key)
                return found
        tables = self.base.world.tables
        rows = {n: [tables[n].to_row(v) for v in by_id.values()] for n, by_id in state.items()}
        world = self.base.world
        built = DatabaseEnvironment(self.spec, seed=world.seed, scale=world.scale, rows=rows)
        with self._lock:
            self._worlds[key] = built
            while len(self._worlds) > WORLD_CACHE:
                self._worlds.popitem(last=False)
        return built

    def request(
        self, world: DatabaseEnvironment, split: Split, difficulty: int, index: int, number: int
    ) -> Task | None:
        """Request ``number`` of campaign (split, difficulty, index) on ``world``'s state: a task
        of the campaign's split at the request's task level whose plan fits the level's calls
        (failing that, at a level below, down to the campaign level's lowest), or None when the
        state offers none."""
        level = self.level(difficulty)
        wanted = request_levels(level, self.id, split, difficulty, index)[number - 1]
        for task_level in range(wanted, min(level.task_levels) - 1, -1):
            for attempt in range(TRIES):
                at = stable_hash(
                    "campaign-request",
                    self.id,
                    split,
                    difficulty,
                    index,
                    number,
                    task_level,
                    attempt,
                )
                try:
                    task = world.task(split, task_level, at % 1_000_000)
                except SynthesisError:
                    continue
                if len(task.hidden.gold_plan) + len(task.hidden.asks) <= level.calls:
                    return task
        return None

    # -- the contract ------------------------------------------------------------------------

    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        self.level(difficulty)
        return self._make(split, difficulty, index)

    def _task(self, split: Split, difficulty: int, index: int) -> Task:
        return record(self, split, difficulty, index)

    def episode(self, config: EpisodeConfig | None = None) -> CampaignEpisode:
        return CampaignEpisode(self, config or DEFAULT_CONFIG)

    def tools(self, fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
        return [*self.base.tools(fmt), close_tool(fmt)]

    def info(self) -> EnvInfo:
        return campaign_info(self.base.info(), self.id)


def request_levels(
    level: CampaignLevel, env_id: str, split: Split, difficulty: int, index: int
) -> list[int]:
    """The task level of each request of campaign (split, difficulty, index): the level's mix
    in an order of the campaign's own."""
    order = sorted(
        range(level.tasks),
        key=lambda k: stable_hash("campaign-order", env_id, split, difficulty, index, k),
    )
    return [level.task_levels[k] for k in order]


def _event_rows(world: World) -> dict[str, list[Row]]:
    """The rows events draw from: another seeded world's, or an imported world's own (its
    data has no generators to seed another)."""
    if world.imported:
        return {
            n: [world.tables[n].to_row(v) for v in rows.values()]
            for n, rows in world.base.rows.items()
        }
    return generate(world.spec, world.tables, stable_hash("campaign-pool", world.seed), world.scale)


def campaign(base: Environment, env_id: str | None = None) -> CampaignEnvironment:
    """Campaigns over any database world (a built-in domain, a synthesised or OpenAPI world);
    ``env_id`` defaults to ``campaign-<base id>``."""
    if not isinstance(base, DatabaseEnvironment):
        raise SynthesisError(
            f"{base.id} is a {base.kind} world; campaigns run over database worlds"
        )
    return CampaignEnvironment(base, env_id)
