"""The multi-agent episode: several seats act in one episode, each with its own view.

It keeps the :class:`~envfactory.contract.episode.Episode` contract and adds to it:

- ``agents``: the seats; ``current_actors()``: who must act now (one seat in turn-based
  worlds, several while a simultaneous move is open, none once the episode is done);
- ``step(action)`` routes by ``action.actor`` and returns *that seat's* observation;
- ``observe(seat)``: the seat's current view: its briefing (first time), what happened since
  it last acted that it may see, and (on its turn) the state and its options;
- ``evaluate()`` returns a :class:`MultiVerdict` with every seat's reward.

What happens is a log of events, each addressed to some seats (or all): a seat never sees an
event not addressed to it, so private information stays private by construction. Messages
between agents are events too (``send_message``), so who said what to whom is on record.
Every action is kept, and :meth:`MultiAgentEpisode.audit` replays them on a fresh episode and
checks the outcome independently (a verifier that can disagree).
"""

from __future__ import annotations

import hashlib
import json
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol

from envfactory.contract.actions import EpisodeStatus, Message, Observation, ToolCall, parse_action
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.errors import EpisodeError
from envfactory.contract.results import ToolError, ToolFailure
from envfactory.contract.tasks import Task
from envfactory.contract.values import text_problem
from envfactory.contract.verdict import RubricItem
from envfactory.episode.seats import MultiVerdict, SeatedEpisode
from envfactory.multiagent.tools import SeatTool

Action = ToolCall | Message
MAX_ERRORS = 8  # invalid actions a seat may make before it forfeits


@dataclass(frozen=True, slots=True)
class Event:
    """Something that happened. ``to`` None means every seat sees it; ``by`` is the seat whose
    action caused it (None: the environment)."""

    text: str
    to: frozenset[str] | None = None
    by: str | None = None
    kind: str = "event"
    data: Any = None

    def seen_by(self, seat: str) -> bool:
        return self.to is None or seat in self.to

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "by": self.by, "text": self.text, "data": self.data}


class SeatWorld(Protocol):
    """What a multi-agent episode needs of its world (the environment, read-only)."""

    @property
    def id(self) -> str: ...

    @property
    def agents(self) -> tuple[str, ...]: ...

    def seat_tools(self, seat: str) -> list[SeatTool]: ...

    def episode(self, config: EpisodeConfig | None = None) -> MultiAgentEpisode: ...


