"""The audit scores every environment, and its report opens in a real browser with its plots."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import envfactory
from envfactory.quality.audit import audit

KEYS = (
    "env",
    "oracle_success_rate",
    "noop_reward_mean",
    "random_reward_mean",
    "spam_reward_mean",
    "guess_reward_mean",
    "difficulty_monotonic",
    "deterministic",
    "tool_coverage",
    "plan_shapes_per_1k",
    "instructions_distinct_per_1k",
    "exploits",
    "voided_by_agent",
    "passed",
    "baseline_p",
    "baseline_bound",
    "noisy_oracle_rise_p",
    "noisy_oracle_fall_p",
    "noisy_oracle_fall_power",
    "empty_levels",
)
EXPLOITS = {
    "enumerate",
    "enumerate_one",
    "shotgun",
    "shotgun_long",
    "fuzz",
    "mass_writes",
    "replay",
} | {
    "dump_after_work",
    "dump_spread",
}
STATS = {"mean", "max", "episodes", "did_the_work", "upper", "p", "refused"}
SEARCHES = {"write_sweep", "counterfactual", "collateral"}  # in every database world


DB_ENVS = [e for e in envfactory.list_envs() if envfactory.make(e).kind == "db"]


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], Path]:
    """``envfactory audit --json`` over every database world, as a user runs it (other kinds
    of world audit themselves in their own tests, at sizes their runtimes afford)."""
    report = tmp_path_factory.mktemp("audit") / "audit.html"
    args = ["audit", *DB_ENVS, "--json", "-n", "120", "--report", str(report)]
    done = subprocess.run(
        [sys.executable, "-m", "envfactory", *args],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    results: list[dict[str, Any]] = json.loads(done.stdout)
    return results, report


def test_every_database_world_passes_the_audit(
    audited: tuple[list[dict[str, Any]], Path],
) -> None:
    results, _ = audited
    assert {r["env"] for r in results} == set(DB_ENVS)
    for r in results:
        assert set(KEYS) <= set(r), r["env"]
        assert r["passed"], f"{r['env']}: {r['problems']}"
        assert r["oracle_success_rate"] == 1.0
        for baseline in ("noop", "random", "spam", "guess"):
            assert r[f"{baseline}_reward_mean"] <= 0.05, (r["env"], baseline)
        assert r["tool_coverage"] >= 0.8
        assert r["plan_shapes_per_1k"] >= 50
        assert set(r["exploits"]) >= EXPLOITS | SEARCHES, r["env"]
        for name, stats in r["exploits"].items():
            assert set(stats) == STATS
            assert 0 <= stats["did_the_work"] <= stats["episodes"] and stats["episodes"] > 0
            assert not stats["refused"] and stats["p"] >= 0.01, (r["env"], name, stats)
        assert r["voided_by_agent"] == 0, r["env"]


def test_at_least_twelve_database_worlds(audited: tuple[list[dict[str, Any]], Path]) -> None:
    results, _ = audited
    db = [r for r in results if r["kind"] == "db" and r["passed"]]
    assert len(db) >= 12, [r["env"] for r in db]


def test_audit_flags_a_broken_environment() -> None:
    """A world whose gold plans are wrong fails the audit, with the reason."""
    env = envfactory.make("retail")

    class Sabotaged(type(env)):  # type: ignore[misc]
        def task(self, split, difficulty=1, index=0):  # type: ignore[no-untyped-def]
            task = super().task(split, difficulty, index)
            hidden = task.hidden.model_copy(update={"gold_plan": task.hidden.gold_plan[:-1]})
            return type(task)(public=task.public, hidden=hidden, initial_hash=task.initial_hash)

    broken = Sabotaged.__new__(Sabotaged)
    broken.__dict__.update(env.__dict__)
    report = audit(broken, n=40)
    assert not report.passed
    assert report.oracle_success_rate < 1.0
    assert any("oracle" in p for p in report.problems)


def test_an_exploit_that_pays_fails_the_audit() -> None:
    """A world whose test tasks repeat its train tasks: replaying train plans earns reward on
    held-out tasks, and the audit says so (``passed`` false, the exploit named)."""
    env = envfactory.make("retail")

    class Leaky(type(env)):  # type: ignore[misc]
        def task(self, split, difficulty=1, index=0):  # type: ignore[no-untyped-def]
            task = super().task("train", difficulty, index)
            public = task.public.model_copy(update={"split": split})
            return type(task)(public=public, hidden=task.hidden, initial_hash=task.initial_hash)

    leaky = Leaky.__new__(Leaky)
    leaky.__dict__.update(env.__dict__)
    report = audit(leaky, n=60, diversity=50, exploit_n=10)
    assert report.exploits["replay"].mean > 0.02 and report.exploits["replay"].episodes > 0
    assert report.voided_by_agent == 0
    assert not report.passed
    assert any(p.startswith("exploit replay earns") for p in report.problems), report.problems


def _chrome() -> Any:
    from envfactory.web.browser import launch  # the web worlds' headless Chromium

    return launch()


@pytest.mark.skipif(
    not (shutil.which("chromium") and shutil.which("chromedriver")),
    reason="Chromium and chromedriver are not installed (make test installs them as root)",
)
def test_report_renders_its_plots_in_chromium(audited: tuple[list[dict[str, Any]], Path]) -> None:
    results, report = audited
    driver = _chrome()
    try:
        driver.get(report.resolve().as_uri())
        assert "envfactory audit" in driver.title
        images = driver.find_elements("tag name", "img")
        assert len(images) == 3 * len(results)
        for img in images:
            rendered = driver.execute_script(
                "return arguments[0].complete && arguments[0].naturalWidth > 100", img
            )
            assert rendered, img.get_attribute("alt")
        rows = driver.find_elements("css selector", "table.summary tr")
        assert len(rows) == len(results) + 1
    finally:
        driver.quit()
