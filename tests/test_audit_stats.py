"""The audit's sampled checks are tests with a stated false-alarm rate, and a level with no
tasks is reported, never a crash (issue 42)."""

from __future__ import annotations

import random

import pytest

import envfactory
from envfactory.contract.errors import SynthesisError
from envfactory.quality.audit import BASELINE_MAX, AuditReport, _graded, _shortfalls, audit
from envfactory.quality.report import render
from envfactory.quality.stats import ALPHA, gain_power, p_above, p_gain

STEPS = {0: 2.0, 1: 3.0, 2: 4.0}


def _tasks(rate: float, n: int) -> list[float]:
    """``n`` tasks whose share of successful noisy runs averages ``rate`` (thirds: 3 runs)."""
    hits = round(rate * 3 * n)
    return [min(3, max(0, hits - 3 * i)) / 3 for i in range(n)]


@pytest.mark.parametrize(
    ("low", "high", "margin"),
    [(0.5, 0.5, 0.0), (0.5, 0.6, 0.1), (0.8, 0.7, -0.1), (0.95, 0.85, -0.1), (0.2, 0.1, -0.1)],
)
def test_p_gain_keeps_its_false_alarm_rate(low: float, high: float, margin: float) -> None:
    """At the boundary of its null (a gain of exactly ``margin``), a gain over the margin is
    found at most about ALPHA of the time, on 10 and 60 tasks a sample. Simulated with tasks
    that all succeed or all fail (the most spread a task's share can have; 3 independent
    runs a task are less spread, and found less often)."""
    rng = random.Random(7)
    for n in (10, 60):
        trials = 2000
        found = sum(
            p_gain(
                [float(rng.random() < low) for _ in range(n)],
                [float(rng.random() < high) for _ in range(n)],
                margin,
            )
            < ALPHA
            for _ in range(trials)
        )
        assert found / trials <= 2 * ALPHA, (n, found)


def test_p_gain_finds_a_real_gain_and_a_margin_moves_it() -> None:
    low, high = _tasks(0.3, 60), _tasks(0.8, 60)
    assert p_gain(low, high) < 1e-6 and p_gain(high, low) > 0.999
    assert p_gain(low, high, 0.4) > p_gain(low, high, 0.1)
    assert p_gain([], high) == 1.0
    # all 0 and all 1 samples are not certainty on 5 tasks
    assert p_gain([0.0] * 5, [1.0] * 5, 0.9) > ALPHA


def test_gain_power_grows_with_the_sample() -> None:
    small, large = gain_power(0.7, 10, 10, -0.1), gain_power(0.7, 2000, 2000, -0.1)
    assert 0 < small < 0.05 < 0.99 < large <= 1.0
    assert gain_power(0.7, 0, 10, -0.1) == 0.0


def test_a_rise_on_ten_tasks_a_level_is_noise() -> None:
    """The issue's case: at ``-n 60`` a terminal family's noisy oracle did better at level 1
    than level 0 (0.64 vs 0.85 on ~10 tasks each). Not significant at 1%: graded. Before,
    a rise over two standard errors of the tries failed the check (here 0.212 against 0.209,
    33 tries a level)."""
    g = _graded(STEPS, {0: _tasks(0.64, 11), 1: _tasks(0.85, 11), 2: _tasks(0.2, 11)})
    assert g.graded and g.problems == []
    assert set(g.rise_p) == {1, 2} and g.rise_p[1] > g.alpha  # type: ignore[operator]
    assert g.alpha == pytest.approx(ALPHA / 3)
    assert g.fall_p is not None and g.fall_p > 0.9


