"""The simulated-learner comparison: the contract of ``envfactory curriculum simulate --json``
and the claims the docs make of it (20 seeds)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from envfactory.cli.main import app
from envfactory.curriculum.learners import SimulatedLearner


def test_learners_learn_at_their_edge() -> None:
    import random

    a = SimulatedLearner(["e"], random.Random(0))
    start = a.skill["e"]
    assert a.p("e", start) == pytest.approx(0.5)
    easy, edge, hard = (SimulatedLearner(["e"], random.Random(0)) for _ in range(3))
    for _ in range(300):
        easy.attempt("e", start - 6)
        edge.attempt("e", start + 0.5)
        hard.attempt("e", start + 8)
    assert edge.skill["e"] - start > 5 * max(easy.skill["e"] - start, hard.skill["e"] - start)


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    plot = tmp_path_factory.mktemp("sim") / "sim.png"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "envfactory",
            "curriculum",
            "simulate",
            "--json",
            "--plot",
            str(plot),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    data = json.loads(out.stdout)
    assert plot.stat().st_size > 10_000 and plot.read_bytes()[:4] == b"\x89PNG"
    return dict(data)


def test_the_json_contract(result: dict[str, object]) -> None:
    for key in (
        "seeds",
        "frontier_in_band_fraction",
        "final_skill_curriculum",
        "final_skill_fixed",
        "final_skill_uniform",
    ):
        assert isinstance(result[key], (int, float)), key
    assert result["seeds"] == 20


def test_curriculum_keeps_the_frontier_in_band_and_learns_most(result: dict[str, object]) -> None:
    spread = result["spread"]
    assert isinstance(spread, dict)
    assert spread["frontier_in_band_fraction"]["min"] >= 0.8  # every seed, not just the mean
    cur, fixed, uniform = (result[f"final_skill_{a}"] for a in ("curriculum", "fixed", "uniform"))
    assert isinstance(cur, float) and isinstance(fixed, float) and isinstance(uniform, float)
    assert cur > fixed and cur > uniform
    assert result["curriculum_beats_fixed"] == 20 and result["curriculum_beats_uniform"] == 20


def test_simulate_rejects_bad_options() -> None:
    out = CliRunner().invoke(app, ["curriculum", "simulate", "--seeds", "0"])
    assert out.exit_code == 2 and "seeds" in out.output
