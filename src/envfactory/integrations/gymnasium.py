"""envfactory worlds as Gymnasium environments: text in, text out.

Every registered world is registered with Gymnasium as ``envfactory/<env_id>-v0`` when this
module is imported (``gym.make("envfactory.integrations.gymnasium:envfactory/retail-v0")``
imports it for you). Observations are the text a model reads; an action is the JSON text of an
engine action (``{"type": "tool_call", "tool", "arguments"}`` or
``{"type": "message", "content", "final"}``); malformed actions become error observations.

``reset(seed=..., options=...)`` chooses the task: ``options`` may name ``task_id``, or
``split`` / ``difficulty`` / ``index``; otherwise the index is drawn from the seeded generator.
``step`` returns ``(observation, reward, terminated, truncated, info)``: the reward is the
verdict's when the episode ends (0.0 before). ``terminated`` means the agent ended it,
``truncated`` that it ran out of turns or failed for reasons not the agent's; then
``info["scored"]`` is False and the 0.0 reward must not be used for training.
"""

from __future__ import annotations

import string
from typing import Any, SupportsFloat, cast

import gymnasium as gym
from gymnasium import spaces

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import Environment
from envfactory.contract.episode import Episode
from envfactory.contract.tasks import SPLITS, Split, Task
from envfactory.registry import list_envs, make

CHARSET = frozenset(string.printable)
MAX_OBSERVATION = 1 << 20
MAX_ACTION = 1 << 14
NAMESPACE = "envfactory"


def ascii_text(text: str) -> str:
    """``text`` within the space's charset: other characters become ``\\uXXXX`` escapes."""
    if all(c in CHARSET for c in text):
        return text
    return "".join(c if c in CHARSET else c.encode("unicode_escape").decode() for c in text)


class TextWorld(gym.Env[str, str]):
    """One envfactory environment behind Gymnasium's API."""

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 1}  # noqa: RUF012

    def __init__(
        self,
        env_id: str = "retail",
        split: str = "train",
        difficulty: int | None = None,
        max_steps: int = 60,
        render_mode: str | None = None,
        env: Environment | None = None,
    ) -> None:
        self.world = env or make(env_id)
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; splits are {SPLITS}")
        self.split = split
        self.difficulty = difficulty or self.world.difficulties[0]
        self.config = EpisodeConfig(max_steps=max_steps)
        self.render_mode = render_mode
        self.observation_space = spaces.Text(MAX_OBSERVATION, min_length=0, charset=CHARSET)
        self.action_space = spaces.Text(MAX_ACTION, min_length=1, charset=CHARSET)
        self.episode: Episode | None = None
        self.task: Task | None = None
        self._last = ""

    def _choose(self, options: dict[str, Any]) -> Task:
        if "task_id" in options:
            _, split, level, index = str(options["task_id"]).split("/")
            difficulty, position = int(level), int(index)
        else:
            split = str(options.get("split", self.split))
            difficulty = int(options.get("difficulty", self.difficulty))
            if "index" in options:
                position = int(options["index"])
            else:
                cells = self.world.capacity(cast(Split, split), difficulty) or 1000
                position = int(self.np_random.integers(cells))
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; splits are {SPLITS}")
        return self.world.task(split, difficulty, position)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.task = self._choose(options or {})
        if self.episode is not None:
            self.episode.close()
        self.episode = self.world.episode(self.config)
        obs = self.episode.reset(self.task)
        self._last = ascii_text(obs.content)
        info: dict[str, Any] = {"task_id": self.task.task_id, "tools": self.world.tools("openai")}
        info["task"] = self.task.public.model_dump()
        return self._last, info

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        if self.episode is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        obs = self.episode.step(action)
        self._last = ascii_text(obs.content)
        info: dict[str, Any] = {"kind": obs.kind, "steps": self.episode.steps}
        if obs.error is not None:
            info["error"] = obs.error.model_dump(exclude_none=True)
        if not obs.done:
            return self._last, float(obs.reward or 0.0), False, False, info
        verdict = self.episode.evaluate()
        info |= {"status": verdict.status, "reward": verdict.reward}
        info["scored"] = verdict.reward is not None
        info["rubric"] = [i.model_dump() for i in verdict.items]
        terminated = verdict.status == "completed"
        return self._last, float(verdict.reward or 0.0), terminated, not terminated, info

    def render(self) -> str | None:
        return self._last if self.render_mode == "ansi" else None

    def close(self) -> None:
        if self.episode is not None:
            self.episode.close()
            self.episode = None


def env_name(env_id: str) -> str:
    return f"{NAMESPACE}/{env_id}-v0"


def register_envs() -> list[str]:
    """Register every envfactory world with Gymnasium; returns the Gymnasium ids."""
    ids = []
    for env_id in list_envs():
        name = env_name(env_id)
        if name not in gym.registry:
            gym.register(id=name, entry_point=f"{__name__}:TextWorld", kwargs={"env_id": env_id})
        ids.append(name)
    return ids


register_envs()
