"""Curriculum state survives a process killed mid-run: nothing acknowledged is lost, nothing
is counted twice, and the run carries on where it stopped."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from envfactory.curriculum import Curriculum, CurriculumConfig
from envfactory.trajectory.store import read_records

CHILD = textwrap.dedent(
    """
    import random, sys
    from envfactory.curriculum import Curriculum, CurriculumConfig
    from envfactory.curriculum.learners import SimulatedLearner

    path, total = sys.argv[1], int(sys.argv[2])
    cfg = CurriculumConfig(window=3, raise_at=0.7, min_samples=8, memory=12)
    cur = Curriculum(path, cfg, seed=7)
    for env in ("x", "y"):
        cur.add(env, list(range(1, 21)))
    learner = SimulatedLearner(["x", "y"], random.Random(1))
    for i in range(total):
        episode = f"ep{i}"
        if cur.store.counted(episode):
            continue
        draw = cur.draw()
        cur.take_index(draw, "train")
        ok = learner.attempt(draw.env_id, draw.difficulty)
        cur.record(episode, draw.env_id, draw.difficulty, float(ok))
        print("ack", episode, flush=True)
    print("done", flush=True)
    """
)
TOTAL = 1200


def _start(script: Path, db: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(script), str(db), str(TOTAL)],
        stdout=subprocess.PIPE,
        text=True,
    )


def test_killed_mid_run_loses_no_count(tmp_path: Path) -> None:
    script, db = tmp_path / "child.py", tmp_path / "cur.sqlite"
    script.write_text(CHILD)
    child = _start(script, db)
    acked = []
    assert child.stdout is not None
    for line in child.stdout:
        if line.startswith("ack"):
            acked.append(line.split()[1])
        if len(acked) >= 300:
            os.kill(child.pid, signal.SIGKILL)
            break
    child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    with sqlite3.connect(db) as conn:
        counted = {r[0] for r in conn.execute("SELECT episode_id FROM outcomes")}
    assert set(acked) <= counted  # every acknowledged outcome is on disk
    assert len(counted) < TOTAL  # it was stopped mid-run

    again = _start(script, db)
    out, _ = again.communicate(timeout=600)
    assert again.returncode == 0 and out.strip().endswith("done")
    resumed = [line.split()[1] for line in out.splitlines() if line.startswith("ack")]
    assert not set(resumed) & counted  # nothing counted before was counted again
    cur = Curriculum(db)
    outcomes = cur.store.all_outcomes()
    assert len(outcomes) == TOTAL == len({o.episode_id for o in outcomes})
    assert sum(n for n, _ in cur.store.counts().values()) == TOTAL
    assert max(cur.frontier(e) for e in ("x", "y")) > 3  # the learner was promoted
    replay = Curriculum(
        ":memory:", CurriculumConfig(window=3, raise_at=0.7, min_samples=8, memory=12)
    )
    for env in ("x", "y"):
        replay.add(env, list(range(1, 21)))
    for o in outcomes:
        replay.record(o.episode_id, o.env_id, o.difficulty, o.reward)
    assert [s.model_dump() for s in replay.state()] == [s.model_dump() for s in cur.state()]


def _rollout(out: Path, db: Path, *extra: str) -> subprocess.Popen[str]:
    args = [
        sys.executable, "-m", "envfactory", "rollout", "--envs", "retail,banking",
        "--policy", "noisy-oracle", "--group-size", "2", "--n-tasks", "8", "--rounds", "4",
        "--curriculum", str(db), "--out", str(out), "--json", *extra,
    ]  # fmt: skip
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _outcomes(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_rollout_killed_mid_run_resumes_with_exact_counts(tmp_path: Path) -> None:
    out, db = tmp_path / "run", tmp_path / "cur.sqlite"
    first = _rollout(out, db)
    deadline = time.monotonic() + 300
    while _outcomes(db) < 6 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    first.kill()
    first.wait(timeout=60)
    assert first.returncode == -signal.SIGKILL, first.stderr.read() if first.stderr else ""
    with sqlite3.connect(db) as conn:
        done = conn.execute("SELECT COUNT(*) FROM rounds WHERE done = 1").fetchone()[0]
    assert done < 4  # stopped mid-run

    refused = _rollout(out, db)
    assert refused.wait(timeout=300) == 2  # no --resume: the folder holds a run
    second = _rollout(out, db, "--resume")
    stdout, stderr = second.communicate(timeout=600)
    assert second.returncode == 0, stderr
    shown = json.loads(stdout)
    assert {s["env_id"] for s in shown["curriculum"]} == {"retail", "banking"}
    assert shown["rounds"]  # the rounds this invocation ran

    records = [
        r for folder in sorted(out.glob("round-*")) for r in read_records(folder / "episodes.jsonl")
    ]
    assert len(records) == 4 * 8 * 2
    cur = Curriculum(db)
    counted = {o.episode_id: o for o in cur.store.all_outcomes()}
    scored = {r.episode_id: r for r in records if r.scored}
    assert set(counted) == set(scored)  # every scored episode counted, each exactly once
    for eid, o in counted.items():
        assert (o.env_id, o.difficulty, o.reward) == (
            scored[eid].env_id,
            scored[eid].difficulty,
            scored[eid].reward,
        )
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM rounds WHERE done = 1").fetchone()[0] == 4
