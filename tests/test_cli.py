"""The command line, run as a user runs it, against the contracts other tools rely on."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def cli(*args: str, stdin: str | None = None, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "envfactory", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def as_json(*args: str) -> Any:
    return json.loads(cli(*args).stdout)


def test_envs_json() -> None:
    items = as_json("envs", "--json")
    assert isinstance(items, list) and items
    for item in items:
        assert isinstance(item["id"], str)
        assert isinstance(item["tools"], int) and item["tools"] >= 1
        assert item["difficulties"] and all(isinstance(d, int) for d in item["difficulties"])
        for key in ("tables", "rules", "goal_templates"):
            assert isinstance(item[key], int)
    db = [i for i in items if i["kind"] == "db"]
    assert len(db) >= 3
    for item in db:
        assert item["tools"] >= 10 and item["difficulties"] == [0, 1, 2, 3, 4, 5]


def test_tasks_json_prints_public_views() -> None:
    views = as_json("tasks", "retail", "--split", "test", "--difficulty", "3", "-n", "4", "--json")
    assert len(views) == 4
    assert [v["task_id"] for v in views] == [f"retail/test/3/{i}" for i in range(4)]
    for v in views:
        assert v["instruction"] and v["split"] == "test" and v["difficulty"] == 3
        assert not {"gold_plan", "target", "answers"} & set(v)


def test_check_json_contract() -> None:
    report = as_json("check", "retail", "-n", "60", "--json")
    for key in (
        "env",
        "tasks",
        "oracle_success_rate",
        "noop_reward_mean",
        "random_reward_mean",
        "unsolvable",
        "duplicate_tasks",
        "split_overlap",
    ):
        assert key in report
    assert report["env"] == "retail" and report["tasks"] == 60
    assert report["oracle_success_rate"] == 1.0 and report["unsolvable"] == 0


def test_bench_json_contract() -> None:
    result = as_json("bench", "--json")
    for key in ("reset_us_p50", "step_us_p50", "evaluate_us_p50", "tasks_per_s", "session_kb"):
        assert isinstance(result[key], (int, float)) and result[key] > 0


def test_unknown_environment_is_a_clear_error() -> None:
    done = cli("tasks", "atlantis", ok=False)
    assert done.returncode == 2 and "no environment 'atlantis'" in done.stderr


def test_play_an_episode_at_the_terminal() -> None:
    """A person (here, a script on stdin) plays the first training task of retail."""
    import envfactory

    task = envfactory.make("retail").task("train", 1, 0)
    lines = ["help", "tools", "no_such_tool {}"]
    lines += [f"{s.tool} {json.dumps(s.arguments)}" for s in task.hidden.gold_plan]
    answer = " ".join(str(a) for a in task.hidden.answers)
    lines.append(f"done All set. {answer}")
    out = cli("play", "retail", stdin="\n".join(lines) + "\n").stdout
    assert "unknown_tool" in out
    assert "reward 1.0 (completed)" in out


def test_demo_runs_every_environment() -> None:
    """Every world with one agent, but the web worlds (the database worlds again, a browser
    per episode: tests/web runs them)."""
    rows = as_json("demo", "-n", "4", "--model-tasks", "0", "--json")
    listed = as_json("envs", "--json")
    single = {e["id"] for e in listed if e["kind"] not in ("multiagent", "web")}
    assert {r["env"] for r in rows} == single
    for r in rows:
        assert r["oracle"] == 1.0 and r["noop"] == 0.0 and r["random"] <= 0.05
        assert r["local"] is None  # no real-model run asked for
