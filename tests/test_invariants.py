"""Reward integrity, stated as properties over every domain: the oracle always solves, doing
nothing never pays, random calls earn about nothing, splits never overlap."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envfactory.episode.runner import run_episode
from envfactory.policies.scripted import NoisyOracle, NoOp, Oracle, RandomPolicy
from envfactory.quality.check import check
from envfactory.tasks.types import SPLITS
from envfactory.world.environment import DatabaseEnvironment as Environment

cells = st.tuples(st.sampled_from(SPLITS), st.integers(1, 5), st.integers(0, 40))
fixture_ok = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@fixture_ok
@given(cell=cells, seed=st.integers(0, 10_000))
def test_oracle_solves_and_baselines_fail(
    db_env: Environment, cell: tuple[str, int, int], seed: int
) -> None:
    split, difficulty, index = cell
    task = db_env.task(split, difficulty, index)  # type: ignore[arg-type]
    assert run_episode(db_env, task, Oracle()).reward == 1.0
    assert run_episode(db_env, task, NoOp()).reward == 0.0
    assert (run_episode(db_env, task, RandomPolicy(seed=seed)).reward or 0.0) <= 0.5
    noisy = run_episode(db_env, task, NoisyOracle(skill=0.0, seed=seed)).reward or 0.0
    assert noisy < 1.0


@fixture_ok
@given(cell=cells)
def test_same_cell_same_task(db_env: Environment, cell: tuple[str, int, int]) -> None:
    split, difficulty, index = cell
    fresh = db_env.factory.make(split, difficulty, index)  # type: ignore[arg-type]
    again = db_env.factory.make(split, difficulty, index)  # type: ignore[arg-type]
    assert fresh.public == again.public
    assert fresh.hidden == again.hidden


@fixture_ok
@given(a=cells, b=cells)
def test_different_splits_ask_for_different_things(
    db_env: Environment, a: tuple[str, int, int], b: tuple[str, int, int]
) -> None:
    if a[0] == b[0]:
        return
    ta = db_env.task(*a)  # type: ignore[arg-type]
    tb = db_env.task(*b)  # type: ignore[arg-type]
    assert ta.hidden.fingerprint != tb.hidden.fingerprint
    rows_a = {(c.table, c.id) for c in ta.hidden.target if c.before is not None}
    rows_b = {(c.table, c.id) for c in tb.hidden.target if c.before is not None}
    assert not rows_a & rows_b or ta.hidden.goals != tb.hidden.goals


def test_check_over_500_tasks_passes(db_env: Environment) -> None:
    """The issue's bar, per domain: oracle 1.0, no-op <= 0.02, random <= 0.05, no unsolvable,
    duplicate or shared task, over 500 tasks across all difficulties and splits."""
    report = check(db_env, n=500)
    assert report.tasks == 500
    assert report.oracle_success_rate == 1.0
    assert report.noop_reward_mean <= 0.02
    assert report.random_reward_mean <= 0.05
    assert report.unsolvable == 0
    assert report.duplicate_tasks == 0
    assert report.split_overlap == 0
    assert report.passed


def test_difficulty_ladder_grows_plans(db_env: Environment) -> None:
    report = check(db_env, n=150)
    steps = [report.by_difficulty[d].plan_steps_mean for d in db_env.difficulties]
    assert steps[-1] > steps[0] * 2
    assert all(b >= a * 0.9 for a, b in itertools.pairwise(steps))


def test_initial_state_never_passes(db_env: Environment) -> None:
    ep = db_env.episode()
    for d in db_env.difficulties:
        for i in range(10):
            ep.reset(db_env.task("train", d, i))
            assert ep.evaluate().reward == 0.0
