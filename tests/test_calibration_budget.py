"""A calibration cell is never out of reach for want of turns: each cell's episodes get the
model calls its longest gold plan needs, and a cell measured with fewer says how much of it a
perfect agent could reach. Played by the scripted oracle (no model), in a database world and
its website, where a browser action is a call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import cli

from envfactory.bench.calibration import (
    GRAMMAR_HARNESS,
    CalibrationCell,
    calibrate,
    fewest_turns,
    load_cells,
    store_cells,
)
from envfactory.policies.wrap import ScriptedPolicy
from envfactory.registry import make

TWO_CALLS = GRAMMAR_HARNESS.model_copy(update={"max_turns": 2})


@pytest.mark.parametrize(("world", "starter_in_two"), [("hotel", 1.0), ("web-hotel", 0.0)])
def test_the_oracle_reaches_every_cell_when_the_budget_fits_the_plans(
    world: str, starter_in_two: float
) -> None:
    oracle = ScriptedPolicy("oracle")
    fitted = calibrate(oracle, [world], tasks=3, difficulties=[0, 3], harness=TWO_CALLS)
    for cell in fitted:
        tasks = [make(world).task(cell.split, cell.difficulty, i) for i in range(3)]  # type: ignore[arg-type]
        assert cell.max_turns == max(2, *map(fewest_turns, tasks))
        assert (cell.success, cell.reach) == (1.0, 1.0), cell
    top = fitted[1]
    assert top.max_turns is not None and top.max_turns > 2  # level 3 plans are longer
    # Held to two calls, level 3 is out of reach, and so is the website's starter (open the
    # form, fill it, submit): the cells say so.
    fixed = calibrate(oracle, [world], 3, [0, 3], harness=TWO_CALLS, fit_plan=False)
    assert [(c.max_turns, c.reach) for c in fixed] == [(2, starter_in_two), (2, 0.0)]
    assert [c.success for c in fixed] == [starter_in_two, 0.0]


def test_fewest_turns_counts_calls_questions_and_a_reply_only_where_answers_are_asked() -> None:
    world = make("hotel")
    seen: set[tuple[bool, bool]] = set()
    for d in world.difficulties:
        for i in range(20):
            h = world.task("train", d, i).hidden
            assert fewest_turns(world.task("train", d, i)) == (
                len(h.gold_plan) + len(h.asks) + bool(h.answers)
            )
            seen.add((bool(h.asks), bool(h.answers)))
    assert {(True, False), (False, True)} <= seen  # both parts occur in the sample


def _cell(env: str, difficulty: int, success: float, reach: float | None) -> CalibrationCell:
    return CalibrationCell(
        env=env, difficulty=difficulty, tasks=10, success=success, ci95=(0.0, 1.0),
        mean_reward=success, tool_call_valid_rate=1.0, invalid_argument_rate=0.0,
        calls_attempted=10, turns_mean=2.0, prompt_tokens=1, completion_tokens=1,
        tool_format="grammar", max_turns=3, reach=reach,
    )  # fmt: skip


def test_a_stored_cell_replaces_its_older_row_and_keeps_the_others(tmp_path: Path) -> None:
    path = tmp_path / "cells.jsonl"
    store_cells(path, [_cell("hotel", 0, 0.1, 1.0), _cell("hotel", 3, 0.0, 0.2)])
    store_cells(path, [_cell("hotel", 3, 0.0, 1.0), _cell("retail", 0, 0.3, 1.0)])
    kept = [(c.env, c.difficulty, c.reach) for c in load_cells(path)]
    assert kept == [("hotel", 0, 1.0), ("hotel", 3, 1.0), ("retail", 0, 1.0)]
    assert not path.with_name("cells.jsonl.part").exists()
    assert load_cells(tmp_path / "absent.jsonl") == []


def test_a_scripted_policy_is_calibrated_from_the_command_line(tmp_path: Path) -> None:
    """`--model scripted:NAME` runs a scripted policy through the same cells as a model: the
    oracle solves every task, the audit's noisy oracle (skill 0.8) fewer, and an unknown name
    is refused before any episode."""
    args = ["bench", "calibration", "--envs", "hotel", "--difficulties", "0,2", "--tasks", "8"]
    found = {}
    for name in ("oracle", "noisy-oracle"):
        out = tmp_path / f"{name}.jsonl"
        cells = json.loads(cli(*args, "--model", f"scripted:{name}", "--out", str(out)).stdout)
        assert [(c["env"], c["difficulty"], c["tasks"]) for c in cells] == [
            ("hotel", 0, 8), ("hotel", 2, 8)
        ]  # fmt: skip
        assert all(c["faults"] == 0 and c["reach"] == 1.0 for c in cells)
        assert [json.loads(line) for line in out.read_text().splitlines()] == cells
        found[name] = [c["success"] for c in cells]
    assert found["oracle"] == [1.0, 1.0]
    assert sum(found["noisy-oracle"]) < 2.0 and found["noisy-oracle"][0] > 0
    unknown = cli(*args, "--model", "scripted:nobody", ok=False)
    assert unknown.returncode != 0 and "nobody" in unknown.stderr + unknown.stdout
