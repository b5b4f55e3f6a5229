"""The episode of a database world: its own SQLite state, tools, and the verifier."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, Protocol, Self

from envfactory.contract.actions import CallRecord, EpisodeStatus, Message, Observation, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.episode import ToolEpisode, error_observation, unknown_tool
from envfactory.contract.errors import EpisodeError
from envfactory.contract.results import ToolError
from envfactory.contract.tasks import Task
from envfactory.contract.verdict import Verdict
from envfactory.db.criteria import Evidence
from envfactory.db.verifier import RuleChecker, verdict
from envfactory.episode.noise import fault
from envfactory.users.base import Situation, UserSimulator
from envfactory.users.factory import make_user
from envfactory.verify.rubric import Rubric
from envfactory.world.state import RowChange, hex_hash
from envfactory.world.world import World


class DatabaseSetting(Protocol):
    """What a database episode reads from its environment (a :class:`DatabaseEnvironment`)."""

    id: str
    world: World
    rules: RuleChecker
    rubric: Rubric[Evidence]


class DatabaseEpisode(ToolEpisode):
    """One live episode over its own copy of the world's state."""

    def __init__(self, env: DatabaseSetting, config: EpisodeConfig | None = None) -> None:
        self.env = env
        self.config = config or EpisodeConfig()
        self.store = env.world.new_store()
        self.task: Task | None = None
        self.log: list[CallRecord] = []
        self.steps = 0
        self.done = False
        self.status: EpisodeStatus = "truncated"
        self.reply: str | None = None
        self.to_user: list[str] = []  # every message the agent sent, the final reply last
        self.from_user: list[str] = []  # what the user said back
        self.user: UserSimulator | None = None
        self.disclosed: set[str] = set()
        self.tool_calls = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def reset(self, task: Task) -> Observation:
        """Start ``task`` from the world's initial state."""
        if task.public.env_id != self.env.id:
            raise EpisodeError(f"task {task.task_id} belongs to {task.public.env_id}")
        self.store.reset()
        if task.hidden.setup:
            for row in task.hidden.setup:
                self.store.put(row.table, row.id, row.after)
            self.store.mark_start()
        self.task = task
        self.log = []
        self.steps = 0
        self.done = False
        self.status = "truncated"
        self.reply = None
        self.to_user, self.from_user = [], []
        self._close_user()
        self.user = make_user(self.config.user)
        self.disclosed = set()
        self.tool_calls = 0
        return Observation(
            kind="task", content=task.public.instruction, data=task.public.model_dump()
        )

    def fork(self) -> Self:
        """An independent live copy: the store forked copy-on-write (the base state shared,
        the touched rows copied), the conversation, call log, user simulator and counters
        copied. Subclasses with more per-episode containers copy them in :meth:`_forked`."""
        if self.task is None:
            raise EpisodeError("call reset(task) before fork()")
        child = copy.copy(self)
        child.store = self.store.fork()
        child.log = list(self.log)
        child.to_user, child.from_user = list(self.to_user), list(self.from_user)
        child.disclosed = set(self.disclosed)
        child.user = None if self.user is None else self.user.fork()
        child._forked()
        return child

    def _forked(self) -> None:
        """Called on a fresh fork (its attributes still shared with the parent's beyond the
        ones :meth:`fork` copies): copy what else the kind keeps per episode."""

    def close(self) -> None:
        self._close_user()
        self.store.close()

    def _close_user(self) -> None:
        if self.user is not None:
            self.user.close()
            self.user = None

    # -- acting ------------------------------------------------------------------------------

    def _message(self, msg: Message) -> Observation:
        self.to_user.append(msg.content)
        if msg.final:
            self.reply = msg.content
            return self._end()
        assert self.task is not None and self.user is not None
        # The user sees its request and its own facts, never the target or the answers.
        situation = Situation(
            instruction=self.task.public.instruction, profile=self.task.hidden.profile
        )
        answer = self.user.reply(msg.content, situation)
        self.disclosed |= set(answer.facts)
        self.from_user.append(answer.text)
        if answer.stop:
            self.reply = msg.content
            self.done, self.status = True, "completed"
        return Observation(
            kind="user",
            content=answer.text,
            data={"facts": answer.facts, "stop": answer.stop},
            done=answer.stop,
        )

    def _call(self, call: ToolCall) -> Observation:
        assert self.task is not None
        shown = self.task.public.tools  # the task's tools (the starter level shows only some)
        tool = self.env.world.tools.get(call.tool) if call.tool in shown else None
        if tool is None:
            return error_observation(unknown_tool(call.tool, shown))
        injected = fault(self.config.noise, self.task.task_id, self.tool_calls, call.tool)
        self.tool_calls += 1
        if injected is not None:
            return error_observation(injected)
        try:
            result = tool(self.store, call.arguments)
        except Exception as exc:  # a bug in a tool: the episode is not the agent's to lose
            self.done, self.status = True, "env_error"
            err = ToolError(code="tool_failed", message=f"internal error: {type(exc).__name__}")
            return error_observation(err, done=True)
        self.log.append(
            CallRecord(
                tool=call.tool,
                arguments=result.arguments if result.arguments is not None else {},
                ok=result.ok,
                error=result.error.code if result.error else None,
                wrote=result.wrote,
            )
        )
        if result.error is not None:
            return error_observation(result.error)
        return Observation(
            kind="tool_result",
            content=json.dumps(result.data, default=str, separators=(",", ":")),
            data=result.data,
        )

    # -- judging -----------------------------------------------------------------------------

    def changes(self) -> list[RowChange]:
        return self.store.changes()

    def _row_as_found(self, key: Any) -> Mapping[str, Any] | None:
        """The row an id names as the episode found it (a rule's match reads the book a
        return names as it was lent, not as the return left it)."""
        for change in self.store.changes():
            if change.key == key:
                return change.before
        return self.store.row_by_id(key)

    def state_hash(self) -> str:
        return hex_hash(self.store.state_hash())

    def evaluate(self) -> Verdict:
        """The verdict on the episode so far (an unfinished episode counts as truncated)."""
        if self.task is None:
            raise EpisodeError("call reset(task) before evaluate()")
        return verdict(
            self.task.hidden,
            self.store.changes(),
            self.log,
            self.reply,
            self.env.rules,
            self.env.world.write_tools,
            self.status,
            self.state_hash(),
            self.disclosed,
            self.env.rubric,
            said=self.to_user,
            heard=self.from_user,
            row=self._row_as_found,
        )
