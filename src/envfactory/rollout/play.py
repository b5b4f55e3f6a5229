"""One episode through the engine: reset (or resume a checkpoint), turns of policy reply and
environment steps, and exactly one status at the end.

Statuses: ``completed`` and ``truncated`` (turn or step limit, context overflow) are the
agent's and are scored; ``timeout`` (the episode's wall-clock budget, which a slow server also
spends), ``env_error`` (the environment failed) and ``infra_error`` (the policy's server failed
past its retries) carry no reward and stay out of group statistics.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

from envfactory.contract.actions import EpisodeStatus, Message, Observation, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import Environment
from envfactory.contract.episode import Episode
from envfactory.contract.tasks import Task
from envfactory.harness.config import HarnessConfig
from envfactory.harness.context import ContextBuilder, Summariser
from envfactory.harness.prompt import exposed_tools, opening
from envfactory.harness.toolcalls import tool_response
from envfactory.policies.base import (
    ContextOverflow,
    EpisodeContext,
    FatalFault,
    PolicyReply,
    PolicyRequest,
    PolicySession,
    RawAction,
    RolloutPolicy,
    TransientFault,
    call_record,
)
from envfactory.rollout.executor import EnvExecutor, Lane
from envfactory.rollout.prefix import Prefix
from envfactory.rollout.retry import backoff
from envfactory.rollout.summary import RolloutStats
from envfactory.rollout.types import EngineConfig
from envfactory.trajectory.record import SCORED, EpisodeRecord, ModelInfo, StepRecord

T = TypeVar("T")


class Host(Protocol):
    """What an episode needs of the engine that runs it (:class:`~envfactory.rollout.engine.
    RolloutEngine`)."""

    policy: RolloutPolicy
    harness: HarnessConfig
    config: EngineConfig
    episode_config: EpisodeConfig
    model_info: ModelInfo
    summariser: Summariser | None
    stats: RolloutStats
    stopping: bool
    rng: random.Random

    def executor(self, env: Environment) -> EnvExecutor: ...

    def tool_schemas(self, env: Environment) -> list[dict[str, Any]]: ...

    def checkpoint(self, record: EpisodeRecord) -> None: ...


class EnvFault(Exception):
    """The environment raised: the episode ends as ``env_error``."""


class InfraFault(Exception):
    """The policy's infrastructure failed for good: the episode ends as ``infra_error``."""


class Paused(Exception):
    """The engine is stopping: checkpoint and leave the episode for a later resume."""


class ResumeMismatch(Exception):
    """Replaying a checkpoint did not reach the recorded states: start the episode afresh."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One episode of a group; ``resume`` is its checkpoint, when it has one."""

    group_id: str
    episode_id: str
    sample_index: int
    resume: EpisodeRecord | None = None


def new_record(
    task: Task, sample: Sample, model: ModelInfo, episode_id: str | None = None, **fields: Any
) -> EpisodeRecord:
    """An empty record of one sample of ``task`` (``episode_id``: another id than the
    sample's, e.g. one seat's; ``fields``: more of the record's fields)."""
    public = task.public
    return EpisodeRecord(
        episode_id=episode_id or sample.episode_id,
        group_id=sample.group_id,
        task_id=public.task_id,
        env_id=public.env_id,
        split=public.split,
        difficulty=public.difficulty,
        sample_index=sample.sample_index,
        model=model,
        **fields,
    )


def _open(env: Environment, config: EpisodeConfig, task: Task) -> tuple[Episode, Observation]:
    ep = env.episode(config)
    try:
        return ep, ep.reset(task)
    except BaseException:
        ep.close()
        raise


def _step(ep: Episode, action: Any) -> tuple[Observation, str]:
    obs = ep.step(action)
    return obs, ep.state_hash()


def action_dict(action: RawAction) -> dict[str, Any]:
    if isinstance(action, (ToolCall, Message)):
        return action.model_dump(mode="json", exclude_none=True)
    return dict(action)


def _call_id(action: RawAction) -> str | None:
    if isinstance(action, ToolCall):
        return action.call_id
    if isinstance(action, dict):
        cid = action.get("call_id")
        return cid if isinstance(cid, str) else None
    return None


