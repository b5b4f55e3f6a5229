"""The episode contract every kind of world implements (database, terminal, multi-agent).

reset(task) -> observation; step(action) -> observation (``done`` when it ends);
evaluate() -> verdict. Rollouts, servers and adapters depend on this class only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, Self

from envfactory.contract.actions import (
    EpisodeStatus,
    Message,
    Observation,
    ToolCall,
    parse_action,
)
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.errors import EpisodeError, ForkUnsupported
from envfactory.contract.results import ToolError
from envfactory.contract.tasks import Task
from envfactory.contract.verdict import Verdict


class Episode(ABC):
    """One live episode. Not thread-safe: one actor loop drives it."""

    task: Task | None = None
    done: bool = False
    status: EpisodeStatus = "truncated"
    steps: int = 0
    #: Why this kind cannot :meth:`fork` (kinds that can override ``fork`` instead).
    fork_refusal: str = "this kind of world does not implement fork"

    @abstractmethod
    def reset(self, task: Task) -> Observation:
        """Start ``task`` from its initial state; the first observation is the request."""

    @abstractmethod
    def step(self, action: Any) -> Observation:
        """Apply one action (an object, a dict or JSON text); malformed ones come back as
        ``tool_error`` observations, never as exceptions."""

    @abstractmethod
    def evaluate(self) -> Verdict:
        """The verdict on the episode so far."""

    @abstractmethod
    def state_hash(self) -> str:
        """The canonical hash of the current state (equal states, equal hashes)."""

    @abstractmethod
    def close(self) -> None:
        """Release what the episode holds (connections, sandboxes)."""

    def fork(self) -> Self:
        """An independent live copy of this episode as it stands (state, task, conversation,
        step count): the same actions on both reach the same state and verdict, and neither
        sees the other's writes. Close it like any episode. Kinds whose state cannot be copied
        raise :class:`ForkUnsupported` saying why."""
        raise ForkUnsupported(f"a {type(self).__name__} cannot be forked: {self.fork_refusal}")


ENDED = "The conversation has ended."


def error_observation(err: ToolError, done: bool = False) -> Observation:
    """The observation of a refused or failed action."""
    return Observation(
        kind="tool_error", content=f"Error ({err.code}): {err.message}", error=err, done=done
    )


def unknown_tool(name: str, tools: Iterable[str]) -> ToolError:
    return ToolError(
        code="unknown_tool",
        message=f"there is no tool {name[:60]!r}; tools are: {', '.join(tools)}",
    )


class ToolEpisode(Episode):
    """A single-agent episode whose actions are tool calls and messages: the step loop (the
    episode-over refusal, malformed actions, the turn limit) over two hooks."""

    config: EpisodeConfig

    def step(self, action: Any) -> Observation:
        """Apply one action. Malformed actions become error observations, never exceptions."""
        if self.task is None:
            raise EpisodeError("call reset(task) before step()")
        if self.done:
            err = ToolError(code="episode_over", message="the episode is over; reset to play again")
            return error_observation(err, done=True)
        parsed = parse_action(action)
        self.steps += 1
        if isinstance(parsed, ToolError):
            obs = error_observation(parsed)
        elif isinstance(parsed, Message):
            obs = self._message(parsed)
        else:
            obs = self._call(parsed)
        if not self.done and self.steps >= self.config.max_steps:
            self.done, self.status = True, "truncated"
            obs = obs.model_copy(update={"done": True})
        return obs

    @abstractmethod
    def _message(self, msg: Message) -> Observation:
        """Answer a message to the user (``final`` ends the episode)."""

    @abstractmethod
    def _call(self, call: ToolCall) -> Observation:
        """Run a well-formed tool call."""

    def _end(self) -> Observation:
        self.done, self.status = True, "completed"
        return Observation(kind="end", content=ENDED, done=True)
