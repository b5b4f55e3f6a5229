"""Bad input over HTTP never gives a 5xx, a dropped connection or an ``env_error``: hostile
tool arguments (non-finite and huge numbers, NUL, lone surrogates, deep nesting), huge and
non-object bodies, wrong content types, unknown sessions and actions after the end, sent as raw
JSON text over every protocol (ORS, envfactory routes, OpenEnv WebSocket, MCP)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from websockets.asyncio.client import connect as ws_connect

from envfactory.serving.server import Running

TASK = "retail/train/1/0"
DEEP = 3000
# tool arguments as JSON text: what no Python json.dumps of a valid value writes
HOSTILE_ARGS = [
    '{"order_id": Infinity}',
    '{"order_id": NaN}',
    '{"order_id": -Infinity}',
    '{"order_id": 1e400}',
    '{"order_id": 1000000000000000000000000000000}',
    '{"order_id": "ORD\\u0000-1"}',
    '{"order_id": "\\ud800"}',
    '{"\\udfff": "x"}',
    '{"order_id": ' + "[" * DEEP + "]" * DEEP + "}",
    '{"order_id": ' + '{"a":' * DEEP + "1" + "}" * DEEP + "}",
    '{"order_id": "' + "x" * 2_000_000 + '"}',
]
HOSTILE_BODIES = ["[]", '"x"', "1", "null", "{", "\x00", '{"a": "\\ud800"', "[" * DEEP]


def check(r: httpx.Response) -> None:
    assert r.status_code < 500, r.text[:300]
    assert "env_error" not in r.text, r.text[:300]


@pytest.fixture()
def http(server: Running) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=60)


def test_ors_call(http: httpx.Client) -> None:
    sid = "adv-ors"
    http.post("/create", json={"task_spec": {"task_id": TASK}}, headers={"X-Session-ID": sid})
    headers = {"X-Session-ID": sid, "Content-Type": "application/json"}
    for tool in ("get_order", "finish", "message_user"):
        for args in HOSTILE_ARGS:
            body = '{{"name": "{}", "input": {}}}'.format(tool if tool != "finish" else "x", args)
            check(http.post("/retail/call", content=body, headers=headers))
    for body in HOSTILE_BODIES:
        check(http.post("/retail/call", content=body, headers=headers))
        check(http.post("/create", content=body, headers=headers))
    check(http.post("/retail/call", content="{}", headers={"Content-Type": "text/plain"}))
    check(http.post("/retail/call", json={"name": "x"}, headers={"X-Session-ID": "nobody"}))
    check(
        http.post(
            "/retail/call",
            json={"name": "finish", "input": {"message": "done"}},
            headers=headers,
        )
    )
    after = http.post(
        "/retail/call",
        content='{"name": "get_order", "input": ' + HOSTILE_ARGS[0] + "}",
        headers=headers,
    )
    check(after)


def test_envfactory_step(http: httpx.Client) -> None:
    sid = http.post("/envfactory/sessions", json={"task_id": TASK}).json()["session_id"]
    url = f"/envfactory/sessions/{sid}/step"
    headers = {"Content-Type": "application/json"}
    for args in HOSTILE_ARGS:
        body = f'{{"type": "tool_call", "tool": "get_order", "arguments": {args}}}'
        check(http.post(url, content=body, headers=headers))
    for body in [*HOSTILE_BODIES, '{"type": "message", "content": "\\ud800", "final": false}']:
        check(http.post(url, content=body, headers=headers))
        check(http.post("/envfactory/sessions", content=body, headers=headers))
    check(http.post(url, content="{}", headers={"Content-Type": "application/xml"}))
    check(http.post("/envfactory/sessions/nobody/step", json={"type": "message", "content": "x"}))
    check(http.get("/envfactory/sessions/%ED%A0%80/verdict"))  # a lone surrogate, UTF-8 bytes
    http.post(url, json={"type": "message", "content": "bye"})
    for args in HOSTILE_ARGS[:3]:
        body = f'{{"type": "tool_call", "tool": "get_order", "arguments": {args}}}'
        check(http.post(url, content=body, headers=headers))


def test_websocket_messages(server: Running) -> None:
    async def run() -> list[str]:
        url = server.url.replace("http", "ws") + "/openenv/retail/ws"
        replies = []
        async with ws_connect(url, max_size=2**24) as sock:
            await sock.send(json.dumps({"type": "reset", "data": {"task_id": TASK}}))
            await sock.recv()
            messages = [
                '{"type": "step", "data": {"type": "tool_call", "tool": "get_order", '
                f'"arguments": {a}}}}}'
                for a in HOSTILE_ARGS
            ]
            messages += [
                '{"type": "step", "data": {"type": "call_tool", "tool_name": "get_order", '
                f'"arguments": {a}}}}}'
                for a in HOSTILE_ARGS
            ]
            messages += [*HOSTILE_BODIES, '{"type": "reset", "data": {"index": 1e400}}']
            for m in messages:
                await sock.send(m)
                replies.append(await sock.recv())
        return replies

    for reply in asyncio.run(run()):
        assert "env_error" not in reply


def test_mcp_tool_calls(http: httpx.Client) -> None:
    url = f"/mcp/retail?task_id={TASK}"
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "0"},
        },
    }
    r = http.post(url, json=init, headers=headers)
    headers |= {"mcp-session-id": r.headers["mcp-session-id"]}
    r = http.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    for i, args in enumerate(HOSTILE_ARGS):
        body = (
            f'{{"jsonrpc": "2.0", "id": {i + 1}, "method": "tools/call", "params": '
            f'{{"name": "get_order", "arguments": {args}}}}}'
        )
        check(http.post(url, content=body, headers=headers))
    for body in HOSTILE_BODIES:
        check(http.post(url, content=body, headers=headers))