class Play:
    """The state of one live episode."""

    def __init__(
        self,
        engine: Host,
        sample: Sample,
        env: Environment,
        task: Task,
        prefix: Prefix | None = None,
    ):
        self.engine = engine
        self.sample = sample
        self.env = env
        self.task = task
        self.prefix = prefix
        self.executor: EnvExecutor = engine.executor(env)
        self.lane = Lane()
        self.ep: Episode | None = None
        self.record = sample.resume or self._fresh()
        timing = self.record.timing
        self.base = (timing.wall_s, timing.env_s, timing.policy_s)
        self.t0 = time.perf_counter()
        self.env_s = 0.0
        self.policy_s = 0.0

    def _fresh(self) -> EpisodeRecord:
        return new_record(self.task, self.sample, self.engine.model_info)

    async def _env(self, fn: Callable[[], T]) -> T:
        t0 = time.perf_counter()
        try:
            return await self.executor.call(fn, self.lane)
        except Exception as exc:
            raise EnvFault(f"{type(exc).__name__}: {exc}") from exc
        finally:
            self.env_s += time.perf_counter() - t0

    # -- the episode -------------------------------------------------------------------------

    async def run(self) -> EpisodeRecord | None:
        """Play to the end and return the record; None when paused (checkpointed)."""
        cfg = self.engine.config
        rec = self.record
        rec.timing.started = rec.timing.started or time.time()
        status: EpisodeStatus = "truncated"
        error: str | None = None
        try:
            try:
                async with asyncio.timeout(cfg.episode_timeout_s):
                    status = await self._play()
            except TimeoutError:
                status, error = "timeout", f"the episode ran past {cfg.episode_timeout_s} s"
            except ContextOverflow as exc:
                status, error = "truncated", f"context overflow: {exc}"
            except EnvFault as exc:
                status, error = "env_error", str(exc)
            except InfraFault as exc:
                status, error = "infra_error", str(exc)
            except Paused:
                if rec.calls:
                    self.engine.stats.paused += 1
                    self.engine.checkpoint(self._stamp())
                return None
            if status == "env_error" and error is None:
                error = "the environment failed inside a step"
            rec.status, rec.error = status, error
            if self.ep is not None and (status in SCORED or status == "timeout"):
                try:  # a world stuck past the episode's budget must not hold the run
                    async with asyncio.timeout(cfg.call_timeout_s):
                        await self._judge()
                except TimeoutError:
                    rec.status, rec.error = "env_error", "the verdict did not come in time"
            return self._stamp()
        finally:
            if self.ep is not None:
                self.executor.close(self.lane, self.ep.close)

    def trajectories(self) -> list[EpisodeRecord]:
        """The records a finished episode leaves: its one record (a world with seats: one per
        seat)."""
        return [self.record]

    def _stamp(self) -> EpisodeRecord:
        """The record with its timing and counts brought up to now."""
        t = self.record.timing
        wall, env, policy = self.base
        t.ended = time.time()
        t.wall_s = wall + time.perf_counter() - self.t0
        t.env_s = env + self.env_s
        t.policy_s = policy + self.policy_s
        m = self.record.metrics
        m["calls"] = len(self.record.calls)
        m["steps"] = len(self.record.steps)
        m["tool_errors"] = sum(s.kind == "tool_error" for s in self.record.steps)
        return self.record

    async def _judge(self) -> None:
        assert self.ep is not None
        ep, rec = self.ep, self.record
        try:
            verdict = await self._env(ep.evaluate)
        except EnvFault as exc:
            rec.status, rec.error = "env_error", str(exc)
            return
        rec.rubric = verdict.items
        rec.state_hash = verdict.state_hash
        if verdict.status == "env_error":
            rec.status = "env_error"
        rec.reward = verdict.reward if rec.status in SCORED else None

    async def _start(self) -> tuple[Episode, Observation, PolicySession]:
        """A fresh episode, reset to the task (or a fork of the group's prefix), and a policy
        session for it; the observation is the last one the policy has not acted on."""
        env, task, rec = self.env, self.task, self.record
        if self.ep is not None:
            self.executor.close(self.lane, self.ep.close)
            self.ep = None
        prefix = self.prefix
        if prefix is None:
            ep, first = await self._env(partial(_open, env, self.engine.episode_config, task))
        else:
            async with prefix.lock:  # forks of one root, one at a time
                ep = await self._env(prefix.episode.fork)
            first = prefix.observations[-1]
            rec.metrics["prefix_steps"] = float(prefix.steps)
        self.ep = ep
        session = self.engine.policy.session(
            EpisodeContext(
                episode_id=rec.episode_id,
                group_id=rec.group_id,
                sample_index=rec.sample_index,
                task=task,
                tools=rec.tools,
                harness=self.engine.harness,
            )
        )
        for seen in prefix.observations[:-1] if prefix else ():
            session.replay([seen])
        return ep, first, session

    async def _play(self) -> EpisodeStatus:
        engine, rec = self.engine, self.record
        harness = engine.harness
        if not rec.tools:
            rec.tools = exposed_tools(self.task.public, engine.tool_schemas(self.env), harness)
        ep, first, session = await self._start()
        observations = [first]
        if rec.calls:
            try:
                observations = await self._replay(ep, session, first)
            except ResumeMismatch:
                rec.metrics["resume_restarted"] = 1.0
                rec.calls, rec.steps, rec.step_rewards, rec.messages = [], [], [], []
                ep, first, session = await self._start()
                observations = [first]
        if not rec.messages:
            if self.prefix is None:
                rec.messages = opening(self.task.public, rec.tools, harness, first.content)
            else:
                asked = self.prefix.observations[0].content
                rec.messages = opening(self.task.public, rec.tools, harness, asked)
                rec.messages += self.prefix.messages(harness.tool_format)
        context = ContextBuilder(harness.context, engine.summariser)
        while True:
            if ep.done:
                return ep.status
            if engine.stopping:
                raise Paused
            if len(rec.calls) >= harness.max_turns:
                return "truncated"
            shown, cut = await context.build(rec.messages)
            request = PolicyRequest(shown, observations, len(rec.calls))
            reply, attempts, latency = await self._act(session, request, engine.policy.local)
            self._record_call(reply, attempts, latency, shown if cut else None)
            observations = await self._take(ep, reply)
            every = engine.config.checkpoint_every
            if every and len(rec.calls) % every == 0 and not ep.done:
                engine.checkpoint(self._stamp())

    async def _replay(
        self, ep: Episode, session: PolicySession, first: Observation
    ) -> list[Observation]:
        """Re-take a checkpoint's actions, checking each state hash on the way."""
        rec = self.record
        observations = [first]
        for call in rec.calls:
            session.replay(observations)
            observations = []
            for step in rec.steps:
                if step.call_index != call.index:
                    continue
                obs, digest = await self._env(partial(_step, ep, step.action))
                if digest != step.state_hash:
                    raise ResumeMismatch(rec.episode_id)
                observations.append(obs)
        rec.metrics["resumed"] = rec.metrics.get("resumed", 0.0) + 1.0
        return observations

    async def _act(
        self, session: PolicySession, request: PolicyRequest, local: bool
    ) -> tuple[PolicyReply, int, float]:
        """The policy's reply, retrying transient faults with backoff (a ``local`` policy runs
        in this process: no timeouts, no retries)."""
        cfg = self.engine.config
        if local:
            t0 = time.perf_counter()
            try:
                reply = await session.act(request)
            except ContextOverflow:
                raise
            except Exception as exc:  # a bug in the policy is not the agent's to lose
                raise InfraFault(f"the policy failed: {type(exc).__name__}: {exc}") from exc
            latency = time.perf_counter() - t0
            self.policy_s += latency
            return reply, 1, latency
        attempt = 0
        while True:
            attempt += 1
            t0 = time.perf_counter()
            try:
                async with asyncio.timeout(cfg.call_timeout_s):
                    reply = await session.act(request)
                return reply, attempt, time.perf_counter() - t0
            except TimeoutError:
                fault = TransientFault(f"no reply within {cfg.call_timeout_s} s")
            except TransientFault as exc:
                fault = exc
            except (ContextOverflow, asyncio.CancelledError):
                raise
            except FatalFault as exc:
                raise InfraFault(str(exc)) from exc
            except Exception as exc:  # a bug in the policy is not the agent's to lose
                raise InfraFault(f"the policy failed: {type(exc).__name__}: {exc}") from exc
            finally:
                self.policy_s += time.perf_counter() - t0
            self.record.metrics["retries"] = self.record.metrics.get("retries", 0.0) + 1.0
            if attempt >= cfg.retry.attempts:
                raise InfraFault(f"{fault} (gave up after {attempt} attempts)")
            await asyncio.sleep(backoff(cfg.retry, attempt, fault.retry_after, self.engine.rng))

    def _record_call(
        self, reply: PolicyReply, attempts: int, latency: float, shown: list[Any] | None
    ) -> None:
        rec = self.record
        context = list(shown) if shown is not None else None
        rec.calls.append(
            call_record(reply, len(rec.calls), len(rec.messages), context, latency, attempts)
        )
        rec.messages.append(reply.message)

    async def _take(self, ep: Episode, reply: PolicyReply) -> list[Observation]:
        """Step every action of the reply; tool results and user replies join the transcript."""
        rec = self.record
        index = len(rec.calls) - 1
        observations: list[Observation] = []
        responses: list[str] = []
        for action in reply.actions:
            obs, digest = await self._env(partial(_step, ep, action))
            rec.steps.append(
                StepRecord(
                    call_index=index,
                    action=action_dict(action),
                    kind=obs.kind,
                    error=obs.error.code if obs.error else None,
                    reward=obs.reward,
                    done=obs.done,
                    state_hash=digest,
                )
            )
            rec.step_rewards.append(obs.reward)
            observations.append(obs)
            if obs.kind in ("tool_result", "tool_error"):
                call_id = _call_id(action)
                if call_id is None:
                    responses.append(tool_response(obs.content))
                else:
                    rec.messages.append(
                        {"role": "tool", "tool_call_id": call_id, "content": obs.content}
                    )
            elif obs.kind == "user":
                rec.messages.append({"role": "user", "content": obs.content})
            if obs.done:
                break
        if responses:
            rec.messages.append({"role": "user", "content": "\n".join(responses)})
        return observations
