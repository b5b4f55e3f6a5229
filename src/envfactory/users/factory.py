"""Build the user simulator an episode config asks for."""

from __future__ import annotations

from envfactory.contract.config import UserConfig
from envfactory.users.base import UserSimulator
from envfactory.users.llm import LLMUser
from envfactory.users.scripted import ScriptedUser


def make_user(config: UserConfig) -> UserSimulator:
    if config.kind == "llm":
        return LLMUser(config)
    return ScriptedUser(config.max_unanswered)
