"""The engine with in-process scripted policies: statuses, groups, executors, stop and resume."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import pytest

import envfactory
from envfactory.contract.actions import Observation
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import EnvInfo, Environment
from envfactory.contract.episode import Episode
from envfactory.contract.tasks import Split, Task
from envfactory.contract.verdict import Verdict
from envfactory.harness import HarnessConfig
from envfactory.policies.base import EpisodeContext, PolicyReply, PolicyRequest
from envfactory.policies.wrap import ScriptedPolicy, ScriptedSession
from envfactory.rollout import EngineConfig, RolloutEngine, RunSummary, TaskRef, plan_tasks
from envfactory.trajectory import EpisodeRecord, MissingTokens, TrajectoryStore, to_sequence

REFS = plan_tasks(["retail", "hotel"], 10)


def run(
    policy: str, refs: list[TaskRef] = REFS, store: TrajectoryStore | None = None, **kw: Any
) -> tuple[RunSummary, list[EpisodeRecord]]:
    harness = kw.pop("harness", None)
    engine = RolloutEngine(
        ScriptedPolicy(policy), harness=harness, config=EngineConfig(**kw), store=store
    )
    return engine.run_sync(refs), engine.records


@pytest.mark.parametrize(("policy", "reward"), [("oracle", 1.0), ("noop", 0.0), ("random", 0.0)])
def test_scripted_policies_through_the_engine(policy: str, reward: float) -> None:
    summary, records = run(policy, group_size=2)
    assert summary.episodes == 40 and summary.status_counts["completed"] == 40
    assert summary.reward_mean == pytest.approx(reward, abs=0.05)
    assert summary.groups == {"complete": 20, "incomplete": 0, "skipped": 0, "learnable": 0}
    for r in records:
        assert r.messages[0]["role"] == "system" and r.messages[1]["role"] == "user"
        assert r.model.provider == "scripted" and r.timing.wall_s > 0
        assert len(r.step_rewards) == len(r.steps) and r.state_hash
        assert r.steps[-1].state_hash == r.state_hash
        if policy == "oracle":  # the rubric is recorded with the reward
            assert r.rubric and r.reward == 1.0


def test_every_executor_gives_the_same_episodes() -> None:
    results = {}
    for kind in ("auto", "worker", "sliced", "thread", "direct"):
        _, records = run("noisy-oracle", env_executor=kind)
        results[kind] = sorted((r.episode_id, r.reward, r.state_hash) for r in records)
    assert len({tuple(v) for v in results.values()}) == 1


def test_turn_limit_truncates_and_is_scored() -> None:
    summary, records = run("oracle", REFS[4:5], harness=HarnessConfig(max_turns=2))
    r = records[0]
    assert r.status == "truncated" and r.reward is not None and len(r.calls) == 2
    assert summary.reward_mean == r.reward


def test_text_format_with_a_scripted_policy() -> None:
    _, records = run("oracle", REFS[:3], harness=HarnessConfig(tool_format="text"))
    for r in records:
        assert r.reward == 1.0 and "<tools>" in r.messages[0]["content"]
        calls = [
            m
            for m in r.messages
            if m["role"] == "assistant" and "<tool_call>" in (m["content"] or "")
        ]
        assert calls and not any(m["role"] == "tool" for m in r.messages)


def test_scripted_records_have_no_tokens() -> None:
    _, records = run("oracle", REFS[:1])
    with pytest.raises(MissingTokens):
        to_sequence(records[0])


def test_a_task_twice_needs_a_tag() -> None:
    with pytest.raises(ValueError, match="twice"):
        run("oracle", [REFS[0], REFS[0]])
    summary, records = run("oracle", [REFS[0], replace(REFS[0], tag="again")])
    assert len({r.group_id for r in records}) == 2 and summary.episodes == 2


def test_unknown_environment_is_a_group_error_not_a_crash() -> None:
    summary, _ = run("oracle", [TaskRef("atlantis", "train", 1, 0), *REFS[:2]])
    assert summary.episodes == 2 and summary.groups["incomplete"] == 1
    assert "atlantis" in summary.errors[0]


# -- an environment that fails -------------------------------------------------------------


class BrokenEpisode(Episode):
    """Retail's episode, except that its third step raises (a bug in the environment)."""

    def __init__(self, inner: Episode) -> None:
        self.inner = inner

    def reset(self, task: Task) -> Observation:
        return self.inner.reset(task)

    def step(self, action: Any) -> Observation:
        if self.inner.steps >= 2:
            raise RuntimeError("the world fell over")
        return self.inner.step(action)

    def evaluate(self) -> Verdict:
        return self.inner.evaluate()

    def state_hash(self) -> str:
        return self.inner.state_hash()

    def close(self) -> None:
        self.inner.close()

    @property
    def done(self) -> bool:  # type: ignore[override]
        return self.inner.done

    @property
    def status(self) -> Any:  # type: ignore[override]
        return self.inner.status


class SlowEpisode(BrokenEpisode):
    """Retail's episode whose second step blocks for ``SlowEpisode.hang`` seconds (a sandbox
    that hangs)."""

    hang = 0.5

    def step(self, action: Any) -> Observation:
        if self.inner.steps == 1:
            time.sleep(self.hang)
        return self.inner.step(action)


