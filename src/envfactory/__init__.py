"""envfactory: verifiable, resettable tool-use worlds for agentic RL."""

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import EnvInfo, Environment
from envfactory.contract.episode import Episode
from envfactory.contract.tasks import HiddenTask, PublicTask, Task
from envfactory.contract.verdict import RubricItem, Verdict
from envfactory.db.environment import DatabaseEnvironment
from envfactory.db.episode import DatabaseEpisode
from envfactory.registry import list_envs, make, register, register_domain_file

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