class MultiAgentEpisode(SeatedEpisode):
    """The shared machinery of every multi-agent world; a world implements the hooks below."""

    agents: tuple[str, ...] = ()
    messaging: bool = False  # seats may send_message one another
    message_passes_turn: bool = False

    def __init__(self, env: SeatWorld, config: EpisodeConfig | None = None) -> None:
        self.env = env
        self.agents = env.agents
        self.config = config or EpisodeConfig()
        self.task: Task | None = None
        self._clear()

    def _clear(self) -> None:
        self.events: list[Event] = []
        self.cursor: dict[str, int] = {}
        self.played: list[dict[str, Any]] = []
        self.errors: dict[str, int] = dict.fromkeys(self.agents, 0)
        self.steps = 0
        self.done = False
        self.status: EpisodeStatus = "truncated"
        self.final: dict[str, float | None] | None = None
        self.fault: str | None = None

    # -- hooks of a world ----------------------------------------------------------------------

    @abstractmethod
    def setup(self, task: Task) -> None:
        """Build the world's state for ``task`` (everything it needs is in ``task.hidden``)."""

    @abstractmethod
    def actors(self) -> list[str]:
        """The seats that must act now (the episode is not done)."""

    @abstractmethod
    def apply(self, seat: str, action: Action) -> str:
        """Apply a legal-looking action of ``seat``; returns the result text for the seat.
        Raise :class:`ToolFailure` for an illegal one; call :meth:`emit` for what others see
        and :meth:`end` when the episode is over."""

    @abstractmethod
    def briefing(self, seat: str) -> str:
        """What ``seat`` is told before its first action, its private information included."""

    @abstractmethod
    def private(self, seat: str) -> dict[str, Any]:
        """What only ``seat`` knows right now."""

    @abstractmethod
    def view(self, seat: str) -> dict[str, Any]:
        """The state as ``seat`` may see it (public parts only)."""

    @abstractmethod
    def prompt(self, seat: str) -> str:
        """The state and the options of ``seat`` on its turn, as text."""

    @abstractmethod
    def rewards(self) -> dict[str, float]:
        """Every seat's reward in [0, 1] (also for an episode cut short)."""

    @abstractmethod
    def outcome(self) -> dict[str, Any]:
        """What happened, in terms every seat may know (JSON-able)."""

    @abstractmethod
    def confirm(self) -> list[str]:
        """Check the outcome independently of how play computed it; problems found."""

    def state(self) -> Any:
        """The full state (JSON-able) behind :meth:`state_hash`."""
        return {"outcome": self.outcome(), "turn": self.actors() if not self.done else []}

    def forfeit(self, seat: str) -> None:
        """``seat`` made too many invalid actions; by default the episode ends as it stands."""
        self.end()

    def seat_tools(self, seat: str) -> list[SeatTool]:
        return self.env.seat_tools(seat)

    # -- lifecycle -----------------------------------------------------------------------------

    def reset(self, task: Task) -> Observation:
        """Start ``task``; returns the observation of the first seat to act."""
        if task.public.env_id != self.env.id:
            raise EpisodeError(f"task {task.task_id} belongs to {task.public.env_id}")
        self.task = task
        self._clear()
        self.setup(task)
        return self.observe(self.current_actors()[0])

    def close(self) -> None:
        """Nothing to release by default."""

    def current_actors(self) -> list[str]:
        """The seats that must act now; empty once the episode is done."""
        return [] if self.done else self.actors()

    def end(self, status: EpisodeStatus = "completed") -> None:
        """Finish the episode: fix the rewards and tell every seat its own."""
        if self.done:
            return
        self.done, self.status = True, status
        self.final = dict(self.rewards())
        summary = self.outcome().get("summary", "The episode is over.")
        for seat in self.agents:
            reward = self.final[seat]
            self.emit(
                f"{summary} Your reward: {reward:.3f}.",
                to=[seat],
                kind="end",
                data={"reward": reward},
            )

    def emit(
        self,
        text: str,
        to: list[str] | None = None,
        by: str | None = None,
        kind: str = "event",
        data: Any = None,
    ) -> None:
        self.events.append(Event(text, None if to is None else frozenset(to), by, kind, data))

    # -- acting --------------------------------------------------------------------------------

    def step(self, action: Any, seat: str | None = None) -> Observation:
        """Apply one action of the seat it names (or of ``seat``, which overrides the action's
        ``actor``: a connection bound to a seat acts for that seat only); the observation is
        that seat's."""
        if self.task is None:
            raise EpisodeError("call reset(task) before step()")
        parsed = parse_action(action)
        if seat is None:
            seat = parsed.actor if not isinstance(parsed, ToolError) else self._claimed(action)
        elif not isinstance(parsed, ToolError):
            parsed = parsed.model_copy(update={"actor": seat})
        if self.done:
            err = ToolError(code="episode_over", message="the episode is over; reset to play again")
            return self._error(seat, err)
        self.steps += 1
        self.played.append({"seat": seat, "action": _dump(action, parsed)})
        mark = len(self.events)
        if isinstance(parsed, ToolError):
            obs = self._error(seat, parsed, count=True)
        elif seat not in self.agents:
            err = ToolError(
                code="malformed_action",
                message=f"actor {seat[:40]!r} is not a seat here; seats: {', '.join(self.agents)}",
            )
            obs = self._error(seat, err)
        elif seat not in self.actors():
            waiting = ", ".join(self.actors())
            err = ToolError(
                code="precondition_failed", message=f"it is not your turn (waiting for {waiting})"
            )
            obs = self._error(seat, err, count=True)
        else:
            obs = self._act(seat, parsed, mark)
        if not self.done and self.steps >= self.config.max_steps * len(self.agents):
            self.end("truncated")
        if seat in self.agents:
            # What the action led to (a reveal, a new hand, the end) stays news for the seat's
            # next observe(); the step's own observation says it only when the episode is over.
            self.cursor[seat] = mark
            news = [e.text for e in self.events[mark:] if e.seen_by(seat) and e.text]
            if news and self.done:
                obs = obs.model_copy(update={"content": "\n".join([obs.content, *news])})
        return obs.model_copy(update={"done": self.done})

    def _claimed(self, raw: Any) -> str:
        """The seat a malformed action was meant for: its ``actor`` field, or the only seat
        whose turn it is."""
        claimed = raw.get("actor") if isinstance(raw, dict) else None
        if isinstance(claimed, str) and len(claimed) <= 200 and text_problem(claimed) is None:
            return claimed
        actors = self.current_actors()
        return actors[0] if len(actors) == 1 else "agent"

    def _act(self, seat: str, action: Action, mark: int) -> Observation:
        try:
            if isinstance(action, ToolCall) and self.messaging and action.tool == "send_message":
                text = self._message(seat, action)
            else:
                text = self.apply(seat, action)
        except ToolFailure as exc:
            self.events = self.events[:mark]
            err = ToolError(code=exc.code, message=exc.message, field=exc.field, rule=exc.rule)
            return self._error(seat, err, count=True)
        except Exception as exc:  # a bug in a world: not the agents' to lose
            self.fault = f"{type(exc).__name__}: {exc}"
            self.done, self.status, self.final = True, "env_error", None
            err = ToolError(code="tool_failed", message=f"internal error: {type(exc).__name__}")
            return self._error(seat, err)
        self.errors[seat] = 0
        kind = "tool_result" if isinstance(action, ToolCall) else "user"
        return Observation(kind=kind, content=text, data={"seat": seat}, actor=seat)

    def _message(self, seat: str, call: ToolCall) -> str:
        tool = next(t for t in self.seat_tools(seat) if t.name == "send_message")
        args = tool.check(call.arguments)
        to, content = str(args["to"]), str(args["content"])
        if to == seat:
            raise ToolFailure("invalid_arguments", "send_message: you cannot message yourself")
        self.emit(
            f"Message from {seat}: {content}",
            to=[to],
            by=seat,
            kind="message",
            data={"from": seat, "to": to, "content": content},
        )
        self.on_message(seat, to)
        return f"Message delivered to {to}."

    def on_message(self, sender: str, recipient: str) -> None:
        """A message was delivered (a world may pass the turn)."""

    def _error(self, seat: str, err: ToolError, count: bool = False) -> Observation:
        if count and seat in self.errors and not self.done:
            self.errors[seat] += 1
            if self.errors[seat] >= MAX_ERRORS:
                self.emit(f"{seat} made {MAX_ERRORS} invalid actions in a row and forfeits.")
                self.forfeit(seat)
        return Observation(
            kind="tool_error",
            content=f"Error ({err.code}): {err.message}",
            error=err,
            done=self.done,
            actor=seat,
        )

    # -- seeing --------------------------------------------------------------------------------

    def observe(self, seat: str) -> Observation:
        """``seat``'s view now: its briefing before its first action, the events it may see
        since it last acted, and its options when it is its turn."""
        if self.task is None:
            raise EpisodeError("call reset(task) before observe()")
        if seat not in self.agents:
            raise EpisodeError(f"{seat!r} is not a seat; seats: {', '.join(self.agents)}")
        first = seat not in self.cursor
        news = [e for e in self.events[self.cursor.get(seat, 0) :] if e.seen_by(seat)]
        turn = seat in self.current_actors()
        parts = [self.briefing(seat)] if first else []
        parts += [e.text for e in news if e.text]
        if self.done and not news:
            parts += [e.text for e in self.events if e.kind == "end" and e.seen_by(seat)]
        if turn:
            parts.append(self.prompt(seat))
        data = {
            "seat": seat,
            "your_turn": turn,
            "briefing": first,
            "events": [e.as_dict() for e in news],
            "state": self.view(seat),
            "private": self.private(seat),
        }
        kind = "task" if first else ("end" if self.done else "user")
        return Observation(
            kind=kind, content="\n\n".join(parts), data=data, done=self.done, actor=seat
        )

    # -- judging -------------------------------------------------------------------------------

    def seat_rewards(self) -> dict[str, float | None]:
        """Every seat's reward (None for all when the world failed)."""
        if self.status == "env_error":
            return dict.fromkeys(self.agents)
        if self.final is not None:
            return dict(self.final)
        return dict(self.rewards())

    def evaluate(self) -> MultiVerdict:
        if self.task is None:
            raise EpisodeError("call reset(task) before evaluate()")
        rewards = self.seat_rewards()
        items = [
            RubricItem(
                name=f"reward/{seat}",
                kind="score",
                weight=1.0 if i == 0 else 0.0,
                score=min(1.0, max(0.0, r or 0.0)),
                reason="the seat's reward" if r is not None else "not scored: the world failed",
            )
            for i, (seat, r) in enumerate(rewards.items())
        ]
        outcome = {"fault": self.fault} if self.fault else self.outcome()
        return MultiVerdict(
            reward=rewards[self.agents[0]],
            status=self.status,
            items=items,
            state_hash=self.state_hash(),
            rewards=rewards,
            outcome=outcome,
        )

    def state_hash(self) -> str:
        text = json.dumps(self.state(), sort_keys=True, default=str, separators=(",", ":"))
        return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()

    def audit(self) -> list[str]:
        """Problems with the outcome: an independent check of it, and a replay of every action
        on a fresh episode that must end in the same state with the same rewards."""
        if self.task is None:
            raise EpisodeError("call reset(task) before audit()")
        problems = [] if self.status == "env_error" else self.confirm()
        fresh = self.env.episode(self.config)
        try:
            fresh.reset(self.task)
            for entry in self.played:
                fresh.step(entry["action"], seat=entry["seat"])
            if fresh.done != self.done or fresh.status != self.status:
                problems.append(f"replay ended {fresh.status}, play ended {self.status}")
            if fresh.seat_rewards() != self.seat_rewards():
                problems.append(f"replay rewards {fresh.seat_rewards()} != {self.seat_rewards()}")
            if fresh.state_hash() != self.state_hash():
                problems.append("replay reached another state")
        finally:
            fresh.close()
        return problems


def _dump(raw: Any, parsed: Action | ToolError) -> Any:
    """What to keep of an action for the replay: the parsed action as a dict (the raw action
    when it did not parse). Python values, not JSON: they are the agent's, not yet checked."""
    if isinstance(parsed, ToolError):
        return raw
    return parsed.model_dump(exclude_none=True)
