"""The episode of a campaign world: requests one after another over one evolving state.

Each request runs as a database episode on the world of the state it opens on; ``close_request``
(or the final message, after the last request) sends its reply and closes it, the events due by
then fire, and the next request is synthesised from the state left. Each request is judged on
its own (collateral writes are the request's that made them; a late close earns nothing), and
the campaign's reward is the mean over its K requests.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Self

from envfactory.campaign.clock import (
    CLOSE_MINUTES,
    MESSAGE_MINUTES,
    budget,
    time_of_day,
    tool_minutes,
)
from envfactory.campaign.events import Event, State, schedule
from envfactory.campaign.setting import CampaignWorld
from envfactory.campaign.tool import CLOSE
from envfactory.contract.actions import EpisodeStatus, Message, Observation, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.episode import ToolEpisode, error_observation
from envfactory.contract.errors import EpisodeError
from envfactory.contract.results import ToolError
from envfactory.contract.tasks import Split, Task
from envfactory.contract.verdict import RubricItem, Verdict, combine
from envfactory.db.episode import DatabaseEpisode
from envfactory.tasks.seeds import stable_hash
from envfactory.world.state import hex_hash

DEFAULT_CONFIG = EpisodeConfig(max_steps=400)  # an episode's when no config is given
EVENT_HORIZON = 5  # minutes of schedule per request (about what one takes at the oracle's pace)


@dataclass
class Request:
    """One request of a campaign as it went."""

    number: int  # 1-based
    task: Task
    episode: DatabaseEpisode
    opened: int  # minute
    due: int | None
    first_step: int  # the campaign step that opened it
    events: list[str] = field(default_factory=list)  # what fired before it opened
    closed: int | None = None
    last_step: int | None = None
    verdict: Verdict | None = None

    def late(self) -> bool:
        return self.due is not None and self.closed is not None and self.closed > self.due


class CampaignEpisode(ToolEpisode):
    """One live campaign; ``requests`` holds every request opened so far, in order."""

    def __init__(self, env: CampaignWorld, config: EpisodeConfig) -> None:
        self.env = env
        self.config = config
        self.sub_config = EpisodeConfig(max_steps=10**9, user=config.user, noise=config.noise)
        self.task: Task | None = None
        self.requests: list[Request] = []
        self.clock = 0
        self.pending: list[Event] = []
        self.fired: list[tuple[int, str]] = []  # (minute, what happened), every event so far
        self.steps = 0
        self.done = False
        self.status: EpisodeStatus = "truncated"
        self._address: tuple[Split, int, int] = ("train", 1, 0)

    # -- lifecycle ---------------------------------------------------------------------------

    def reset(self, task: Task) -> Observation:
        if task.public.env_id != self.env.id:
            raise EpisodeError(f"task {task.task_id} belongs to {task.public.env_id}")
        split, difficulty, index = address(task)
        first = self.begin(split, difficulty, index)
        self.task = task
        if first is None:
            raise EpisodeError(f"{task.task_id}: its first request cannot be made")
        return Observation(
            kind="task", content=task.public.instruction, data=task.public.model_dump()
        )

    def begin(self, split: Split, difficulty: int, index: int) -> Request | None:
        """Start campaign (split, difficulty, index) without a task (the gold recorder's way
        in); its first request, or None when the world offers none."""
        self.close()
        self._address = (split, difficulty, index)
        level = self.env.level(difficulty)
        horizon = EVENT_HORIZON * level.tasks
        self.pending = schedule(
            round(level.events * level.tasks), horizon, self.env.id, split, difficulty, index
        )
        self.requests, self.fired = [], []
        self.clock, self.steps = 0, 0
        self.done, self.status = False, "truncated"
        self.task = None
        return self._open(None)

    def close(self) -> None:
        for r in self.requests:
            r.episode.close()

    def fork(self) -> Self:
        """An independent live copy: the last request's database episode forked (its store
        copy-on-write, its conversation and user copied), the clock, the events still to come
        and the requests so far copied; closed requests are shared (they are judged and their
        episodes closed)."""
        if self.task is None:
            raise EpisodeError("call reset(task) before fork()")
        child = copy.copy(self)
        child.requests = [replace(r) for r in self.requests]
        if child.requests:
            last = child.requests[-1]
            last.episode = last.episode.fork()
        child.pending, child.fired = list(self.pending), list(self.fired)
        return child

    @property
    def current(self) -> Request | None:
        """The open request, or None."""
        last = self.requests[-1] if self.requests else None
        return last if last is not None and last.closed is None else None

    def _open(self, state: State | None, events: list[str] | None = None) -> Request | None:
        split, difficulty, index = self._address
        level = self.env.level(difficulty)
        number = len(self.requests) + 1
        if number > level.tasks:
            return None
        opening = self.env.opening(state, split, difficulty, index, number)
        if opening is None:
            return None
        setting, task = opening
        sub = DatabaseEpisode(setting, self.sub_config)
        sub.reset(task)
        due = (
            None
            if level.slack is None
            else self.clock + budget(plan_minutes(task, setting.world.write_tools), level.slack)
        )
        request = Request(number, task, sub, self.clock, due, self.steps, events or [])
        self.requests.append(request)
        return request

    def announce(self, request: Request) -> str:
        """How a request is shown: its time, place in the run, deadline and words."""
        total = self.env.level(self._address[1]).tasks
        due = "" if request.due is None else f", due by {time_of_day(request.due)}"
        happened = "".join(f"\n(meanwhile: {e})" for e in request.events)
        head = f"[{time_of_day(request.opened)}] Request {request.number} of {total}{due}"
        return f"{happened}\n{head}: {request.task.public.instruction}".lstrip("\n")

    # -- acting ------------------------------------------------------------------------------

    def _message(self, msg: Message) -> Observation:
        request = self.current
        assert request is not None
        if msg.final:
            self._tick(CLOSE_MINUTES)
            request.episode.step(msg)
            self._settle(request)
            return self._end()
        self._tick(MESSAGE_MINUTES)
        return self._forward(request, msg)

    def _call(self, call: ToolCall) -> Observation:
        request = self.current
        assert request is not None
        if call.tool == CLOSE:
            reply = call.arguments.get("reply") if isinstance(call.arguments, dict) else None
            if not isinstance(reply, str):
                self._tick(CLOSE_MINUTES)
                err = ToolError(
                    code="invalid_arguments", message="close_request needs a reply (text)"
                )
                return error_observation(err)
            self._tick(CLOSE_MINUTES)
            request.episode.step(Message(content=reply, final=True))
            return self._next(
                request, f"Request {request.number} closed at {time_of_day(self.clock)}."
            )
        tool = self.env.base.world.tools.get(call.tool)
        self._tick(tool_minutes(tool is not None and tool.kind == "write"))
        return self._forward(request, call)

    def _forward(self, request: Request, action: Message | ToolCall) -> Observation:
        """Pass an action to the open request; when that ends it (the user gave up, a world
        fault), the request is closed and the next one follows."""
        obs = request.episode.step(action)
        if not request.episode.done:
            return obs
        if request.episode.status == "env_error":
            self._settle(request)
            self.done, self.status = True, "env_error"
            return obs
        return self._next(request, obs.content)

    def _next(self, request: Request, said: str) -> Observation:
        """Close ``request``, fire the events due, open the next request (or end)."""
        self._settle(request)
        if request.number >= self.env.level(self._address[1]).tasks:
            return self._finish(said)
        state = request.episode.store.dump()
        happened = []
        while self.pending and self.pending[0].at <= self.clock:
            event = self.pending.pop(0)
            what = self.env.events.fire(state, event)
            if what is not None:
                stamp = time_of_day(event.at)
                self.fired.append((event.at, what))
                happened.append(f"{stamp} {what}")
        upcoming = self._open(state, happened)
        if upcoming is None:
            return self._finish(said)
        request.episode.close()  # judged and dumped: the next request has a world of its own
        content = f"{said}\n{self.announce(upcoming)}"
        return Observation(
            kind="tool_result",
            content=content,
            data={
                "request": upcoming.number,
                "time": time_of_day(self.clock),
                "events": happened,
                "instruction": upcoming.task.public.instruction,
            },
        )

    def _finish(self, said: str) -> Observation:
        self.done, self.status = True, "completed"
        return Observation(kind="end", content=f"{said} There are no more requests.", done=True)

    def _settle(self, request: Request) -> None:
        request.closed = self.clock
        request.last_step = self.steps
        request.verdict = request.episode.evaluate()

    def _tick(self, minutes: int) -> None:
        self.clock += minutes

    # -- judging -----------------------------------------------------------------------------

    def state_hash(self) -> str:
        request = self.requests[-1] if self.requests else None
        inner = request.episode.state_hash() if request else ""
        return hex_hash(
            stable_hash("campaign-state", inner, len(self.requests), self.clock) % 2**128
        )

    def verdicts(self) -> list[Verdict]:
        """Each request's verdict so far, in order (the open one as it stands)."""
        return [r.verdict or r.episode.evaluate() for r in self.requests]

    def evaluate(self) -> Verdict:
        """One score item per request (its reward, zero when closed late or never reached):
        the reward is their mean. A request the world failed makes the campaign unscored."""
        if self.task is None:
            raise EpisodeError("call reset(task) before evaluate()")
        total = self.env.level(self._address[1]).tasks
        items = []
        for request, verdict in zip(self.requests, self.verdicts(), strict=True):
            if verdict.reward is None:
                return Verdict(
                    reward=None,
                    status="env_error",
                    items=verdict.items,
                    state_hash=self.state_hash(),
                )
            score = 0.0 if request.late() else verdict.reward
            items.append(
                RubricItem(
                    name=f"request_{request.number}",
                    kind="score",
                    weight=1.0,
                    score=score,
                    reason=reason(request, verdict.reward),
                )
            )
        items.append(damage_gate(self.requests, self.verdicts()))
        for number in range(len(self.requests) + 1, total + 1):
            items.append(
                RubricItem(
                    name=f"request_{number}",
                    kind="score",
                    weight=1.0,
                    score=0.0,
                    reason="never reached",
                )
            )
        return Verdict(
            reward=combine(items), status=self.status, items=items, state_hash=self.state_hash()
        )


