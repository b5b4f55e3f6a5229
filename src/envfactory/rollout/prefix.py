"""Groups from one shared prefix: the first actions of a task played once, then forked.

With ``EngineConfig.prefix_steps = N`` the engine plays the first N actions of each task with
the scripted oracle on one episode (the group's *root*), forks the root for every sample of
the group (:meth:`~envfactory.contract.episode.Episode.fork`, microseconds for a database
world), and lets the policy continue each fork from the same mid-episode state: GRPO from
mid-episode states, or rollouts from a shared prefix. The prefix's actions and observations
open every sample's transcript as context (they are not the policy's calls, so not trained on),
and a stateful policy is told of them through ``PolicySession.replay``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import Environment
from envfactory.contract.episode import Episode
from envfactory.contract.tasks import Task
from envfactory.harness.toolcalls import tool_response
from envfactory.policies.scripted import scripted
from envfactory.policies.wrap import assistant_message
from envfactory.trajectory.record import ChatMessage


@dataclass
class Prefix:
    """A group's root: the live episode after the prefix, and what the prefix said and did."""

    episode: Episode
    actions: list[ToolCall | Message]
    observations: list[Observation]  # the first observation, then one per action
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def steps(self) -> int:
        return len(self.actions)

    def messages(self, tool_format: str) -> list[ChatMessage]:
        """The prefix as chat messages after the opening, in the harness's tool format."""
        out: list[ChatMessage] = []
        for i, (action, obs) in enumerate(zip(self.actions, self.observations[1:], strict=True)):
            call_id = f"prefix_{i}"
            out.append(assistant_message(action, call_id, tool_format))
            if obs.kind not in ("tool_result", "tool_error"):
                out.append({"role": "user", "content": obs.content})
            elif tool_format == "native":
                out.append({"role": "tool", "tool_call_id": call_id, "content": obs.content})
            else:
                out.append({"role": "user", "content": tool_response(obs.content)})
        return out

    def close(self) -> None:
        self.episode.close()


def play_prefix(env: Environment, config: EpisodeConfig, task: Task, steps: int) -> Prefix:
    """Open an episode of ``task`` and take the oracle's first ``steps`` actions (fewer when the
    episode ends sooner). Checks that the episode can fork: an unforkable kind raises
    :class:`~envfactory.contract.errors.ForkUnsupported` here, once per group."""
    episode = env.episode(config)
    try:
        first = episode.reset(task)
        oracle = scripted("oracle")
        oracle.start(task, [])
        actions: list[ToolCall | Message] = []
        observations = [first]
        while len(actions) < steps and not observations[-1].done:
            action: Any = oracle.act(observations[-1])
            actions.append(action)
            observations.append(episode.step(action))
        episode.fork().close()
    except BaseException:
        episode.close()
        raise
    return Prefix(episode, actions, observations)
