"""The shared layers on a campaign world: rollout, export-sft, the dashboard's campaign view."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from envfactory.cli.main import app as cli
from envfactory.dashboard.app import Dashboard, create_app
from envfactory.dashboard.campaign import campaign_view
from envfactory.trajectory.record import EpisodeRecord
from envfactory.trajectory.store import EPISODES, read_records

WORLD = ["--envs", "campaign-retail", "--difficulties", "1"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An oracle rollout of two campaigns of two requests."""
    out = tmp_path_factory.mktemp("campaign") / "oracle"
    args = ["rollout", "--json", *WORLD, "--n-tasks", "2", "--policy", "oracle", "--out", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    yield out


def records(store: Path) -> list[EpisodeRecord]:
    return list(read_records(store / EPISODES))


def test_rollout_records_each_request(run: Path) -> None:
    recs = records(run)
    assert len(recs) == 2 and all(r.reward == 1.0 for r in recs)
    assert all([i.name for i in r.rubric] == ["request_1", "request_2", "no_damage"] for r in recs)


def test_campaign_view_replays_requests_in_order(run: Path) -> None:
    for record in records(run):
        view = campaign_view(record)
        assert view["status"] == "ok", view["reason"]
        requests = view["requests"]
        assert [r["number"] for r in requests] == [1, 2]
        assert requests[0]["closed"] == requests[1]["opened"]  # the next opens as one closes
        assert all(r["reward"] == 1.0 for r in requests)
        assert len(view["events"]) == sum(len(r["events"]) for r in requests)


def test_an_edited_campaign_record_is_not_replayed(run: Path) -> None:
    record = records(run)[0].model_copy(deep=True)
    record.steps[0].action = {"type": "message", "content": "hello", "final": False}
    assert campaign_view(record)["status"] == "not_replayable"
    other = record.model_copy(update={"env_id": "retail", "task_id": "retail/train/1/0"})
    assert campaign_view(other)["status"] == "not_applicable"


def test_campaign_route(run: Path) -> None:
    client = TestClient(create_app(Dashboard.open([run])))
    record = records(run)[0]
    got = client.get("/api/runs/0/episode/campaign", params={"id": record.episode_id}).json()
    assert got["status"] == "ok" and got["episode_id"] == record.episode_id
    assert "campaign-requests" in client.get("/episode").text


def test_export_sft_writes_solved_campaigns(tmp_path: Path) -> None:
    args = ["export-sft", *WORLD, "--tasks", "1", "--out", str(tmp_path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    rows = (tmp_path / "jsonl" / "train.jsonl").read_text().splitlines()
    messages = json.loads(rows[0])["messages"]
    assert any("Request 2 of 2" in str(m.get("content")) for m in messages if m["role"] == "tool")
