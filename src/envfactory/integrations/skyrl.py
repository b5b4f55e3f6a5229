"""SkyRL: an envfactory episode as a SkyRL-Gym text environment.

:class:`EnvfactoryTextEnv` is a ``BaseTextEnv``: ``init`` gives the opening messages of the
row's task (system prompt with the tools, the request), ``step`` takes the model's text
(Hermes / Qwen ``<tool_call>`` blocks, or a message to the user) and answers with the tool
results and the user's replies; the last step's reward is the verifier's. Register it with
:func:`register_env` (``skyrl_gym.make("envfactory", extras={"task_id": ...})``); rows for a
SkyRL dataset come from :func:`skyrl_rows`. ``env_config`` takes any
:class:`~envfactory.harness.config.HarnessConfig` field.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from envfactory.harness.config import HarnessConfig
from envfactory.integrations.text import TextEpisode, task_openings
from envfactory.rollout.types import TaskRef

ENV_CLASS = "envfactory"


def _task_id(extras: dict[str, Any]) -> str:
    info = extras.get("extra_info") or {}
    task_id = extras.get("task_id") or (info.get("task_id") if isinstance(info, dict) else None)
    if not isinstance(task_id, str):
        raise ValueError("extras need a task_id (env/split/difficulty/index)")
    return task_id


class EnvfactoryTextEnv(BaseTextEnv):  # type: ignore[misc]
    """One envfactory episode; see the module docstring."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
        super().__init__()
        settings = {k: v for k, v in dict(env_config or {}).items()}
        self.harness = HarnessConfig(**{"tool_format": "text", **settings})
        self.max_turns = self.harness.max_turns
        self.episode = TextEpisode(_task_id(dict(extras or {})), self.harness)
        self.rewarded: float | None = None

    def init(self, prompt: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The opening messages of the task (the row's prompt is the same text when it was
        made by :func:`skyrl_rows`)."""
        return list(self.episode.messages), {"task_id": self.episode.ref.task_id}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        replies = self.episode.step(action)
        done = self.episode.done
        metadata: dict[str, Any] = {"task_id": self.episode.ref.task_id}
        reward = 0.0
        if done:
            verdict = self.episode.verdict()
            reward = self.rewarded = float(verdict.reward or 0.0)
            metadata.update(status=verdict.status, rubric=[i.name for i in verdict.items])
        return BaseTextEnvStepOutput(
            observations=[] if done else replies, reward=reward, done=done, metadata=metadata
        )

    def get_metrics(self) -> dict[str, Any]:
        metrics: dict[str, Any] = {"turns": self.turns, "steps": self.episode.episode.steps}
        if self.rewarded is not None:
            metrics["reward"] = self.rewarded
        return metrics

    def close(self) -> None:
        self.episode.close()


def register_env(env_class: str = ENV_CLASS) -> None:
    """Make ``skyrl_gym.make(env_class, ...)`` build :class:`EnvfactoryTextEnv` (once)."""
    if env_class not in skyrl_gym.registry:
        skyrl_gym.register(id=env_class, entry_point=f"{__name__}:EnvfactoryTextEnv")


def skyrl_rows(
    tasks: Iterable[TaskRef | str], harness: HarnessConfig | None = None
) -> list[dict[str, Any]]:
    """Rows for a SkyRL dataset: the prompt, the environment class, and the task (the fields
    beside ``prompt`` and ``env_class`` reach the environment as its ``extras``)."""
    harness = harness or HarnessConfig(tool_format="text")
    return [
        {
            "data_source": f"envfactory/{ref.env_id}",
            "prompt": messages,
            "env_class": ENV_CLASS,
            "task_id": ref.task_id,
            "reward_spec": {"method": "rule", "ground_truth": None},
            "extra_info": {"task_id": ref.task_id},
        }
        for ref, messages in task_openings(tasks, harness)
    ]
