"""Multi-seat episodes through the rollout engine: one trajectory per seat, linked by episode.

:class:`MultiAgentEngine` is the rollout engine (groups of G episodes per task, concurrency,
per-call timeouts and retries, episode timeouts, statuses, the trajectory store) for
multi-agent worlds. Each seat has its own policy session and its own transcript: at its turn
it is shown what it may see (its observation) and acts; seats of a simultaneous move are
asked at once. Every episode writes one :class:`~envfactory.trajectory.record.EpisodeRecord`
per seat (``episode_id`` ``<episode>@<seat>``, ``actor`` the seat, ``episode`` the shared
episode id, ``reward`` and ``metrics["reward/<seat>"]`` the seat's reward, ``model`` the seat's
policy), all in the task's group, so per-agent per-turn advantages
(``envfactory.credit``, method ``atgrpo``) compare each seat's k-th call across the group.

A multi-seat episode is not resumed mid-way: a run that is stopped records the episodes that
finished, and a resumed run plays the others again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any

from envfactory.contract.actions import EpisodeStatus, Observation
from envfactory.contract.tasks import Task
from envfactory.harness.config import HarnessConfig
from envfactory.harness.context import ContextBuilder, Summariser
from envfactory.harness.toolcalls import tools_block
from envfactory.multiagent.environment import MultiAgentEnvironment
from envfactory.multiagent.episode import MultiAgentEpisode, MultiVerdict
from envfactory.multiagent.seats import SeatContext, Seating
from envfactory.policies.base import PolicyReply, PolicyRequest, PolicySession, RolloutPolicy
from envfactory.registry import make
from envfactory.rollout.engine import Listener, RolloutEngine
from envfactory.rollout.executor import Lane
from envfactory.rollout.play import EnvFault, Paused, Play, Sample, new_record
from envfactory.rollout.summary import RunSummary
from envfactory.rollout.types import EngineConfig, TaskRef, episode_id
from envfactory.trajectory.record import SCORED, ChatMessage, EpisodeRecord, ModelInfo
from envfactory.trajectory.store import Entry, TrajectoryStore

SYSTEM = (
    "You are {seat}, one of the agents of {name}: {seats}. Other agents act between your "
    "turns; you see only what your seat may see.\n\n# Rules\n{rules}\n\nAct with your tools."
)


class SeatTable:
    """The rollout policy the engine holds for a multi-agent run: the learner's identity, and
    every policy of the seating to close at the end. Seats get their sessions from their own
    policies, never from this one."""

    def __init__(self, seating: Seating) -> None:
        self.seating = seating
        self.name = seating.learner.name if seating.learner is not None else "seats"
        self.local = False

    @property
    def info(self) -> ModelInfo:
        if self.seating.learner is not None:
            return self.seating.learner.info
        return ModelInfo(name="seats", provider="seats")

    def session(self, ctx: Any) -> PolicySession:
        raise TypeError("a multi-agent run opens one session per seat, from the seat's policy")

    async def aclose(self) -> None:
        for policy in self.seating.policies():
            await policy.aclose()


class SeatPlay(Play):
    """One multi-agent episode: a session, a transcript and a record per seat. The inherited
    :class:`~envfactory.rollout.play.Play` runs it (timeouts, faults, statuses, the verdict);
    its own record stands for the whole episode and is not stored."""

    def __init__(
        self,
        engine: MultiAgentEngine,
        sample: Sample,
        env: MultiAgentEnvironment,
        task: Task,
        policies: dict[str, RolloutPolicy],
    ) -> None:
        super().__init__(engine, sample, env, task)
        self.world = env
        self.policies = policies
        self.seats = {seat: self._seat_record(seat) for seat in env.agents}
        self.sessions: dict[str, PolicySession] = {}
        self.contexts: dict[str, ContextBuilder] = {}
        self.shown: dict[str, list[ChatMessage] | None] = {}
        self.engine: MultiAgentEngine = engine

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
        ep: MultiAgentEpisode = await self._env(partial(_open, self.world, engine, self.task))
        self.ep = ep
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
                *(self._act(self._session(s), r) for s, r in zip(actors, requests, strict=True))
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

    async def _request(self, ep: MultiAgentEpisode, seat: str) -> PolicyRequest:
        """The seat's view now, added to its transcript when there is news for it."""
        rec = self.seats[seat]
        obs: Observation = await self._env(partial(ep.observe, seat))
        if not rec.messages:
            rec.messages = [{"role": "system", "content": self._system(seat, rec.tools)}]
        if obs.data["briefing"] or obs.data["events"] or rec.messages[-1]["role"] == "assistant":
            rec.messages.append({"role": "user", "content": obs.content})
        self._session(seat)
        shown, cut = await self.contexts[seat].build(rec.messages)
        self.shown[seat] = shown if cut else None
        return PolicyRequest(shown, [obs], len(rec.calls))

    def _system(self, seat: str, tools: list[dict[str, Any]]) -> str:
        rules = "\n".join(f"- {r}" for r in self.task.public.rules) or "- (none)"
        text = SYSTEM.format(
            seat=seat, name=self.world.name, seats=", ".join(self.world.agents), rules=rules
        )
        if self.engine.harness.calls_in_text:
            text += "\n\n" + tools_block(tools)
        return text

    async def _take_seat(self, ep: MultiAgentEpisode, seat: str, reply: PolicyReply) -> None:
        """Step the seat's actions (for the seat, whatever actor they name)."""
        with self._as(seat) as rec:
            first = len(rec.steps)
            await self._take(_SeatView(ep, seat), reply)  # type: ignore[arg-type]
            for step in rec.steps[first:]:
                step.actor = seat

    async def _judge(self) -> None:
        assert self.ep is not None
        try:
            verdict = await self._env(self.ep.evaluate)
        except EnvFault as exc:
            self.record.status, self.record.error = "env_error", str(exc)
            return
        assert isinstance(verdict, MultiVerdict)
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

    def __init__(self, ep: MultiAgentEpisode, seat: str) -> None:
        self.ep = ep
        self.seat = seat

    def step(self, action: Any) -> Observation:
        return self.ep.step(action, seat=self.seat)

    def state_hash(self) -> str:
        return self.ep.state_hash()


