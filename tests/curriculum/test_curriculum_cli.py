"""``envfactory curriculum``: the frontier per environment and its history."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from envfactory.cli.main import app
from envfactory.curriculum import Curriculum, CurriculumConfig

runner = CliRunner()


def _db(tmp_path: Path) -> Path:
    path = tmp_path / "cur.sqlite"
    cur = Curriculum(path, CurriculumConfig(min_samples=4, memory=4))
    cur.add("retail", [1, 2, 3])
    cur.add("banking", [1, 2, 3])
    for i in range(4):
        cur.record(f"r{i}", "retail", 1, 1.0)
        cur.record(f"b{i}", "banking", 1, float(i % 2))
    cur.close()
    return path


def test_show_and_history(tmp_path: Path) -> None:
    db = str(_db(tmp_path))
    shown = runner.invoke(app, ["curriculum", "show", "--db", db, "--json"])
    assert shown.exit_code == 0, shown.output
    state = {s["env_id"]: s for s in json.loads(shown.stdout)}
    assert state["retail"]["frontier"] == 2 and state["banking"]["frontier"] == 1
    assert state["banking"]["frontier_accuracy"] == 0.5
    history = runner.invoke(app, ["curriculum", "history", "--db", db, "--env", "retail", "--json"])
    events = json.loads(history.stdout)
    assert [(e["event"], e["level_to"]) for e in events] == [("start", 1), ("raise", 2)]
    table = runner.invoke(app, ["curriculum", "--db", db])
    assert table.exit_code == 0
    assert (
        "frontier history" in table.stdout and "retail" in table.stdout and "raise" in table.stdout
    )


def test_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.sqlite"
    out = runner.invoke(app, ["curriculum", "show", "--db", str(missing)])
    assert out.exit_code == 2 and "no curriculum" in out.output
    assert not missing.exists()  # looking does not create one
