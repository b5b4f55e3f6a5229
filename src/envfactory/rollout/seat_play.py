"""One episode of a world with seats through the engine: a session, a transcript and a record
per seat, linked by episode.

Each seat has its own policy session and its own transcript: at its turn it is shown what it
may see (its observation) and acts; seats of a simultaneous move are asked at once. Every
episode leaves one :class:`~envfactory.trajectory.record.EpisodeRecord` per seat
(``episode_id`` ``<episode>@<seat>``, ``actor`` the seat, ``episode`` the shared episode id,
``reward`` and ``metrics["reward/<seat>"]`` the seat's reward, ``model`` the seat's policy),
all in the task's group, so per-agent per-turn advantages (``envfactory.credit``, method
``atgrpo``) compare each seat's k-th call across the group.

An episode with seats is not resumed mid-way: a run that is stopped records the episodes that
finished, and a resumed run plays the others again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from functools import partial
from typing import Any

from envfactory.contract.actions import EpisodeStatus, Observation
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import Environment
from envfactory.contract.tasks import Task
from envfactory.episode.seats import SeatedEpisode, SeatedWorld
from envfactory.harness.context import ContextBuilder
from envfactory.harness.toolcalls import tools_block
from envfactory.policies.base import PolicyReply, PolicyRequest, PolicySession, RolloutPolicy
from envfactory.rollout.play import EnvFault, Host, Paused, Play, Sample, new_record
from envfactory.rollout.seating import SeatContext
from envfactory.trajectory.record import SCORED, ChatMessage, EpisodeRecord

SYSTEM = (
    "You are {seat}, one of the agents of {name}: {seats}. Other agents act between your "
    "turns; you see only what your seat may see.\n\n# Rules\n{rules}\n\nAct with your tools."
)


class SeatPlay(Play):
    """One episode of a world with seats: a session, a transcript and a record per seat. The
    inherited :class:`~envfactory.rollout.play.Play` runs it (timeouts, faults, statuses, the
    verdict); its own record stands for the whole episode and is not stored."""

    def __init__(
        self,
        engine: Host,
        sample: Sample,
        env: Environment,
        world: SeatedWorld,
        task: Task,
        policies: dict[str, RolloutPolicy],
    ) -> None:
        super().__init__(engine, sample, env, task)
        self.world = world
        self.policies = policies
        self.seats = {seat: self._seat_record(seat) for seat in world.seats}
        self.sessions: dict[str, PolicySession] = {}
        self.contexts: dict[str, ContextBuilder] = {}
        self.shown: dict[str, list[ChatMessage] | None] = {}
        self.seat_ep: SeatedEpisode | None = None

    def trajectories(self) -> list[EpisodeRecord]:
        return list(self.seats.values())

    def _seat_record(self, seat: str) -> EpisodeRecord:
        return new_record(
            self.task,
            self.sample,
            self.policies[seat].info,
            episode_id=f"{self.sample.episode_id}@{seat}",
            tools=self.world.seat_schemas(seat),
            actor=seat,
            episode=self.sample.episode_id,
        )

    @contextlib.contextmanager
    def _as(self, seat: str) -> Iterator[EpisodeRecord]:
        """Let the inherited bookkeeping write to ``seat``'s record for a moment (never
        across a concurrent await: seats are recorded one after the other)."""
        lead, self.record = self.record, self.seats[seat]
        try:
            yield self.record
        finally:
            self.record = lead

    # -- the episode ---------------------------------------------------------------------------

    async def _play(self) -> EpisodeStatus:
        engine = self.engine
        ep = await self._env(partial(_open, self.world, engine.episode_config, self.task))
        self.seat_ep = self.ep = ep
        while True:
            if ep.done:
                return ep.status
            if engine.stopping:
                raise Paused
            actors = ep.current_actors()
            if any(len(self.seats[s].calls) >= engine.harness.max_turns for s in actors):
                return "truncated"
            requests = [await self._request(ep, seat) for seat in actors]
            replies = await asyncio.gather(
                *(
                    self._act(self._session(s), r, self.policies[s].local)
                    for s, r in zip(actors, requests, strict=True)
                )
            )
            for seat, (reply, attempts, latency) in zip(actors, replies, strict=True):
                with self._as(seat) as rec:
                    self._record_call(reply, attempts, latency, self.shown.get(seat))
                    rec.calls[-1].actor = seat
                await self._take_seat(ep, seat, reply)
                if ep.done:
                    break

    def _session(self, seat: str) -> PolicySession:
        if seat not in self.sessions:
            rec = self.seats[seat]
            ctx = SeatContext(
                episode_id=rec.episode_id,
                group_id=rec.group_id,
                sample_index=rec.sample_index,
                task=self.task,
                tools=rec.tools,
                harness=self.engine.harness,
                seat=seat,
            )
            self.sessions[seat] = self.policies[seat].session(ctx)
            self.contexts[seat] = ContextBuilder(
                self.engine.harness.context, self.engine.summariser
            )
        return self.sessions[seat]

    async def _request(self, ep: SeatedEpisode, seat: str) -> PolicyRequest:
        """The seat's view now, added to its transcript when there is news for it."""
        rec = self.seats[seat]
        obs: Observation = await self._env(partial(ep.observe, seat))
        if not rec.messages:
            rec.messages = [{"role": "system", "content": self._system(seat, rec.tools)}]
        if (
            obs.data.get("briefing")
            or obs.data.get("events")
            or rec.messages[-1]["role"] == "assistant"
        ):
            rec.messages.append({"role": "user", "content": obs.content})
        self._session(seat)
        shown, cut = await self.contexts[seat].build(rec.messages)
        self.shown[seat] = shown if cut else None
        return PolicyRequest(shown, [obs], len(rec.calls))

    def _system(self, seat: str, tools: list[dict[str, Any]]) -> str:
        rules = "\n".join(f"- {r}" for r in self.task.public.rules) or "- (none)"
        text = SYSTEM.format(
            seat=seat, name=self.world.name, seats=", ".join(self.world.seats), rules=rules
        )
        if self.engine.harness.calls_in_text:
            text += "\n\n" + tools_block(tools)
        return text

    async def _take_seat(self, ep: SeatedEpisode, seat: str, reply: PolicyReply) -> None:
        """Step the seat's actions (for the seat, whatever actor they name)."""
        with self._as(seat) as rec:
            first = len(rec.steps)
            await self._take(_SeatView(ep, seat), reply)  # type: ignore[arg-type]
            for step in rec.steps[first:]:
                step.actor = seat

    async def _judge(self) -> None:
        assert self.seat_ep is not None
        try:
            verdict = await self._env(self.seat_ep.evaluate)
        except EnvFault as exc:
            self.record.status, self.record.error = "env_error", str(exc)
            return
        lead = self.record
        lead.rubric, lead.state_hash = verdict.items, verdict.state_hash
        if verdict.status == "env_error":
            lead.status = "env_error"
        for seat, rec in self.seats.items():
            reward = verdict.rewards.get(seat) if lead.status in SCORED else None
            rec.reward = reward
            if reward is not None:
                rec.metrics[f"reward/{seat}"] = reward
            rec.rubric = [i for i in verdict.items if i.name == f"reward/{seat}"]
            rec.state_hash = verdict.state_hash

    def _stamp(self) -> EpisodeRecord:
        lead = super()._stamp()
        for rec in self.seats.values():
            rec.status, rec.error = lead.status, lead.error
            rec.timing = lead.timing.model_copy()
            rec.metrics["calls"] = len(rec.calls)
            rec.metrics["steps"] = len(rec.steps)
            rec.metrics["tool_errors"] = sum(s.kind == "tool_error" for s in rec.steps)
            rec.metrics["episode_steps"] = len(rec.steps) + sum(
                len(r.steps) for r in self.seats.values() if r is not rec
            )
            if lead.status not in SCORED:
                rec.reward = None
        return lead


class _SeatView:
    """The episode as one seat steps it (what :meth:`Play._take` needs)."""

    def __init__(self, ep: SeatedEpisode, seat: str) -> None:
        self.ep = ep
        self.seat = seat

    def step(self, action: Any) -> Observation:
        return self.ep.step(action, seat=self.seat)

    def state_hash(self) -> str:
        return self.ep.state_hash()


def _open(world: SeatedWorld, config: EpisodeConfig, task: Task) -> SeatedEpisode:
    ep = world.episode(config)
    try:
        ep.reset(task)
    except BaseException:
        ep.close()
        raise
    return ep
