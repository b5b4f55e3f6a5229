"""An episode of ``tau2-retail``: envfactory's database episode, judged by tau2's reward.

The reward is tau2's: the database check times the communicate check (and the action check on
the tasks where those two pass an agent that does nothing), times ``ended`` (tau2 scores an
episode cut off by the turn limit 0). envfactory's own rubric items follow, with weight 0:
shown alongside, not counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from envfactory.contract.actions import CallRecord, Message, Observation, ToolCall
from envfactory.contract.episode import error_observation
from envfactory.contract.results import ToolError, ToolFailure
from envfactory.contract.tasks import Task
from envfactory.contract.verdict import RubricItem, Verdict, combine
from envfactory.db.episode import DatabaseEpisode, DatabaseSetting
from envfactory.domain.expr import ExprError
from envfactory.domain.spec import ParamSpec
from envfactory.episode.noise import fault
from envfactory.peers.tau2.handlers import accepts, result_text, run
from envfactory.peers.tau2.reward import action_check, communicate_check
from envfactory.peers.tau2.tasks import Imported
from envfactory.verify.matching import match_state


class Tau2Setting(DatabaseSetting, Protocol):
    """What a tau2 episode reads from its world (a ``Tau2RetailEnvironment``)."""

    fast: dict[str, Mapping[str, ParamSpec]]

    def imported(self, task: Task) -> Imported: ...


class Tau2Episode(DatabaseEpisode):
    """Keeps every message the agent sends, and the user's replies, for the communicate check
    (what the user said, the agent may repeat without naming a candidate)."""

    env: Tau2Setting

    def reset(self, task: Task) -> Observation:
        self.said: list[str] = []
        self.heard: list[str] = []
        return super().reset(task)

    def _forked(self) -> None:
        self.said, self.heard = list(self.said), list(self.heard)

    def _message(self, msg: Message) -> Observation:
        self.said.append(msg.content)
        obs = super()._message(msg)
        if obs.kind == "user":
            self.heard.append(obs.content)
        return obs

    def _call(self, call: ToolCall) -> Observation:
        """A call of one of tau2's tools with arguments the engine would pass unchanged runs
        straight through :func:`~.handlers.run`; anything else through the engine. Both give
        the same observation, call record and state (the tests compare them)."""
        assert self.task is not None
        params = self.env.fast.get(call.tool)
        if params is None or call.tool not in self.task.public.tools:
            return super()._call(call)
        args = accepts(params, call.arguments)
        if args is None:
            return super()._call(call)
        injected = fault(self.config.noise, self.task.task_id, self.tool_calls, call.tool)
        self.tool_calls += 1
        if injected is not None:
            return error_observation(injected)
        try:
            data, text = run(self.store, call.tool, args)
        except ToolFailure as f:
            err = ToolError(
                code=f.code, message=f.message, tool=call.tool, field=f.field, rule=f.rule
            )
        except (ExprError, KeyError, TypeError, ValueError):
            msg = f"{call.tool} could not process these arguments."
            err = ToolError(code="tool_failed", message=msg, tool=call.tool)
        except Exception as exc:  # a bug in a tool: the episode is not the agent's to lose
            self.done, self.status = True, "env_error"
            err = ToolError(code="tool_failed", message=f"internal error: {type(exc).__name__}")
            return error_observation(err, done=True)
        else:
            wrote = call.tool in self.env.world.write_tools
            self.log.append(CallRecord(call.tool, args, True, None, wrote))
            return Observation(kind="tool_result", content=result_text(data, text), data=data)
        self.log.append(CallRecord(call.tool, args, False, err.code, False))
        return error_observation(err)

    def evaluate(self) -> Verdict:
        ours = super().evaluate()
        if ours.reward is None or self.task is None:
            return ours
        meta = self.env.imported(self.task)
        same = ours.state_hash == meta.gold_hash
        if same:
            why = "the final state equals the gold replay's"
        else:
            _, missing, extra = match_state(self.task.hidden.target, self.store.changes())
            why = "the final state differs from the gold replay's: " + ", ".join(
                (missing + extra)[:3]
            )
        items = [
            RubricItem(name="tau2_db", kind="score", weight=1.0, score=float(same), reason=why)
        ]
        key = self.task.hidden.answer_key
        heard = "\n".join([key.request, *self.heard])
        score, why = communicate_check(
            self.said, meta.communicate, key.model_copy(update={"request": heard})
        )
        items.append(
            RubricItem(name="tau2_communicate", kind="gate", weight=0.0, score=score, reason=why)
        )
        if meta.passes_idle:
            score, why = action_check(self.log, meta.actions)
            items.append(
                RubricItem(name="tau2_action", kind="gate", weight=0.0, score=score, reason=why)
            )
        ended = ours.status == "completed"
        items.append(
            RubricItem(
                name="ended",
                kind="gate",
                weight=0.0,
                score=float(ended),
                reason="the conversation ended" if ended else f"cut off: {ours.status}",
            )
        )
        items += [
            RubricItem(
                name=i.name,
                kind="score",
                weight=0.0,
                score=i.score,
                reason=f"(not counted) {i.reason}",
            )
            for i in ours.items
        ]
        return Verdict(
            reward=combine(items), status=ours.status, items=items, state_hash=ours.state_hash
        )
