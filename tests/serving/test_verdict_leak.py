"""Issue 14 class 6: nothing an agent's session reaches reveals the target. Before, the
provisional verdict (``GET /envfactory/sessions/{sid}/verdict``, the MCP resource
``envfactory://verdict``) gave rubric reasons naming the target's rows mid-episode, and every
protocol gave the rubric after the end. Now agents see reward and status once the episode has
finished and nothing before; the full verdict is the trainer's, behind its own token."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError
from pydantic import AnyUrl
from websockets.asyncio.client import connect as ws_connect

from envfactory.serving import ServeConfig, create_app, running
from envfactory.serving.server import Running

AGENT = "agent-token"
TRAINER = "trainer-token"
TASK = "retail/train/2/3"


@pytest.fixture(scope="module")
def served() -> Iterator[Running]:
    with running(ServeConfig(envs=("retail",), token=AGENT, trainer_token=TRAINER)) as srv:
        yield srv


def agent(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {AGENT}"})


def trainer_verdict(url: str, sid: str) -> dict[str, object]:
    r = httpx.get(
        f"{url}/envfactory/trainer/sessions/{sid}/verdict", headers={"X-Trainer-Token": TRAINER}
    )
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def reasons(verdict: dict[str, object]) -> list[str]:
    items = verdict["items"]
    assert isinstance(items, list) and items, "the trainer sees the rubric"
    return [i["reason"] for i in items if len(i["reason"]) > 12]


def assert_hides(body: str, secret: list[str]) -> None:
    assert secret, "the task's rubric gives reasons to hide"
    for reason in secret:
        assert reason not in body, f"an agent saw the rubric reason {reason!r}"
    assert '"reason"' not in body and '"rubric"' not in body


def test_envfactory_routes_hide_the_verdict_until_the_end(served: Running) -> None:
    http = agent(served.url)
    sid = http.post("/envfactory/sessions", json={"task_id": TASK}).json()["session_id"]
    secret = reasons(trainer_verdict(served.url, sid))
    mid = http.get(f"/envfactory/sessions/{sid}/verdict")
    assert mid.status_code == 409 and "still running" in mid.json()["detail"]
    assert_hides(mid.text + http.get(f"/envfactory/sessions/{sid}").text, secret)
    step = http.post(f"/envfactory/sessions/{sid}/step", json={"type": "message", "content": "ok"})
    assert step.json()["finished"] is True
    final = http.get(f"/envfactory/sessions/{sid}/verdict")
    assert final.status_code == 200 and final.json()["items"] == []
    assert final.json()["reward"] == trainer_verdict(served.url, sid)["reward"]
    assert_hides(step.text + final.text, reasons(trainer_verdict(served.url, sid)))


def test_the_trainer_route_needs_its_own_token(served: Running) -> None:
    http = agent(served.url)
    sid = http.post("/envfactory/sessions", json={"task_id": TASK}).json()["session_id"]
    path = f"/envfactory/trainer/sessions/{sid}/verdict"
    for headers in (
        {},
        {"X-Trainer-Token": AGENT},
        {"X-Trainer-Token": "trainer-token-x"},
        {"Authorization": f"Bearer {TRAINER}"},
    ):
        r = http.get(path, headers=headers)
        assert r.status_code == 401 and "trainer token" in r.json()["detail"], headers
    bare = create_app(ServeConfig(envs=("retail",)))  # no trainer token: no trainer route
    assert not [p for p in bare.openapi()["paths"] if p.startswith("/envfactory/trainer")]
    assert not [r for r in bare.routes if getattr(r, "path", "").startswith("/envfactory/trainer")]
    with pytest.raises(ValueError, match="differ"):
        ServeConfig(token="same", trainer_token="same")
    with pytest.raises(ValueError, match="non-empty"):
        ServeConfig(trainer_token=" ")


def test_ors_call_results_carry_no_rubric(served: Running) -> None:
    http = agent(served.url)
    sid = "ors-leak-1"
    http.post("/create", json={"task_spec": {"task_id": TASK}}, headers={"X-Session-ID": sid})
    secret = reasons(trainer_verdict(served.url, sid))
    end = http.post(
        "/retail/call",
        json={"name": "finish", "input": {"message": "done"}},
        headers={"X-Session-ID": sid},
    )
    assert end.status_code == 200 and '"finished":true' in end.text and '"status"' in end.text
    assert_hides(end.text, secret + reasons(trainer_verdict(served.url, sid)))


def test_mcp_verdict_resource_is_closed_until_the_end(served: Running) -> None:
    async def run() -> tuple[list[str], str, str]:
        headers = {"Authorization": f"Bearer {AGENT}"}
        url = f"{served.url}/mcp/retail?task_id={TASK}"
        async with (
            httpx.AsyncClient(headers=headers) as http,
            streamable_http_client(url, http_client=http) as (
                read,
                write,
                get_sid,
            ),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.list_tools()
            with pytest.raises(McpError, match="still running") as mid:
                await session.read_resource(AnyUrl("envfactory://verdict"))
            sid = f"mcp-{get_sid()}"
            result = await session.call_tool("finish", {"message": "done"})
            final = (await session.read_resource(AnyUrl("envfactory://verdict"))).contents[0]
            body = str(mid.value) + result.model_dump_json() + final.text  # type: ignore[union-attr]
            trainer = await http.get(  # before the client deletes the session
                f"{served.url}/envfactory/trainer/sessions/{sid}/verdict",
                headers={"X-Trainer-Token": TRAINER},
            )
            secret = reasons(trainer.json())
            return secret, body, final.text  # type: ignore[union-attr]

    secret, body, final = asyncio.run(run())
    assert json.loads(final)["items"] == [] and json.loads(final)["status"] == "completed"
    assert_hides(body, secret)


def test_openenv_state_says_nothing_of_the_goal_mid_episode(served: Running) -> None:
    async def run() -> dict[str, object]:
        url = served.url.replace("http", "ws") + "/openenv/retail/ws"
        async with ws_connect(url, additional_headers={"X-API-Key": AGENT}) as sock:
            await sock.send(json.dumps({"type": "reset", "data": {"task_id": TASK}}))
            await sock.recv()
            await sock.send(json.dumps({"type": "state"}))
            return json.loads(await sock.recv())["data"]  # type: ignore[no-any-return]

    state = asyncio.run(run())
    assert state["reward"] is None and state["status"] is None and state["done"] is False