class BrokenEnv(Environment):
    id = "broken-retail"
    wrapper: type[BrokenEpisode] = BrokenEpisode

    def __init__(self, **_: Any) -> None:
        self.inner = envfactory.make("retail")

    @property
    def difficulties(self) -> list[int]:
        return self.inner.difficulties

    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        return self.inner.task(split, difficulty, index)

    def episode(self, config: EpisodeConfig | None = None) -> Episode:
        return self.wrapper(self.inner.episode(config))

    def tools(self, fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
        return self.inner.tools(fmt)

    def info(self) -> EnvInfo:
        return self.inner.info()


def test_environment_failure_is_env_error_unscored() -> None:
    envfactory.register("broken-retail", BrokenEnv, overwrite=True)
    refs = [TaskRef("broken-retail", "train", 5, i) for i in range(3)]
    summary, records = run("oracle", refs)
    assert summary.status_counts["env_error"] == 3 and summary.reward_mean is None
    for r in records:
        assert r.status == "env_error" and r.reward is None
        assert "the world fell over" in (r.error or "") and len(r.steps) == 2


class SlowEnv(BrokenEnv):
    id = "slow-retail"
    kind = "sandbox"  # may block: the engine runs it in threads
    wrapper = SlowEpisode


def test_a_blocking_world_runs_in_threads_and_times_out_cleanly() -> None:
    envfactory.register("slow-retail", SlowEnv, overwrite=True)
    refs = [TaskRef("slow-retail", "train", 5, i) for i in range(4)]
    config = {"episode_timeout_s": 0.2, "concurrency": 4}
    t0 = time.perf_counter()
    _, records = run("oracle", refs, **config)
    assert time.perf_counter() - t0 < 1.9  # the four hangs overlap: the loop never blocked
    for r in records:  # judged once the hung step let go, and not scored
        assert r.status == "timeout" and r.reward is None and r.rubric
    SlowEpisode.hang = 3.0
    try:
        _, records = run("oracle", refs[:1], call_timeout_s=0.3, **config)
    finally:
        SlowEpisode.hang = 0.5
    assert records[0].status == "env_error" and "in time" in (records[0].error or "")


# -- stop, checkpoint, resume --------------------------------------------------------------


def test_stop_checkpoints_and_a_new_engine_resumes(tmp_path: Path) -> None:
    refs = plan_tasks(["retail"], 12, difficulties=[5])  # long episodes
    config = EngineConfig(group_size=2, concurrency=8, checkpoint_every=1)
    store = TrajectoryStore(tmp_path)

    class StopMidway(ScriptedPolicy):
        """The oracle, which stops the engine on some episode's third call."""

        def session(self, ctx: EpisodeContext) -> ScriptedSession:
            session = super().session(ctx)
            act = session.act

            async def act_then_stop(request: PolicyRequest) -> PolicyReply:
                if request.call_index == 2:
                    first.stop()
                return await act(request)

            session.act = act_then_stop  # type: ignore[method-assign]
            return session

    first = RolloutEngine(StopMidway("oracle"), config=config, store=store)
    summary = first.run_sync(refs)
    store.close()
    assert summary.episodes == 0 and summary.groups["incomplete"] == 12
    assert 0 < summary.paused <= summary.peak_live  # live episodes with calls: checkpointed

    store = TrajectoryStore(tmp_path)
    assert len(store.partials) == summary.paused and not set(store.partials) & set(store.entries)
    second = RolloutEngine(ScriptedPolicy("oracle"), config=config, store=store)
    summary2 = second.run_sync(refs)
    store.close()
    records = list(TrajectoryStore(tmp_path).records())
    assert Counter(r.group_id for r in records) == {r.group_id: 2 for r in refs}
    assert len({r.episode_id for r in records}) == 24
    assert all(r.reward == 1.0 for r in records)
    resumed = [r for r in second.records if r.metrics.get("resumed")]
    assert len(resumed) == summary.paused and summary2.groups["complete"] == 12
    for r in resumed:  # the calls made before the stop are kept, not made again
        assert [c.index for c in r.calls] == list(range(len(r.calls))) and len(r.calls) > 2


def test_peak_live_respects_the_concurrency_limit() -> None:
    summary, _ = run("oracle", plan_tasks(["retail"], 30), group_size=4, concurrency=16)
    assert summary.peak_live == 16 and summary.episodes == 120


def test_async_api_inside_a_running_loop() -> None:
    async def main() -> RunSummary:
        engine = RolloutEngine(ScriptedPolicy("oracle"))
        try:
            return await engine.run(REFS[:3])
        finally:
            await engine.aclose()

    assert asyncio.run(main()).reward_mean == 1.0


def test_rollout_benchmark_reports_its_numbers() -> None:
    """A small instance of ``envfactory bench --rollout`` (the real one holds 10,000)."""
    from envfactory.bench.rollout import bench_rollout

    result = bench_rollout(live=300, throughput_concurrency=32, executors=("worker",), tasks=50)
    assert result.live_peak == 300 and result.steps_per_s > 0
    assert [r.run for r in result.runs] == ["capacity", "throughput"]
    for r in result.runs:
        assert r.reward_mean == 1.0 and r.steps > 0 and r.loop_lag_ms_p99 is not None