def damage_gate(requests: list[Request], verdicts: list[Verdict]) -> RubricItem:
    """A gate over the campaign: a failed gate of any request (collateral damage, a broken
    rule) zeroes the campaign's reward, as it zeroes that request's (which its own item
    shows: the damage is charged to the request that did it)."""
    failed = [
        f"request {r.number}: {i.name}"
        for r, v in zip(requests, verdicts, strict=True)
        for i in v.items
        if i.kind == "gate" and i.score < 1.0
    ]
    why = "; ".join(failed) if failed else "no request damaged the state or broke a rule"
    return RubricItem(
        name="no_damage", kind="gate", weight=1.0, score=0.0 if failed else 1.0, reason=why
    )


def reason(request: Request, reward: float) -> str:
    """A request's rubric line: its task, reward, steps and times."""
    closed = "open" if request.closed is None else f"closed {time_of_day(request.closed)}"
    due = "" if request.due is None else f", due {time_of_day(request.due)}"
    late = " (late: no credit)" if request.late() else ""
    end = "" if request.last_step is None else request.last_step
    steps = f"steps {request.first_step + 1}-{end}"
    opened = time_of_day(request.opened)
    times = f"opened {opened}, {closed}{due}{late}"
    return f"{request.task.task_id}: reward {reward:.3f}, {steps}, {times}"


def plan_minutes(task: Task, writes: frozenset[str]) -> int:
    """The minutes a request's gold plan takes: its calls and its questions to the user."""
    calls = sum(tool_minutes(step.tool in writes) for step in task.hidden.gold_plan)
    return calls + MESSAGE_MINUTES * len(task.hidden.asks)


def address(task: Task) -> tuple[Split, int, int]:
    """The (split, difficulty, index) of a campaign task, from its id."""
    index = int(task.task_id.rsplit("/", 1)[1])
    return task.public.split, task.public.difficulty, index
