"""tau2-retail-procedural: envfactory's task synthesis over tau2's database and tools, and the
checks the issue names (``envfactory check tau2-retail``; the audit of the procedural world)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from envfactory.db.environment import DatabaseEnvironment
from envfactory.episode.runner import run_episode
from envfactory.peers.tau2.environment import Tau2RetailEnvironment
from envfactory.policies.scripted import Oracle
from envfactory.quality.audit import audit

ROOT = Path(__file__).resolve().parents[2]


def test_the_same_world_with_an_unbounded_supply(
    tau2: Tau2RetailEnvironment, procedural: DatabaseEnvironment
) -> None:
    assert procedural.kind == "db" and procedural.world.imported
    assert procedural.world.base.hash == tau2.world.base.hash
    assert list(procedural.world.tools) == list(tau2.world.tools)
    assert procedural.difficulties == [0, 1, 2, 3, 4, 5]
    total = sum(
        procedural.capacity(s, d) or 0 for s in ("train", "test") for d in procedural.difficulties
    )
    assert total > 10 * 114
    levels = {g.level for g in procedural.spec.goals}
    assert levels == {1, 2, 3, 4}
    task = procedural.task("test", 4, 3)
    assert run_episode(procedural, task, Oracle()).reward == 1.0
    assert procedural.task("test", 4, 3).hidden == task.hidden  # a pure function of the cell


def test_policy_checks_are_verified(procedural: DatabaseEnvironment) -> None:
    """tau2's policy says to check an order's status before acting on it: the procedural
    world's verifier holds agents to it."""
    task = next(
        t
        for i in range(50)
        if (t := procedural.task("train", 1, i)).hidden.goals == ["cancel_pending"]
    )
    ep = procedural.episode()
    ep.reset(task)
    cancel = task.hidden.gold_plan[-1]
    ep.step({"type": "tool_call", "tool": cancel.tool, "arguments": cancel.arguments})
    ep.step({"type": "message", "content": "Done."})
    verdict = ep.evaluate()
    assert verdict.item("state").score == 1.0
    assert verdict.item("rules").score == 0.0 and verdict.reward == 0.0


def test_the_procedural_world_passes_the_audit(procedural: DatabaseEnvironment) -> None:
    """A small audit here; tests/test_audit.py audits it with every database world."""
    report = audit(procedural, n=100)
    assert report.passed, report.problems
    assert report.tool_coverage >= 0.8 and report.plan_shapes_per_1k >= 50


def test_check_covers_the_imported_tasks() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "envfactory", "check", "tau2-retail", "--json", "-n", "500"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    report = json.loads(done.stdout)
    assert report["env"] == "tau2-retail" and report["tasks"] == 112
    assert report["oracle_success_rate"] == 1.0 and report["unsolvable"] == 0
    assert report["noop_reward_mean"] == 0.0 and report["random_reward_mean"] <= 0.05
    assert report["passed"]


def test_the_strict_import_passes_the_audit(strict: Tau2RetailEnvironment) -> None:
    """A fixed list of 112 tasks on one level: sampled whole (never past its 81 train tasks),
    its shapes counted as a rate, nothing to grade across levels. No exploit earns anything
    and none voids an episode (before, the do-nothing tasks 50 and 57 paid enumeration, fuzz
    and mass writes 0.033, and a test task whose answer a train task says paid replay)."""
    report = audit(strict, n=500)
    assert report.passed, report.problems
    assert report.tasks == 112 and report.difficulty_monotonic
    assert len(report.plan_lengths) == 81  # every train task, and no index past them
    assert report.oracle_success_rate == 1.0 and report.noop_reward_mean == 0.0
    assert report.voided_by_agent == 0
    # test task 10 asks "visa, mastercard, or amex": an answer among a choice's options is
    # no leak (the grader counts the options as rivals)
    assert all(s.mean == 0.0 for s in report.exploits.values()), report.exploits


def test_the_audit_names_the_leak_in_tau2s_own_split(tau2: Tau2RetailEnvironment) -> None:
    """tau2's split as tau2 ships it: replaying train plans solves 4 of its 40 test tasks (their
    targets are train targets), and the audit says so; nothing else fails."""
    report = audit(tau2, n=500)
    assert report.tasks == 112 and len(report.plan_lengths) == 72
    assert report.exploits["replay"].episodes == 40 and report.exploits["replay"].mean == 0.1
    assert [p.split(" earns")[0] for p in report.problems] == ["exploit replay"]
