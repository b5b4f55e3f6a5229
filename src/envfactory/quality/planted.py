"""Planted defects that a domain's data cannot express: worlds whose code is weakened.

Each is a :class:`DatabaseEnvironment` of a built-in domain with one behaviour changed, the way
a careless kind of world (or an old version of the engine) would get it wrong. The self-test
(:mod:`envfactory.quality.selftest`) audits them beside the data mutants of
:mod:`envfactory.quality.mutants`.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any, Literal

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.tasks import Split, Task
from envfactory.db.environment import DatabaseEnvironment
from envfactory.db.episode import DatabaseEpisode
from envfactory.verify.answers import gives
from envfactory.verify.rubric import Gate, Rubric

STATUS_TOOL = "task_status"


CONFIRM = "Yes, that's it."
DENY = "No, that's not it."


class _OracleUserEpisode(DatabaseEpisode):
    """The user says whether a non-final message states the answer it asked for, and never
    tires of being asked (a message that asks for its facts still gets them)."""

    def _message(self, msg: Message) -> Observation:
        assert self.task is not None
        answers = self.task.hidden.answers
        if msg.final or not answers:
            return super()._message(msg)
        if all(gives(msg.content, a) for a in answers):
            self.to_user.append(msg.content)
            self.from_user.append(CONFIRM)
            return Observation(kind="user", content=CONFIRM)
        seen = super()._message(msg)
        if isinstance(seen.data, dict) and seen.data.get("facts"):
            return seen
        self.done, self.status, self.reply = False, "truncated", None  # it does not stop
        self.from_user[-1] = DENY
        return Observation(kind="user", content=DENY)


class OracleUserWorld(DatabaseEnvironment):
    """``oracle_user``: a user simulator that confirms the answer when it hears it."""

    def episode(self, config: EpisodeConfig | None = None) -> DatabaseEpisode:
        return _OracleUserEpisode(self, config)


class _VoidableEpisode(DatabaseEpisode):
    """A non-finite number ends the episode ``env_error``; a NUL byte raises."""

    def _call(self, call: ToolCall) -> Observation:
        values = call.arguments.values() if isinstance(call.arguments, dict) else []
        if any(isinstance(v, float) and not math.isfinite(v) for v in values):
            self.done, self.status = True, "env_error"
            return Observation(kind="tool_error", content="internal error", done=True)
        if any(isinstance(v, str) and "\x00" in v for v in values):
            raise ValueError("embedded null byte")
        return super()._call(call)


class VoidableWorld(DatabaseEnvironment):
    """``voidable``: tools that crash on odd input, so the agent can void its episodes."""

    def episode(self, config: EpisodeConfig | None = None) -> DatabaseEpisode:
        return _VoidableEpisode(self, config)


class _StatusEpisode(DatabaseEpisode):
    """Answers :data:`STATUS_TOOL` with what the verdict compares against: the answers and the
    rows the task must change."""

    def _call(self, call: ToolCall) -> Observation:
        if call.tool != STATUS_TOOL or self.task is None:
            return super()._call(call)
        hidden = self.task.hidden
        shown = {"answers": hidden.answers, "rows": [c.id for c in hidden.target]}
        return Observation(kind="tool_result", content=json.dumps(shown, default=str), data=shown)


class CheckReachableWorld(DatabaseEnvironment):
    """``check_reachable``: a debugging tool left in, showing the task's expected answers
    and target rows (what the verdict reads) to the agent."""

    def tools(self, fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
        about = "Show the status of the current request."
        schema = {"type": "object", "properties": {}, "required": []}
        extra: dict[str, Any] = (
            {"name": STATUS_TOOL, "description": about, "inputSchema": schema}
            if fmt == "mcp"
            else {
                "type": "function",
                "function": {"name": STATUS_TOOL, "description": about, "parameters": schema},
            }
        )
        return [*super().tools(fmt), extra]

    def episode(self, config: EpisodeConfig | None = None) -> DatabaseEpisode:
        return _StatusEpisode(self, config)


class CollateralBlindWorld(DatabaseEnvironment):
    """``collateral_ignored``: a verifier without the ``no_collateral`` gate."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        root = self.rubric.root
        assert isinstance(root, Gate)
        gates = [g for g in root.gates if "no_collateral" not in _names(g)]
        self.rubric = Rubric(replace(root, gates=gates))


def _names(node: Any) -> list[str]:
    return [c.name for c in node.criteria()]


class ReplayLeakWorld(DatabaseEnvironment):
    """``replay_leak``: held-out tasks that are train tasks under another split's name."""

    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        task = super().task("train", difficulty, index)
        if split == "train":
            return task
        public = task.public.model_copy(update={"split": split})
        return Task(public=public, hidden=task.hidden, initial_hash=task.initial_hash)
