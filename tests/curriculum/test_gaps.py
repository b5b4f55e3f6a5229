"""Skill gaps from a trajectory store, and a curriculum steered toward them: a simulated agent
blind to cancellations is found out, and gap targeting draws more tasks that need them."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from envfactory.curriculum.gaps import GapTargeter, find_gaps, store_records, targeting_share
from envfactory.policies.wrap import ScriptedPolicy
from envfactory.rollout.run import run_in
from envfactory.rollout.types import TaskRef

CANCEL = "tool:hotel/cancel_reservation"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Hotel episodes of an oracle that botches 70% of its cancellations."""
    out = tmp_path_factory.mktemp("blind") / "run"
    refs = [TaskRef("hotel", "train", d, i) for d in range(6) for i in range(20)]
    policy = ScriptedPolicy("blindspot", blind=("cancel",), miss=0.7)
    asyncio.run(run_in(out, refs, policy))
    return out


def cli(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "envfactory", *args], capture_output=True, text=True, timeout=600
    )
    assert (done.returncode == 0) == ok, done.stderr[-2000:]
    return done


def test_the_blind_spot_is_the_weakest_skill(store: Path) -> None:
    stats = {s.skill: s for s in find_gaps(store_records([store]))}
    cancel = stats[CANCEL]
    assert cancel.in_band and cancel.success < 0.5 and cancel.ci95[0] <= cancel.success
    phone = stats["tool:hotel/update_guest_phone"]
    assert phone.success == 1.0 and not phone.in_band and phone.weakness == 0.0
    ranked = [s.skill for s in find_gaps(store_records([store])) if s.in_band]
    assert CANCEL in ranked[:5]


def test_infrastructure_faults_are_not_counted(store: Path) -> None:
    records = list(store_records([store]))
    faulted = [r.model_copy(update={"status": "infra_error", "reward": None}) for r in records]
    assert find_gaps(faulted) == []


def test_targeting_draws_more_tasks_that_need_the_gap(store: Path) -> None:
    stats = find_gaps(store_records([store]))
    share = targeting_share(GapTargeter(stats, focus=3), [("hotel", d) for d in range(6)],
                            [CANCEL], draws=120)  # fmt: skip
    assert share["targeted_share"] > share["plain_share"] + 0.1


def test_gaps_command(store: Path, tmp_path: Path) -> None:
    out = json.loads(cli("gaps", str(store), "--json", "--plot", str(tmp_path / "g.png")).stdout)
    assert out["episodes"] == 120 and CANCEL in out["weakest"]
    assert {"skill", "episodes", "success", "ci95", "in_band"} <= set(out["skills"][0])
    assert out["targeting"]["targeted_share"] > out["targeting"]["plain_share"]
    assert (tmp_path / "g.png").stat().st_size > 0
    refused = cli("gaps", str(tmp_path / "nope"), ok=False).stderr
    assert "no such trajectory store" in " ".join(refused.split())  # rich wraps long lines


def test_a_curriculum_run_steered_by_gaps(store: Path, tmp_path: Path) -> None:
    args = ["rollout", "--envs", "hotel", "--policy", "oracle", "--n-tasks", "4"]
    args += ["--group-size", "1", "--out", str(tmp_path / "cur"), "--json"]
    refused = cli(*args, "--gaps", str(store), ok=False)
    assert "--curriculum" in " ".join(refused.stderr.split())
    done = cli(*args, "--curriculum", str(tmp_path / "c.db"), "--rounds", "2", "--gaps", str(store))
    rounds = json.loads(done.stdout)["rounds"]
    assert len(rounds) == 2 and all(r["reward_mean"] == 1.0 for r in rounds)
