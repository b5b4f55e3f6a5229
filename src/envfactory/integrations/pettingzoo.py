"""Worlds with seats behind PettingZoo's agent-environment-cycle (AEC) API (as
:mod:`envfactory.integrations.gymnasium` puts worlds of one agent behind Gymnasium's).

``aec_env("connect_four")`` is a :class:`pettingzoo.AECEnv`: its agents are the world's seats,
``agent_selection`` is the seat whose turn it is (one at a time, also for simultaneous moves:
each seat of an open round in turn, none seeing the others' choice), and rewards arrive when
the episode ends (the verdict's reward of each seat).

An observation is the seat's view as UTF-8 bytes in a ``uint8`` array, zero-padded (PettingZoo
checks observations against array spaces); :func:`decode` turns it back into the text a model
reads, and :meth:`EnvfactoryAEC.text` gives it directly. An action is the JSON text (or a dict)
of an engine action: ``{"type": "tool_call", "tool": ..., "arguments": {...}}`` or
``{"type": "message", "content": ...}``; it always acts for the selected seat, and a malformed
one is an error the seat sees, never an exception.

``reset(seed=..., options=...)`` chooses the task: ``options`` may name ``task_id``, or
``split`` / ``difficulty`` / ``index``; otherwise the index is drawn from the seed.
"""

from __future__ import annotations

import json
import string
from typing import Any, cast

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import Environment
from envfactory.contract.tasks import SPLITS, Split, Task
from envfactory.episode.seats import SeatedEpisode, SeatedWorld, seated
from envfactory.registry import make

MAX_OBSERVATION = 1 << 15  # bytes
MAX_ACTION = 1 << 14  # characters
CHARSET = frozenset(string.printable)
CUT = b"\n[...]"


def encode(text: str, size: int = MAX_OBSERVATION) -> np.ndarray:
    """``text`` as UTF-8 bytes in a zero-padded array (cut, with a marker, when too long)."""
    raw = text.encode()
    if len(raw) > size:
        raw = raw[: size - len(CUT)].decode(errors="ignore").encode() + CUT
    out = np.zeros(size, dtype=np.uint8)
    out[: len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    return out


def decode(observation: np.ndarray) -> str:
    """The text of an observation array."""
    return bytes(observation).rstrip(b"\0").decode(errors="replace")


class EnvfactoryAEC(AECEnv[str, np.ndarray, Any]):  # type: ignore[misc]
    """One world with seats as a PettingZoo AEC environment (see the module docstring)."""

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "is_parallelizable": False}  # noqa: RUF012

    def __init__(
        self,
        env_id: str = "connect_four",
        split: Split = "train",
        difficulty: int | None = None,
        max_steps: int = 60,
        render_mode: str | None = None,
        env: Environment | None = None,
    ) -> None:
        super().__init__()
        world = env or make(env_id)
        with_seats = seated(world)
        if with_seats is None:
            raise TypeError(f"{world.id} is a {world.kind} world of one agent, not one with seats")
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; splits are {SPLITS}")
        self.world = world
        self.seated: SeatedWorld = with_seats
        self.split = split
        self.difficulty = difficulty or world.difficulties[0]
        self.config = EpisodeConfig(max_steps=max_steps)
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "name": f"envfactory_{world.id}_v0"}
        self.possible_agents = list(with_seats.seats)
        self.observation_spaces = {
            a: spaces.Box(0, 255, (MAX_OBSERVATION,), dtype=np.uint8) for a in with_seats.seats
        }
        self.action_spaces = {
            a: spaces.Text(MAX_ACTION, min_length=1, charset=CHARSET) for a in with_seats.seats
        }
        self.episode: SeatedEpisode | None = None
        self.task: Task | None = None
        self.agents: list[str] = []
        self.rewards: dict[str, float] = {}
        self._cumulative_rewards: dict[str, float] = {}
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self._rng = np.random.default_rng()

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    def _choose(self, options: dict[str, Any]) -> Task:
        if "task_id" in options:
            _, split, level, position = str(options["task_id"]).rsplit("/", 3)
            return self.world.task(cast(Split, split), int(level), int(position))
        split = cast(Split, str(options.get("split", self.split)))
        difficulty = int(options.get("difficulty", self.difficulty))
        if "index" in options:
            index = int(options["index"])
        else:
            cells = self.world.capacity(split, difficulty) or 1000
            index = int(self._rng.integers(cells))
        return self.world.task(split, difficulty, index)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        known = {"task_id", "split", "difficulty", "index"}
        self.task = self._choose({k: v for k, v in (options or {}).items() if k in known})
        if self.episode is not None:
            self.episode.close()
        self.episode = self.seated.episode(self.config)
        self.episode.reset(self.task)
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {"task_id": self.task.task_id, "seat": a} for a in self.agents}
        self.agent_selection = self.episode.current_actors()[0]

    def text(self, agent: str) -> str:
        """What ``agent`` reads now (its observation, as text)."""
        if self.episode is None:
            raise RuntimeError("call reset() first")
        return self.episode.observe(agent).content

    def observe(self, agent: str) -> np.ndarray:
        return encode(self.text(agent))

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        assert self.episode is not None
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        obs = self.episode.step(_action(action), seat=agent)
        info: dict[str, Any] = {**self.infos[agent], "kind": obs.kind}
        info.pop("error", None)
        if obs.error is not None:
            info["error"] = obs.error.model_dump(exclude_none=True)
        self.infos[agent] = info
        if self.episode.done:
            self._finish()
        else:
            self.agent_selection = self.episode.current_actors()[0]
        self._accumulate_rewards()

    def _finish(self) -> None:
        assert self.episode is not None
        verdict = self.episode.evaluate()
        terminated = verdict.status == "completed"
        for a in self.agents:
            reward = verdict.rewards.get(a)
            self.rewards[a] = float(reward or 0.0)
            self.terminations[a] = terminated
            self.truncations[a] = not terminated
            scored = {"status": verdict.status, "reward": reward, "scored": reward is not None}
            self.infos[a] = {**self.infos[a], **scored}
        seats = self.agents
        self.agent_selection = seats[(seats.index(self.agent_selection) + 1) % len(seats)]

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self.episode is None or not self.agents:
            return None
        return self.text(self.agent_selection)

    def close(self) -> None:
        if self.episode is not None:
            self.episode.close()
            self.episode = None


def _action(action: Any) -> Any:
    """A text action as the dict it spells (text that is not JSON stays text: malformed)."""
    if isinstance(action, (str, bytes)):
        try:
            parsed = json.loads(action)
        except (ValueError, RecursionError):
            return action
        return parsed
    return action


def aec_env(env_id: str = "connect_four", **kwargs: Any) -> EnvfactoryAEC:
    """The multi-agent world ``env_id`` as a PettingZoo AEC environment."""
    return EnvfactoryAEC(env_id, **kwargs)
