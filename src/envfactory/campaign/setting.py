"""What a campaign's episodes and its gold recorder read of their campaign world: the world of
one state (:class:`Setting`) and the campaign world itself as a protocol (:class:`CampaignWorld`),
so neither imports the environment that makes them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from envfactory.campaign.events import EventSource, State
from envfactory.campaign.levels import CampaignLevel
from envfactory.contract.tasks import Split, Task
from envfactory.db.criteria import Evidence
from envfactory.db.environment import DatabaseEnvironment
from envfactory.db.verifier import RuleChecker
from envfactory.verify.rubric import Rubric
from envfactory.world.world import World


@dataclass
class Setting:
    """The world of one state as a request's database episode reads it (a
    :class:`~envfactory.db.episode.DatabaseSetting`), without its task factory."""

    id: str
    world: World
    rules: RuleChecker
    rubric: Rubric[Evidence]


Opening = tuple[Setting, Task] | None


class CampaignWorld(Protocol):
    """A campaign world as its episodes and gold recorder use it."""

    id: str
    base: DatabaseEnvironment
    events: EventSource

    def level(self, difficulty: int) -> CampaignLevel: ...

    def opening(
        self, state: State | None, split: Split, difficulty: int, index: int, number: int
    ) -> Opening: ...

    def tools(self, fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]: ...
