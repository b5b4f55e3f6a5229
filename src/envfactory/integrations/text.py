"""One envfactory episode driven by a model's text, for trainers whose loop owns generation.

veRL's agent loop and SkyRL-Gym's environments hand the environment the text the model wrote;
:class:`TextEpisode` turns it into actions (Hermes / Qwen ``<tool_call>`` blocks, or a message
to the user), steps the episode, and answers with chat messages (``tool`` results, the user's
reply). The verdict is the reward; faults are never scored (:class:`EpisodeFault`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from envfactory.contract.actions import Message, Observation
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import Environment
from envfactory.contract.errors import EnvFactoryError
from envfactory.contract.tasks import Task
from envfactory.contract.verdict import Verdict
from envfactory.harness.config import HarnessConfig
from envfactory.harness.prompt import exposed_tools, opening
from envfactory.harness.toolcalls import parse_tool_calls
from envfactory.registry import make
from envfactory.rollout.types import TaskRef
from envfactory.trajectory.record import ChatMessage


class EpisodeFault(EnvFactoryError):
    """The environment failed (``env_error``): the episode has no reward, not a reward of 0."""


def task_ref(task: TaskRef | str) -> TaskRef:
    """A task reference from a reference or an ``env/split/difficulty/index`` address."""
    return task if isinstance(task, TaskRef) else TaskRef.parse(task)


def load_task(task: TaskRef | str) -> tuple[Environment, Task]:
    """The environment and the task at an address."""
    ref = task_ref(task)
    env = make(ref.env_id)
    return env, env.task(ref.split, ref.difficulty, ref.index)


def task_messages(task: TaskRef | str, harness: HarnessConfig) -> tuple[list[ChatMessage], Any]:
    """The opening messages (system prompt, request) and the exposed tool schemas of a task."""
    env, t = load_task(task)
    tools = exposed_tools(t.public, env.tools("openai"), harness)
    return opening(t.public, tools, harness), tools


def task_openings(
    tasks: Iterable[TaskRef | str], harness: HarnessConfig
) -> Iterator[tuple[TaskRef, list[ChatMessage]]]:
    """Each task's reference and opening messages, for a trainer's dataset rows."""
    for task in tasks:
        ref = task_ref(task)
        yield ref, task_messages(ref, harness)[0]


def observation_message(obs: Observation) -> ChatMessage | None:
    """What the model reads after a step: a tool result, the user's reply, or nothing."""
    if obs.kind in ("tool_result", "tool_error"):
        return {"role": "tool", "content": obs.content}
    if obs.kind == "user":
        return {"role": "user", "content": obs.content}
    return None


class TextEpisode:
    """A live episode of a task, stepped with the model's text. ``harness.tool_format`` should
    be ``text`` (the system prompt then lists the tools) unless the trainer's chat template
    renders the tools itself (``tools`` holds their schemas)."""

    def __init__(
        self,
        task: TaskRef | str,
        harness: HarnessConfig | None = None,
        episode_config: EpisodeConfig | None = None,
    ) -> None:
        self.harness = harness or HarnessConfig(tool_format="text")
        self.ref = task_ref(task)
        env, self.task = load_task(self.ref)
        self.tools = exposed_tools(self.task.public, env.tools("openai"), self.harness)
        self.episode = env.episode(self.harness.episode_config(episode_config))
        first = self.episode.reset(self.task)
        self.messages: list[ChatMessage] = opening(
            self.task.public, self.tools, self.harness, first.content
        )
        self.turns = 0

    @property
    def done(self) -> bool:
        return self.episode.done or self.turns >= self.harness.max_turns

    def step(self, text: str) -> list[ChatMessage]:
        """Take the actions in one reply; returns the messages that answer it."""
        if self.done:
            raise EnvFactoryError("the episode is over")
        self.turns += 1
        self.messages.append({"role": "assistant", "content": text})
        plain, calls = parse_tool_calls(text)
        actions: list[Any] = list(calls)
        if not actions:
            actions.append(Message(content=plain, final=self.harness.text_reply == "final"))
        replies: list[ChatMessage] = []
        for action in actions:
            obs = self.episode.step(action)
            msg = observation_message(obs)
            if msg is not None:
                replies.append(msg)
            if obs.done:
                break
        self.messages += replies
        return replies

    def verdict(self) -> Verdict:
        """The verdict; raises :class:`EpisodeFault` when the environment failed."""
        verdict = self.episode.evaluate()
        if verdict.reward is None:
            raise EpisodeFault(f"{self.ref.task_id}: {verdict.status}, no reward")
        return verdict

    @property
    def reward(self) -> float:
        reward = self.verdict().reward
        assert reward is not None
        return reward

    def close(self) -> None:
        self.episode.close()
