"""Open Reward Standard routes, driven by the standard's own Python SDK (``openreward``) and by
raw HTTP where the wire shape itself is the point."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from openreward import OpenReward
from openreward.api.environments.client import Environment as ORSEnvironment
from openreward.api.errors import ToolCallError
from serving_helpers import assert_no_hidden, play_oracle

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.results import ToolError
from envfactory.db.environment import DatabaseEnvironment
from envfactory.serving.server import Running
from envfactory.serving.sse import result_stream, split_payload


@pytest.fixture(scope="module")
def ors_env(server: Running) -> Iterator[ORSEnvironment]:
    client = OpenReward(api_key="unused-on-loopback", base_url=server.url)
    try:
        yield client.environments.get("retail", variant="retail", base_url=server.url)
    finally:
        client.close()


def parse_sse(text: str) -> list[tuple[str, str]]:
    events = []
    for block in text.replace("\r\n", "\n").strip().split("\n\n"):
        lines = block.split("\n")
        event = lines[0].removeprefix("event: ")
        data = "\n".join(line.removeprefix("data: ") for line in lines[1:])
        events.append((event, data))
    return events


def test_discovery_through_the_sdk(ors_env: ORSEnvironment, world: DatabaseEnvironment) -> None:
    assert ors_env.list_splits() == ["train", "validation", "test"]
    n = ors_env.num_tasks("validation")
    assert n == sum(world.capacity("validation", d) or 0 for d in world.difficulties)
    task = ors_env.get_task("validation", 0)
    assert task.task_spec["task_id"] == "retail/validation/0/0"  # the starter level first
    last = ors_env.get_task_range("validation", -2, None)
    top = world.difficulties[-1]
    cap = world.capacity("validation", top) or 0
    assert [t.task_spec["task_id"] for t in last] == [
        f"retail/validation/{top}/{cap - 2}",
        f"retail/validation/{top}/{cap - 1}",
    ]
    tools = ors_env.list_tools()
    names = {t.name for t in tools}
    assert set(world.world.tools) <= names and "message_user" in names
    assert "finish" not in names  # the terminal tool is announced apart, as the standard says
    assert ors_env.terminal_tool() is not None
    assert ors_env.terminal_tool().name == "finish"  # type: ignore[union-attr]


def test_the_oracle_earns_reward_one_through_the_sdk(
    ors_env: ORSEnvironment, world: DatabaseEnvironment
) -> None:
    index = 7  # a difficulty-0 task of the validation split
    task = world.task("validation", 0, index)
    assert not task.hidden.asks
    with ors_env.session(split="validation", index=index) as session:
        prompt = session.get_prompt()
        assert task.public.instruction in prompt[0].text
        rewards: list[float | None] = []

        def send(action: ToolCall | Message) -> Observation:
            if isinstance(action, Message):
                out = session.call_terminal_tool(action.content)
            else:
                out = session.call_tool(action.tool, dict(action.arguments))  # type: ignore[arg-type]
            rewards.append(out.reward)
            meta = dict(out.metadata or {})
            error = ToolError(**meta["error"]) if "error" in meta else None
            return Observation(
                kind=meta["kind"], content=out.blocks[0].text, error=error, done=out.finished
            )

        first = Observation(kind="task", content=prompt[0].text)
        last, _ = play_oracle(task, send, first)
        assert last.kind == "end" and rewards[-1] == 1.0
        with pytest.raises(ToolCallError) as refused:
            session.call_tool("get_order", {"order_id": "ORD-00001"})
        assert refused.value.reason == "episode_finished"


def test_wire_shapes_of_a_call(server: Running, world: DatabaseEnvironment) -> None:
    http = httpx.Client(base_url=server.url)
    r = http.post("/create_session", headers={"Accept": "text/event-stream"})
    assert r.headers["content-type"].startswith("text/event-stream")
    (e1, sid), (e2, end) = parse_sse(r.text)
    assert (e1, e2) == ("task_id", "end") and json.loads(end) == {"sid": sid}
    r = http.post("/create", json={"split": "train", "index": 0}, headers={"X-Session-ID": sid})
    assert r.json() == {"sid": sid}
    r = http.post("/retail/call", json={"name": "nope", "input": {}}, headers={"X-Session-ID": sid})
    events = parse_sse(r.text)
    assert [e for e, _ in events] == ["task_id", "end"]
    result = json.loads(events[-1][1])
    assert result["ok"] is False and result["reason"] == "not_found"
    step = world.task("train", 0, 0).hidden.gold_plan[0]
    body = {"name": step.tool, "input": step.arguments, "task_id": "call-1"}
    r = http.post("/call", json=body, headers={"X-Session-ID": sid})  # bare path: first env
    ok = json.loads(parse_sse(r.text)[-1][1])
    assert ok["ok"] is True and set(ok["output"]) == {"blocks", "metadata", "reward", "finished"}
    assert ok["output"]["blocks"][0]["type"] == "text" and ok["output"]["finished"] is False
    again = http.post("/call", json=body, headers={"X-Session-ID": sid})  # resumed, not re-run
    assert parse_sse(again.text)[-1] == parse_sse(r.text)[-1]
    assert http.post("/ping", headers={"X-Session-ID": sid}).json() == {"status": "ok"}
    msgs = http.get("/retail/messages", headers={"X-Session-ID": sid}).json()
    assert [m["role"] for m in msgs] == ["system", "user"]
    for text in (r.text, msgs and json.dumps(msgs)):
        assert_no_hidden(text, world.task("train", 0, 0))
    assert http.post("/delete", headers={"X-Session-ID": sid}).json() == {"sid": sid}
    assert http.post("/ping", headers={"X-Session-ID": sid}).status_code == 404
    assert http.post("/delete_session", headers={"X-Session-ID": sid}).status_code == 200


def test_long_results_are_chunked_so_any_reader_reassembles_them() -> None:
    payload = json.dumps({"text": "word " * 3000 + "  spaced   out  " * 500})
    pieces = split_payload(payload)
    assert "".join(pieces) == payload and len(pieces) > 2
    assert all(len(p) <= 4096 and not p[0].isspace() for p in pieces)
    events = parse_sse(result_stream("t-1", payload).body.decode())
    assert events[0] == ("task_id", "t-1") and events[-1][0] == "end"
    # a reader that strips every leading blank of a data line (the SDK's) still gets it all
    assert "".join(d.lstrip() for _, d in events[1:]) == payload