def _open(env: MultiAgentEnvironment, engine: RolloutEngine, task: Task) -> MultiAgentEpisode:
    ep = env.episode(engine.episode_config)
    try:
        ep.reset(task)
    except BaseException:
        ep.close()
        raise
    return ep


class MultiAgentEngine(RolloutEngine):
    """The rollout engine for multi-agent worlds: ``seating`` says who plays each seat."""

    def __init__(
        self,
        seating: Seating,
        *,
        harness: HarnessConfig | None = None,
        config: EngineConfig | None = None,
        store: TrajectoryStore | None = None,
        summariser: Summariser | None = None,
        on_episode: Listener | None = None,
        keep_records: bool = True,
    ) -> None:
        super().__init__(
            SeatTable(seating),
            harness=harness,
            config=config,
            store=store,
            summariser=summariser,
            on_episode=on_episode,
            keep_records=keep_records,
        )
        self.seating = seating

    async def _group(
        self, ref: TaskRef, recorded: list[Entry], partial_: list[EpisodeRecord]
    ) -> None:
        cfg, stats = self.config, self.stats
        episodes: dict[int, list[Entry]] = {}
        for entry in recorded:
            episodes.setdefault(entry.sample_index, []).append(entry)
        kept = sum(all(e.status != "infra_error" for e in es) for es in episodes.values())
        if kept >= cfg.group_size:
            stats.groups["skipped"] += 1
            return
        try:
            env = make(ref.env_id)
            if not isinstance(env, MultiAgentEnvironment):
                raise TypeError(f"{ref.env_id} is a {env.kind} world: use the RolloutEngine")
            task = await self._synth.call(
                lambda: env.task(ref.split, ref.difficulty, ref.index), Lane()
            )
            policies = self.seating.resolve(env, task)
        except Exception as exc:
            stats.errors.append(f"{ref.group_id}: {type(exc).__name__}: {exc}")
            stats.groups["incomplete"] += 1
            return
        budget = cfg.group_size - kept + cfg.replace_failed
        index = 0
        while kept < cfg.group_size and budget > 0 and not self.stopping:
            wanted = min(cfg.group_size - kept, budget)
            batch: list[int] = []
            while len(batch) < wanted:
                if index not in episodes:
                    batch.append(index)
                index += 1
            budget -= len(batch)
            results = await asyncio.gather(
                *(self._seat_episode(ref, i, env, task, policies) for i in batch)
            )
            for records in results:
                if records is None:
                    continue
                for rec in records:
                    await self._record(rec)
                kept += records[0].status != "infra_error"
        stats.groups["complete" if kept >= cfg.group_size else "incomplete"] += 1

    async def _seat_episode(
        self,
        ref: TaskRef,
        index: int,
        env: MultiAgentEnvironment,
        task: Task,
        policies: dict[str, RolloutPolicy],
    ) -> list[EpisodeRecord] | None:
        assert self._slots is not None
        sample = Sample(ref.group_id, episode_id(ref.group_id, index), index)
        async with self._slots:
            self.live += 1
            self.peak_live = max(self.peak_live, self.live)
            try:
                play = SeatPlay(self, sample, env, task, policies)
                if await play.run() is None:
                    return None
                return list(play.seats.values())
            finally:
                self.live -= 1


async def run_seats(
    refs: Iterable[TaskRef],
    seating: Seating,
    *,
    harness: HarnessConfig | None = None,
    config: EngineConfig | None = None,
    store: TrajectoryStore | None = None,
) -> tuple[RunSummary, list[EpisodeRecord]]:
    """Run ``refs`` with ``seating`` and close the engine; (summary, records)."""
    engine = MultiAgentEngine(seating, harness=harness, config=config, store=store)
    try:
        summary = await engine.run(list(refs))
    finally:
        await engine.aclose()
    return summary, engine.records