def test_a_significant_rise_or_a_flat_curve_is_refused() -> None:
    rising = _graded(STEPS, {0: _tasks(0.3, 200), 1: _tasks(0.7, 200), 2: _tasks(0.1, 200)})
    assert not rising.graded and rising.rise_p[1] < 1e-9
    (why,) = rising.problems
    assert why.startswith("noisy-oracle success does not fall with difficulty: [0.3, 0.7, 0.1]")
    assert "level 1 gains over 0.1" in why and "top is not" not in why
    flat = {d: _tasks(0.5, 1500) for d in STEPS}
    refused = _graded(STEPS, flat)
    assert not refused.graded and refused.fall_power is not None and refused.fall_power > 0.99
    assert "the top is not 0.1 below the bottom" in refused.problems[0]
    # an inverted curve is refused on ten tasks a level
    inverted = _graded(STEPS, {0: _tasks(0.2, 10), 1: _tasks(0.5, 10), 2: _tasks(0.8, 10)})
    assert not inverted.graded and inverted.fall_p is not None and inverted.fall_p < ALPHA / 3


def test_a_small_flat_sample_passes_and_says_it_had_little_power() -> None:
    """Six tasks a level cannot tell a flat curve from a graded one: no evidence, no
    refusal, and the power to refuse says so."""
    g = _graded(STEPS, {d: _tasks(0.5, 6) for d in STEPS})
    assert g.graded and g.fall_power is not None and g.fall_power < 0.05


def test_one_level_has_nothing_to_grade() -> None:
    g = _graded({1: 3.0}, {1: _tasks(0.5, 40)})
    assert g.graded and g.rise_p == {} and g.fall_p is None


@pytest.fixture(scope="module")
def small() -> AuditReport:
    """retail audited on 3 tasks."""
    return audit(envfactory.make("retail"), n=3, diversity=20, exploit_n=2)


def test_a_level_a_small_sample_misses_is_reported_not_a_crash(small: AuditReport) -> None:
    """``-n 3`` over retail's six levels samples levels 0 and 1 only. Before, the audit
    raised KeyError on level 2; now the empty levels are listed and grading runs over the
    two it has; the report page says so."""
    report = small
    assert report.empty_levels == [2, 3, 4, 5]
    assert report.tasks == 3 and set(report.curves["noisy_oracle"]) == {0, 1}
    assert not any("no tasks" in p for p in report.problems)
    assert set(report.noisy_oracle_rise_p) == {1}
    page = render([report])
    assert "Levels with no audited task: 2, 3, 4, 5." in page
    assert "noop p = 1 (95% bound 0.632)" in page and "to level 1 p = " in page


def test_a_level_with_no_tasks_is_a_problem_not_a_crash() -> None:
    """A world whose level 3 has no task in any split (every cell empty, every draw a
    SynthesisError): the audit finishes, lists the level and names it a problem."""
    env = envfactory.make("retail")

    class Hollow(type(env)):  # type: ignore[misc]
        def task(self, split, difficulty=1, index=0):  # type: ignore[no-untyped-def]
            if difficulty == 3:
                raise SynthesisError(f"no task at {split}/{difficulty}/{index}")
            return super().task(split, difficulty, index)

        def capacity(self, split, difficulty):  # type: ignore[no-untyped-def]
            return 0 if difficulty == 3 else super().capacity(split, difficulty)

    hollow = Hollow.__new__(Hollow)
    hollow.__dict__.update(env.__dict__)
    report = audit(hollow, n=24, diversity=30, exploit_n=4)
    assert report.empty_levels == [3] and 3 not in report.curves["noisy_oracle"]
    assert "difficulty 3 has no tasks in any split" in report.problems
    assert not report.passed


def test_a_baseline_fails_on_evidence_not_on_a_raw_mean(small: AuditReport) -> None:
    """A baseline earning 0.1 on 20 episodes (2 paid) is not evidence of more than 0.05
    (p = 0.26); on 200 episodes (20 paid) it is (p = 0.003)."""
    base = small
    for episodes, expected in ((20, False), (200, True)):
        rewards = [1.0] * (episodes // 10) + [0.0] * (episodes - episodes // 10)
        p = p_above(rewards, BASELINE_MAX)
        r = base.model_copy(
            update={"noop_reward_mean": 0.1, "baseline_p": {**base.baseline_p, "noop": p}}
        )
        failed = [s for s in _shortfalls(r) if s.startswith("noop baseline earns 0.1")]
        assert bool(failed) is expected, (episodes, p)
