"""``envfactory check`` and ``audit`` on multi-agent worlds: the stronger scripted seat wins
significantly more over at least 200 episodes, and every outcome is confirmed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from multiagent_helpers import MULTI, world

import envfactory
from envfactory.contract.actions import EpisodeStatus
from envfactory.contract.config import EpisodeConfig
from envfactory.multiagent.families.games.base import other
from envfactory.multiagent.families.games.connect_four import ConnectFour, ConnectFourEpisode
from envfactory.quality.audit import AuditReport, audit_world
from envfactory.quality.check import check
from envfactory.quality.stats import binomial_tail


@pytest.mark.parametrize("env_id", MULTI)
def test_strong_beats_weak_and_every_outcome_is_confirmed(env_id: str) -> None:
    report = check(world(env_id), n=200)
    assert report.episodes >= 200
    assert report.strong_beats_weak, report
    assert report.invalid_outcomes == 0, report.problems
    assert report.duplicate_tasks == 0 and report.split_overlap == 0
    assert report.strong_reward_mean > report.weak_reward_mean
    assert report.passed


def test_check_json_contract_on_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "envfactory", "check", "blotto", "-n", "200", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["kind"] == "multiagent" and report["episodes"] >= 200
    assert report["strong_beats_weak"] is True and report["invalid_outcomes"] == 0


class MiscountedEpisode(ConnectFourEpisode):
    """Connect four that credits every win to the loser."""

    def end(self, status: EpisodeStatus = "completed") -> None:
        if self.winner is not None and not self.done:
            self.winner = other(self.winner)
        super().end(status)


class Miscounted(ConnectFour):
    def episode(self, config: EpisodeConfig | None = None) -> MiscountedEpisode:
        return MiscountedEpisode(self, config)


def test_the_audit_confirms_seated_worlds_and_refuses_a_miscounted_one() -> None:
    """``audit`` takes a world with seats through the same entry as any other: its seat check
    (the strong seat beats the weak one, every outcome confirmed) and its tasks rebuilt."""
    honest = audit_world(world("connect_four"), n=40)
    assert not isinstance(honest, AuditReport) and honest.passed, honest
    assert honest.episodes == 40 and honest.invalid_outcomes == 0
    bad = audit_world(Miscounted(), n=40)
    assert not isinstance(bad, AuditReport) and not bad.passed
    assert bad.invalid_outcomes > 0 and any("winner" in p for p in bad.problems)
    single = audit_world(envfactory.make("retail"), n=10)
    assert isinstance(single, AuditReport)


def test_audit_json_on_the_command_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "envfactory", "audit", "blotto", "-n", "60", "--json",
         "--report", str(tmp_path / "audit.html")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (report,) = json.loads(done.stdout)
    assert report["env"] == "blotto" and report["kind"] == "multiagent" and report["passed"]
    assert report["strong_beats_weak"] is True and report["invalid_outcomes"] == 0


def test_envs_json_lists_seats() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "envfactory", "envs", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    items = {i["id"]: i for i in json.loads(done.stdout)}
    for env_id in MULTI:
        assert items[env_id]["kind"] == "multiagent" and items[env_id]["agents"] == 2
    assert all(i["agents"] == 1 for i in items.values() if i["kind"] != "multiagent")


def test_the_sign_test_is_the_binomial_tail_of_fair_flips() -> None:
    def sign_test(wins: int, losses: int) -> float:
        return binomial_tail(wins, wins + losses, 0.5)

    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 0) == pytest.approx(1 / 32)
    assert sign_test(3, 3) == pytest.approx(42 / 64)
    assert sign_test(0, 4) == 1.0
