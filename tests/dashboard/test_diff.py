"""The episode viewer's state diff against the target, recomputed by replaying real records:
the oracle's (every required change made, nothing else), the random policy's (changes
missing), records changed to write a wrong value or the wrong row (re-recorded, so they still
replay), and edited records whose hashes no longer match (not replayable)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from envfactory.cli.main import app as cli
from envfactory.contract.actions import Message, parse_action
from envfactory.dashboard.app import Dashboard, create_app
from envfactory.dashboard.diff import state_diff
from envfactory.registry import make
from envfactory.rollout.types import TaskRef
from envfactory.trajectory.record import EpisodeRecord
from envfactory.trajectory.store import EPISODES, read_records


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """An oracle run and a random run (three turns) of hr's first level, two tasks each."""
    root = tmp_path_factory.mktemp("diff")
    common = ["rollout", "--json", "--envs", "hr", "--difficulties", "0", "--n-tasks", "2"]
    out = {}
    for policy, extra in (("oracle", []), ("random", ["--max-turns", "3"])):
        out[policy] = root / policy
        result = CliRunner().invoke(cli, [*common, *extra, "--policy", policy,
                                          "--out", str(out[policy])])  # fmt: skip
        assert result.exit_code == 0, result.output
    yield out


def recs(store: Path) -> list[EpisodeRecord]:
    return list(read_records(store / EPISODES))


def writes(store: Path) -> list[EpisodeRecord]:
    """Records of tasks whose target changes rows."""
    out = []
    for r in recs(store):
        ref = TaskRef.parse(r.task_id)
        if make(r.env_id).task(ref.split, ref.difficulty, ref.index).hidden.target:
            out.append(r)
    return out


def rerecord(record: EpisodeRecord, edit: Any) -> EpisodeRecord:
    """``record`` with its write's arguments changed by ``edit``, played again so that its
    state hashes are those of what it now does (as if the agent had done that)."""
    rec = record.model_copy(deep=True)
    ref = TaskRef.parse(rec.task_id)
    env = make(rec.env_id)
    ep = env.episode()
    ep.reset(env.task(ref.split, ref.difficulty, ref.index))
    for s in rec.steps:
        if not isinstance(parse_action(s.action), Message) and s.action["tool"].startswith(
            "update"
        ):
            edit(s.action["arguments"])
        ep.step(s.action)
        s.state_hash = ep.state_hash()
    rec.state_hash = ep.state_hash()
    ep.close()
    return rec


def test_oracle_made_every_required_change_and_nothing_else(stores: dict[str, Path]) -> None:
    for r in recs(stores["oracle"]):
        d = state_diff(r)
        assert d["status"] == "ok" and d["kind"] == "db", d
        n = d["summary"]
        assert n["made"] == n["required"] == len(d["rows"]) and n["collateral"] == 0
        assert not d["collateral"] and d["state_hash"] == r.state_hash
        for row in d["rows"]:
            assert row["status"] == "made" and row["row"] == row["id"]
            assert row["fields"] and all(
                f["ok"] and f["actual"] == f["target"] != f["before"] for f in row["fields"]
            )
    assert writes(stores["oracle"])  # at least one task changes a row


def test_random_policy_leaves_required_changes_missing(stores: dict[str, Path]) -> None:
    missing = 0
    for r in writes(stores["random"]):
        d = state_diff(r)
        assert d["status"] == "ok"
        for row in d["rows"]:
            if row["status"] == "missing":
                missing += 1
                assert row["fields"] and all(
                    not f["ok"] and f["actual"] == f["before"] != f["target"] for f in row["fields"]
                )
    assert missing > 0


def test_a_wrong_value_and_a_wrong_row(stores: dict[str, Path]) -> None:
    record = writes(stores["oracle"])[0]
    (field,) = [k for k in record.steps[0].action["arguments"] if not k.endswith("_id")]

    wrong = state_diff(rerecord(record, lambda a: a.update({field: "555-000-0000"})))
    assert wrong["status"] == "ok" and wrong["summary"]["wrong"] == 1, wrong
    (row,) = wrong["rows"]
    (f,) = row["fields"]
    assert (f["field"], f["actual"], f["ok"]) == (field, "555-000-0000", False)
    assert f["target"] == record.steps[0].action["arguments"][field]

    key = record.steps[0].action["arguments"]["employee_id"]
    other = key[:-1] + ("1" if key[-1] != "1" else "2")
    elsewhere = state_diff(rerecord(record, lambda a: a.update(employee_id=other)))
    assert elsewhere["summary"]["missing"] == 1 and elsewhere["summary"]["collateral"] == 1
    (c,) = elsewhere["collateral"]
    assert (c["id"], c["op"]) == (other, "update")
    assert [x["field"] for x in c["fields"]] == [field]


def test_an_edited_record_is_not_replayable(stores: dict[str, Path]) -> None:
    record = writes(stores["oracle"])[0]
    edited = record.model_copy(deep=True)
    args = edited.steps[0].action["arguments"]
    args.update({k: "555-000-0000" for k in args if not k.endswith("_id")})
    d = state_diff(edited)
    assert d["status"] == "not_replayable" and d["step"] == 0 and "rows" not in d
    assert "step 0" in d["reason"]
    last = record.model_copy(deep=True)
    last.state_hash = "0" * 32
    d = state_diff(last)
    assert d["status"] == "not_replayable" and "replay ends" in d["reason"]


def test_worlds_without_a_diff_say_why(stores: dict[str, Path]) -> None:
    record = recs(stores["oracle"])[0]
    unknown = record.model_copy(update={"env_id": "no-such-world"})
    d = state_diff(unknown)
    assert d["status"] == "unavailable" and "no-such-world" in d["reason"]
    terminal = record.model_copy(update={"env_id": "term-git", "task_id": "term-git/train/0/0"})
    d = state_diff(terminal)
    assert (d["status"], d["kind"]) == ("not_applicable", "terminal") and "terminal" in d["reason"]
    seat = record.model_copy(update={"actor": "seat-0", "episode": "e"})
    assert state_diff(seat)["status"] == "not_applicable"


def test_diff_route(stores: dict[str, Path]) -> None:
    client = TestClient(create_app(Dashboard.open([stores["oracle"], stores["random"]])))
    record = writes(stores["random"])[0]
    got = client.get("/api/runs/1/episode/diff", params={"id": record.episode_id}).json()
    assert got["run"] == "random" and got["episode_id"] == record.episode_id
    assert got["status"] == "ok" and got["summary"]["missing"] >= 1
    assert client.get("/api/runs/1/episode/diff", params={"id": "nope"}).status_code == 404
