"""Bad requests get the right status and a clear message, on every protocol."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import httpx
import pytest
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import WebSocketException

from envfactory.serving import ServeConfig, check_bind, running
from envfactory.serving.server import Running

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def guarded() -> Iterator[Running]:
    config = ServeConfig(
        envs=("retail",), token=TOKEN, max_sessions=3, idle_timeout=0.6, reap_interval=0.1
    )
    with running(config) as srv:
        yield srv


def auth(sid: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    return headers | ({"X-Session-ID": sid} if sid else {})


def open_session(http: httpx.Client, sid: str) -> httpx.Response:
    return http.post("/create", json={"split": "train", "index": 0}, headers=auth(sid))


def test_token_is_required_everywhere_but_health(guarded: Running) -> None:
    http = httpx.Client(base_url=guarded.url)
    assert http.get("/health").status_code == 200
    for path in ("/openapi.json", "/list_environments", "/envfactory/stats", "/retail/tools"):
        r = http.get(path)
        assert r.status_code == 401 and "token" in r.json()["detail"]
        assert http.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert http.get(path, headers=auth()).status_code == 200
    assert http.get("/list_environments", headers={"X-API-Key": TOKEN}).status_code == 200

    async def ws(headers: dict[str, str]) -> str:
        url = guarded.url.replace("http", "ws") + "/openenv/retail/ws"
        try:
            async with ws_connect(url, additional_headers=headers) as sock:
                await sock.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
                return json.loads(await sock.recv())["type"]
        except (WebSocketException, OSError) as exc:
            return type(exc).__name__

    assert asyncio.run(ws({})) == "InvalidStatus"  # the handshake is refused (403)
    assert asyncio.run(ws(auth())) == "observation"


def test_sessions_unknown_expired_capacity(guarded: Running) -> None:
    http = httpx.Client(base_url=guarded.url)
    r = http.post("/ping", headers=auth("never-made"))
    assert r.status_code == 404 and r.json()["error"] == "unknown_session"
    assert http.post("/ping", headers=auth()).status_code == 400  # no X-Session-ID
    sids = [f"cap-{i}" for i in range(3)]
    for sid in sids:
        assert open_session(http, sid).status_code == 200
    assert open_session(http, sids[0]).status_code == 409  # already exists
    full = open_session(http, "cap-overflow")
    assert full.status_code == 503 and full.json()["error"] == "capacity_reached"
    assert full.headers["Retry-After"] == "1" and "maximum of 3" in full.json()["detail"]
    time.sleep(1.2)  # past the idle timeout: the reaper expires them
    r = http.post("/ping", headers=auth(sids[0]))
    assert r.status_code == 410 and "expired" in r.json()["detail"]
    call = http.post("/retail/call", json={"name": "x", "input": {}}, headers=auth(sids[1]))
    assert call.status_code == 410
    assert open_session(http, "after-expiry").status_code == 200  # room again
    http.post("/delete", headers=auth("after-expiry"))


def test_malformed_bodies_and_bad_addresses(guarded: Running) -> None:
    http = httpx.Client(base_url=guarded.url, headers=auth())
    r = http.post("/create", content=b"{not json", headers=auth("m-1"))
    assert r.status_code == 422
    r = http.post("/create", json={"split": "train"}, headers=auth("m-1"))
    assert r.status_code == 422 and "split and index" in r.text
    r = http.post("/create", json={"split": "nope", "index": 0}, headers=auth("m-1"))
    assert r.status_code == 400 and "unknown split" in r.json()["detail"]
    r = http.post("/create", json={"split": "train", "index": 10**9}, headers=auth("m-1"))
    assert r.status_code == 400 and "out of range" in r.json()["detail"]
    r = http.post(
        "/create", json={"env_name": "nowhere", "split": "train", "index": 0}, headers=auth("m-1")
    )
    assert r.status_code == 404 and "nowhere" in r.json()["detail"]
    r = http.post("/envfactory/sessions", json={"task_id": "retail/train/9/0"})
    assert r.status_code == 400 and "difficulty" in r.json()["detail"]
    r = http.post("/envfactory/sessions/whatever/step", json={"type": "dance"})
    assert r.status_code == 422


def test_call_after_finish_is_refused(guarded: Running) -> None:
    http = httpx.Client(base_url=guarded.url, headers=auth())
    opened = http.post("/envfactory/sessions", json={"task_id": "retail/train/1/1"}).json()
    sid = opened["session_id"]
    done = http.post(f"/envfactory/sessions/{sid}/step", json={"type": "message", "content": "bye"})
    assert done.json()["finished"] is True and done.json()["reward"] == 0.0
    again = http.post(f"/envfactory/sessions/{sid}/step", json={"type": "message", "content": "x"})
    assert again.status_code == 409 and again.json()["error"] == "episode_finished"
    assert "finished" in again.json()["detail"]
    r = http.post(
        "/retail/call", json={"name": "finish", "input": {"message": "x"}}, headers=auth(sid)
    )
    assert r.status_code == 200 and '"reason":"episode_finished"' in r.text
    http.delete(f"/envfactory/sessions/{sid}")


def test_no_token_no_binding_beyond_loopback() -> None:
    with pytest.raises(ValueError, match="token"):
        check_bind("0.0.0.0", None)
    check_bind("0.0.0.0", "t")
    check_bind("127.0.0.1", None)
    check_bind("::1", None)
    check_bind("localhost", None)
