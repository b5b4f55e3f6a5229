"""The curriculum over HTTP: a real server on loopback, next task, report, state, history."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

import envfactory
from envfactory.contract.actions import Observation
from envfactory.policies.scripted import Oracle
from envfactory.serving import ServeConfig, running
from envfactory.serving.server import Running

BASE = "/envfactory/curriculum"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    db = tmp_path_factory.mktemp("cur") / "cur.sqlite"
    with running(ServeConfig(envs=("retail", "banking"), curriculum=str(db))) as srv:
        yield srv


def _play(client: httpx.Client, task_id: str, solve: bool) -> str:
    """Open a session on ``task_id``; play the gold plan (or give up at once)."""
    opened = client.post("/envfactory/sessions", json={"task_id": task_id})
    assert opened.status_code == 201, opened.text
    sid = opened.json()["session_id"]
    env_id, split, difficulty, index = task_id.split("/")
    task = envfactory.make(env_id).task(split, int(difficulty), int(index))  # type: ignore[arg-type]
    oracle = Oracle()
    oracle.start(task, [])
    obs = Observation.model_validate(opened.json()["observation"])
    while not obs.done:
        action = oracle.act(obs) if solve else {"type": "message", "content": "No.", "final": True}
        body = action if isinstance(action, dict) else action.model_dump(mode="json")
        step = client.post(f"/envfactory/sessions/{sid}/step", json=body)
        assert step.status_code == 200, step.text
        obs = Observation.model_validate(step.json()["observation"])
    return str(sid)


def test_next_task_then_report(server: Running) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        state = client.get(BASE).json()
        assert {s["env_id"] for s in state} == {"retail", "banking"}
        assert all(s["frontier"] == 0 for s in state)  # the starter level
        seen = set()
        moved = []
        for _ in range(40):
            nxt = client.get(f"{BASE}/next", params={"env_id": "retail"}).json()
            assert nxt["task"]["task_id"] == nxt["task_id"] and "gold_plan" not in str(nxt)
            assert nxt["task_id"] not in seen  # a fresh task every time
            seen.add(nxt["task_id"])
            sid = _play(client, nxt["task_id"], solve=True)
            rep = client.post(f"{BASE}/report/{sid}").json()
            assert rep["counted"] and rep["reward"] == 1.0
            again = client.post(f"{BASE}/report/{sid}").json()
            assert not again["counted"]  # reporting twice counts once
            if rep["moved"]:
                moved.append(rep["frontier"])
        assert moved and moved[0] == 1  # the oracle is promoted
        retail = next(s for s in client.get(BASE).json() if s["env_id"] == "retail")
        assert retail["frontier"] > 0 and retail["episodes"] == 40
        history = client.get(f"{BASE}/history", params={"env_id": "retail"}).json()
        assert [h["event"] for h in history][:2] == ["start", "raise"]


def test_failures_count_and_sessions_must_finish(server: Running) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        nxt = client.get(f"{BASE}/next", params={"env_id": "banking", "split": "validation"})
        assert nxt.status_code == 200 and nxt.json()["split"] == "validation"
        sid = _play(client, nxt.json()["task_id"], solve=False)
        rep = client.post(f"{BASE}/report/{sid}").json()
        assert rep["counted"] and rep["reward"] == 0.0 and rep["frontier"] == 0
        opened = client.post("/envfactory/sessions", json={"task_id": nxt.json()["task_id"]})
        running_sid = opened.json()["session_id"]
        assert client.post(f"{BASE}/report/{running_sid}").status_code == 409
        assert client.post(f"{BASE}/report/no-such-session").status_code == 404
        assert client.get(f"{BASE}/next", params={"env_id": "nowhere"}).status_code == 404
        assert client.get(f"{BASE}/next", params={"split": "holdout"}).status_code == 400
        drawn = {client.get(f"{BASE}/next").json()["env_id"] for _ in range(30)}
        assert drawn <= {"retail", "banking"}


def test_servers_without_a_curriculum_have_no_routes() -> None:
    with running(ServeConfig(envs=("retail",))) as srv:
        assert httpx.get(f"{srv.url}{BASE}/next", timeout=10).status_code == 404
