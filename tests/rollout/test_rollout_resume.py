"""Kill a run at any moment, resume it: every group complete exactly once, nothing lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from chat_server import ChatServer

from envfactory.trajectory import EpisodeRecord, read_records

GROUP = 3


def rollout(server: ChatServer, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "envfactory", "rollout",
        "--envs", "retail,hotel", "--n-tasks", "6", "--group-size", str(GROUP),
        "--oversample", "1", "--concurrency", "6", "--policy", "openai",
        "--base-url", server.base_url, "--model", "scripted-brain", "--retries", "3",
        "--out", str(out), "--json", *extra,
    ]  # fmt: skip


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_sigkill_mid_run_then_resume(server: ChatServer, tmp_path: Path) -> None:
    server.state.delay = 0.03  # slow enough to be caught mid-way
    out = tmp_path / "run"
    proc = subprocess.Popen(rollout(server, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while lines(out / "episodes.jsonl") < 8 or lines(out / "partial.jsonl") < 4:
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
        assert time.time() < deadline, "the run made no progress"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {r.episode_id for r in read_records(out / "episodes.jsonl")}
    checkpointed = {
        json.loads(line)["episode_id"]
        for line in (out / "partial.jsonl").read_bytes().splitlines()
        if line.endswith(b"}")
    } - before
    assert 8 <= len(before) < 12 * GROUP and checkpointed
    with (out / "episodes.jsonl").open("ab") as f:  # as if killed in the middle of a write
        f.write(b'{"episode_id": "retail/train/1/0#9", "group_id": "ret')

    done = subprocess.run(rollout(server, out, "--resume"), capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    summary = json.loads(done.stdout)
    records = list(read_records(out / "episodes.jsonl"))

    ids = [r.episode_id for r in records]
    assert len(ids) == len(set(ids)), "an episode was recorded twice"
    assert before <= set(ids), "an episode recorded before the kill was lost"
    kept = Counter(r.group_id for r in records if r.status != "infra_error")
    assert len(kept) == 12 and set(kept.values()) == {GROUP}
    assert all(r.status == "completed" and r.reward == 1.0 for r in records)
    assert summary["episodes"] == len(records) == 12 * GROUP
    assert summary["reward_mean"] == 1.0 and summary["groups"]["complete"] == 12
    assert summary["out"] == str(out / "episodes.jsonl")
    # episodes checkpointed when the run died carried on from their checkpoints
    resumed = [r for r in records if r.episode_id in checkpointed]
    assert resumed
    for r in resumed:  # replaying a checkpoint reached the recorded states exactly
        assert r.metrics["resumed"] == 1 and "resume_restarted" not in r.metrics
    for r in resumed:
        assert [c.index for c in r.calls] == list(range(len(r.calls)))
        assert isinstance(r, EpisodeRecord) and r.calls[0].prompt_ids
