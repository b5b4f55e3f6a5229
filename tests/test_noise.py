"""Injected tool faults: deterministic, recoverable by retrying, invisible to the verifier."""

from __future__ import annotations

from envfactory.contract.actions import ToolCall
from envfactory.contract.config import EpisodeConfig, NoiseConfig
from envfactory.contract.tasks import SPLITS
from envfactory.db.environment import DatabaseEnvironment as Environment
from envfactory.episode.noise import fault
from envfactory.episode.runner import run_episode
from envfactory.policies.scripted import Oracle

NOISY = EpisodeConfig(noise=NoiseConfig(rate=0.1))


def test_faults_are_deterministic_and_of_every_kind() -> None:
    config = NoiseConfig(rate=0.3)
    draws = [fault(config, "retail/train/1/0", i, "get_order") for i in range(400)]
    again = [fault(config, "retail/train/1/0", i, "get_order") for i in range(400)]
    assert draws == again
    codes = {d.code for d in draws if d is not None}
    assert codes == {"transient_error", "rate_limited", "timeout", "malformed_response"}
    rate = sum(d is not None for d in draws) / len(draws)
    assert 0.2 < rate < 0.4
    limited = next(d for d in draws if d is not None and d.code == "rate_limited")
    assert limited.retry_after == 1.0


def test_oracle_that_retries_still_scores_one(db_env: Environment) -> None:
    tasks = [db_env.task(s, d, i) for s in SPLITS for d in db_env.difficulties for i in range(4)]
    for task in tasks:
        ep = db_env.episode(NOISY)
        assert run_episode(db_env, task, Oracle(), ep).reward == 1.0
        ep.close()


def test_a_policy_that_never_retries_loses_reward(db_env: Environment) -> None:
    ladder = [d for d in db_env.difficulties if d > 0]  # the starter's single call rarely faults
    tasks = [db_env.task("train", d, i) for d in ladder for i in range(10)]
    total = 0.0
    for task in tasks:
        ep = db_env.episode(NOISY)
        total += run_episode(db_env, task, Oracle(retry=False), ep).reward or 0.0
        ep.close()
    assert total / len(tasks) < 0.95


def test_faulted_calls_change_nothing_and_leave_no_trace(retail: Environment) -> None:
    ep = retail.episode(EpisodeConfig(noise=NoiseConfig(rate=1.0, kinds=("malformed",))))
    task = retail.task("train", 1, 0)
    ep.reset(task)
    step = next(s for s in task.hidden.gold_plan if s.tool in retail.world.write_tools)
    obs = ep.step(ToolCall(tool=step.tool, arguments=step.arguments))
    assert obs.error is not None and obs.error.code == "malformed_response"
    assert ep.changes() == [] and ep.log == []
