"""``envfactory rollout`` as a user runs it, against the contracts other tools rely on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envfactory", "rollout", *args],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_rollout_json_contract(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["--envs", "retail,hotel", "--policy", "oracle", "--n-tasks", "4", "--group-size", "2",
            "--concurrency", "8", "--out", str(out), "--json", "--parquet"]  # fmt: skip
    done = cli(*args)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["episodes"] == 16 and summary["reward_mean"] == 1.0
    assert summary["status_counts"]["completed"] == 16 and isinstance(
        summary["status_counts"], dict
    )
    assert summary["out"] == str(out / "episodes.jsonl")
    lines = (out / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 16
    for line in lines:
        ep = json.loads(line)
        for key in (
            "episode_id",
            "group_id",
            "task_id",
            "env_id",
            "status",
            "reward",
            "messages",
            "calls",
        ):
            assert key in ep
    assert pq.read_table(out / "episodes.parquet").num_rows == 16
    assert str(out / "episodes.parquet") in summary["files"]
    # a finished run resumes to the same totals without running anything again
    again = json.loads(cli(*args[:-1], "--resume").stdout)
    assert again["episodes"] == 16 and again["groups"]["skipped"] == 8
    assert (out / "episodes.jsonl").read_text().splitlines() == lines


def test_rollout_table_and_clear_errors(tmp_path: Path) -> None:
    done = cli(
        "--envs", "retail", "--policy", "noop", "--n-tasks", "3", "--out", str(tmp_path / "a")
    )
    assert done.returncode == 0 and "reward by environment and difficulty" in done.stdout
    assert "episodes.jsonl" in done.stdout
    again = cli(
        "--envs", "retail", "--policy", "noop", "--n-tasks", "3", "--out", str(tmp_path / "a")
    )
    assert again.returncode == 2 and "pass --resume" in again.stderr
    other = cli("--envs", "retail", "--n-tasks", "5", "--resume", "--out", str(tmp_path / "a"))
    assert other.returncode == 2 and "other tasks" in other.stderr
    assert cli("--policy", "genius", "--out", str(tmp_path / "b")).returncode == 2
    assert cli("--envs", "atlantis", "--out", str(tmp_path / "c")).returncode == 2
