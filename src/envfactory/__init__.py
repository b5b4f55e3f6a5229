"""envfactory: verifiable, resettable tool-use worlds for agentic RL."""

from envfactory.env import EnvInfo, Environment
from envfactory.episode.base import Episode, EpisodeConfig
from envfactory.episode.db import DatabaseEpisode
from envfactory.episode.types import Message, Observation, ToolCall
from envfactory.registry import list_envs, make, register, register_domain_file
from envfactory.tasks.types import HiddenTask, PublicTask, Task
from envfactory.verify.verdict import RubricItem, Verdict
from envfactory.world.environment import DatabaseEnvironment

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
