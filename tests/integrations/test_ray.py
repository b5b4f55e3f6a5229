"""Ray: a local two-CPU cluster, two rollout workers; every group completes exactly once,
also when a worker process is killed mid-run; environment hosts as actors."""

from __future__ import annotations

import functools
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import envfactory
from envfactory.policies.openai import OpenAIPolicy
from envfactory.policies.wrap import ScriptedPolicy
from envfactory.rollout.types import EngineConfig, TaskRef
from envfactory.trajectory.record import EpisodeRecord
from envfactory.trajectory.store import TrajectoryStore

pytestmark = pytest.mark.integrations


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    import ray

    from envfactory.integrations.ray import init_local

    init_local(num_cpus=2)
    yield ray
    ray.shutdown()


def assert_exactly_once(records: list[EpisodeRecord], refs: list[TaskRef], size: int) -> None:
    ids = [r.episode_id for r in records]
    assert len(ids) == len(set(ids)) == len(refs) * size
    per_group = Counter(r.group_id for r in records)
    assert per_group == {ref.group_id: size for ref in refs}
    for ref in refs:
        indices = sorted(r.sample_index for r in records if r.group_id == ref.group_id)
        assert indices == list(range(size))


def test_pool_spreads_groups_over_two_workers(cluster: Any, tmp_path: Path) -> None:
    from envfactory.integrations.ray import RayRolloutPool

    refs = [TaskRef("retail", "train", 1, i) for i in range(10)]
    pool = RayRolloutPool(
        functools.partial(ScriptedPolicy, "oracle"),
        workers=2,
        config=EngineConfig(group_size=2),
        max_concurrency=4,
        chunk=2,
    )
    assert len(set(pool.pids())) == 2 and os.getpid() not in pool.pids()
    with TrajectoryStore(tmp_path / "run") as store:
        records = pool.run(refs, store=store)
    assert_exactly_once(records, refs, 2)
    assert all(r.status == "completed" and r.reward == 1.0 for r in records)
    stored = list(TrajectoryStore(tmp_path / "run").records())
    assert sorted(r.episode_id for r in stored) == sorted(r.episode_id for r in records)
    assert pool.stats.complete == 10 and pool.stats.workers_lost == 0
    pool.shutdown()


def test_worker_killed_mid_run_every_group_once(cluster: Any, server: Any, tmp_path: Path) -> None:
    """The first worker's process is killed (SIGKILL) while one of its groups is mid-episode:
    the unfinished groups run again on a replacement, and every episode is stored once."""
    from envfactory.integrations.ray import RayRolloutPool

    server.state.delay = 0.03  # every model call takes a while
    refs = [TaskRef("retail", "train", 1, i) for i in range(8)]
    policy = functools.partial(OpenAIPolicy, server.base_url, "scripted-brain", api_key="k")
    pool = RayRolloutPool(
        policy,
        workers=2,
        config=EngineConfig(group_size=2, concurrency=2, call_timeout_s=20),
        max_concurrency=2,
        chunk=4,  # the first worker takes groups 0-3, one at a time
    )
    victim = pool.pids()[0]
    later = {ref.group_id for ref in refs[1:4]}
    killed: list[str] = []

    def kill_mid_episode() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with server.state.lock:
                seen = [(r["session"], r["turn"]) for r in server.state.requests]
            mid = [s for s, turn in seen if turn >= 1 and s.split("#")[0] in later]
            if mid:
                os.kill(victim, signal.SIGKILL)
                killed.append(mid[0])
                return
            time.sleep(0.005)

    killer = threading.Thread(target=kill_mid_episode)
    killer.start()
    with TrajectoryStore(tmp_path / "run") as store:
        records = pool.run(refs, store=store)
    killer.join()
    assert killed, "no episode of the first worker's later groups was seen mid-way"
    assert pool.stats.workers_lost == 1 and pool.stats.reruns >= 1
    assert pool.stats.complete == len(refs) and not pool.stats.failed
    assert_exactly_once(records, refs, 2)
    assert all(r.reward == 1.0 for r in records)
    stored = list(TrajectoryStore(tmp_path / "run").records())
    assert_exactly_once(stored, refs, 2)
    # the episode cut short was started again from its first call, and recorded once
    assert server.state.attempts[(killed[0], 0)] >= 2
    assert sum(r.episode_id == killed[0] for r in stored) == 1
    assert victim not in pool.pids()
    pool.shutdown()


def test_env_host_actor_plays_an_episode(cluster: Any) -> None:
    from envfactory.integrations.ray import start_env_host

    host = start_env_host(max_concurrency=8, max_steps=30, num_cpus=0)
    task = envfactory.make("retail").task("train", 1, 3)
    opened = cluster.get(host.open.remote(task.public.task_id))
    assert opened["task"]["instruction"] == task.public.instruction
    assert "gold_plan" not in str(opened)  # only the public half crosses the boundary
    key = opened["key"]
    bad = cluster.get(host.step.remote(key, "{not json"))
    assert bad["kind"] == "tool_error"
    for step in task.hidden.gold_plan:
        action = {"type": "tool_call", "tool": step.tool, "arguments": step.arguments}
        assert cluster.get(host.step.remote(key, action))["kind"] == "tool_result"
    cluster.get(host.step.remote(key, {"type": "message", "content": "Done."}))
    verdict = cluster.get(host.evaluate.remote(key))
    assert verdict["reward"] == 1.0 and verdict["status"] == "completed"
    cluster.get(host.close.remote(key))
    assert cluster.get(host.live.remote()) == 0
    with pytest.raises(cluster.exceptions.RayTaskError, match="no open episode"):
        cluster.get(host.step.remote(key, bad))
    cluster.kill(host)
