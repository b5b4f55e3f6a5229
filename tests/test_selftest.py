"""The audit's self-test: planted defects pay where the engine lets them, their exploits pay
nowhere else, and the self-test reports recall with its controls passing."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import envfactory
from envfactory.cli.main import app
from envfactory.quality.mutant_exploits import liveness, stated_number
from envfactory.quality.mutants import CLASSES, Mutant, catalogue
from envfactory.quality.selftest import SelfTest
from envfactory.registry import list_envs

# The engine keeps these out: task synthesis rejects a request that states an answer in any
# form (verify.spoken.stated_in) and keeps any one answer to 10% of a template's anchors (a
# dominant value is never asked often), the grader counts dates said one by one, and a
# failing tool expression is a tool error.
NOT_LIVE = {
    "skewed-answers-retail",
    "skewed-answers-hr",
    "answer-in-request-digits",
    "answer-in-request-cents",
    "answer-in-request-words",
    "oracle-user-clinic",
    "voidable-expression",
}


def test_every_class_is_planted_on_named_mutants() -> None:
    mutants = catalogue()
    assert {m.defect for m in mutants} == set(CLASSES)
    assert len({m.name for m in mutants}) == len(mutants)
    assert len({m.base for m in mutants}) >= 4
    assert {m.name for m in mutants} >= NOT_LIVE


@pytest.mark.parametrize("mutant", catalogue(), ids=lambda m: m.name)
def test_a_planted_defect_pays_and_its_exploit_pays_nowhere_else(mutant: Mutant) -> None:
    """Each mutant's exploit earns on the mutant (unless the engine keeps the defect out)
    and not on its unmutated base world."""
    with mutant.planted() as env:
        shown = liveness(env, mutant.exploit)
    assert shown.live == (mutant.name not in NOT_LIVE), shown
    assert not liveness(envfactory.make(mutant.base), mutant.exploit).live


def test_numbers_said_in_words_are_read() -> None:
    assert stated_number("Line 555-201-1234 shows 12 point 5 GB, right?") == 12.5
    assert stated_number("I was quoted 191 dollars and 7 cents.") == 191.07
    assert stated_number("Order ORD-00012, please.") is None


def test_selftest_reports_recall_with_controls_passing() -> None:
    """``envfactory audit --selftest --json`` on a small sample (the full run is a benchmark:
    docs/audit.md): the keys, the control passes, the planted classes are live, and a replayed
    split is refused."""
    classes = ["replay_leak", "rule_skippable"]
    args = ["audit", "--selftest", "--selftest-sample", "1", "-n", "10", "--json"]
    args += ["--selftest-diversity", "200", *(f"--selftest-class={c}" for c in classes)]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    assert not [e for e in list_envs() if e.startswith("mutant-")]  # forgotten when done
    result = SelfTest.model_validate(json.loads(out.stdout))
    assert sorted(result.classes) == sorted(classes) and result.mutants == 2
    assert [c.base for c in result.controls] == ["retail"] and result.controls_passed
    assert all(stats.live == stats.planted == 1 for stats in result.classes.values())
    assert result.refused == sum(r.refused for r in result.results)
    assert result.recall == round(result.refused / result.mutants, 4)
    replayed = next(r for r in result.results if r.defect == "replay_leak")
    assert replayed.refused and any("replay" in p for p in replayed.refused_by)
