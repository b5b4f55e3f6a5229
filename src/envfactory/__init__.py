"""envfactory: verifiable, resettable tool-use worlds for agentic RL."""

import importlib
from typing import TYPE_CHECKING, Any

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import EnvInfo, Environment
from envfactory.contract.episode import Episode
from envfactory.contract.tasks import HiddenTask, PublicTask, Task
from envfactory.contract.verdict import RubricItem, Verdict
from envfactory.registry import list_envs, make, register, register_domain_file

if TYPE_CHECKING:
    from envfactory.db.environment import DatabaseEnvironment
    from envfactory.db.episode import DatabaseEpisode

#: names imported on first use, so that ``import envfactory`` loads no kind of world
_LAZY = {
    "DatabaseEnvironment": "envfactory.db.environment",
    "DatabaseEpisode": "envfactory.db.episode",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'envfactory' has no attribute {name!r}")


__all__ = [
    "DatabaseEnvironment",
    "DatabaseEpisode",
    "EnvInfo",
    "Environment",
    "Episode",
    "EpisodeConfig",
    "HiddenTask",
    "Message",
    "Observation",
    "PublicTask",
    "RubricItem",
    "Task",
    "ToolCall",
    "Verdict",
    "list_envs",
    "make",
    "register",
    "register_domain_file",
]
