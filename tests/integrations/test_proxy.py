"""The capture proxy: a scripted agent harness (the real openai client) runs envfactory
episodes through it to the loopback inference server; the store must hold exactly the token
ids and logprobs the server produced, per episode."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from integration_servers import ThreadServer, chat_server_module

import envfactory
from envfactory.contract.actions import Message, ToolCall
from envfactory.harness.config import HarnessConfig
from envfactory.harness.prompt import exposed_tools, opening
from envfactory.integrations.proxy import TOKEN_HEADER, CaptureProxy
from envfactory.trajectory.convert import to_messages, to_sequence
from envfactory.trajectory.store import TrajectoryStore

pytestmark = pytest.mark.integrations
cs = chat_server_module()


@pytest.fixture
def proxy(server: Any, tmp_path: Path) -> Iterator[tuple[str, TrajectoryStore, CaptureProxy]]:
    store = TrajectoryStore(tmp_path / "run")
    capture = CaptureProxy(server.base_url, store)
    with ThreadServer(capture.app()) as http:
        yield http.url, store, capture
    store.close()


def harness_episode(
    base: str, task_id: str, key: str, *, by_api_key: bool = False, stream: bool = False
) -> tuple[float | None, list[dict[str, Any]]]:
    """An agent harness we do not control: its own loop over the openai client; returns the
    verdict's reward and the raw replies it received."""
    from openai import OpenAI

    headers = {} if by_api_key else {"X-Session-ID": key}
    client = OpenAI(base_url=f"{base}/v1", api_key=key if by_api_key else "unused")
    env = envfactory.make(task_id.split("/")[0])
    task = env.task(*cs._address(task_id))
    tools = exposed_tools(task.public, env.tools("openai"), HarnessConfig())
    messages: list[dict[str, Any]] = opening(task.public, tools, HarnessConfig())
    episode = env.episode()
    episode.reset(task)
    replies = []
    for _ in range(30):
        if stream:
            content, calls = "", []
            for chunk in client.chat.completions.create(
                model="scripted-brain",
                messages=messages,
                tools=tools,
                stream=True,
                extra_headers=headers,
            ):
                for choice in chunk.choices:
                    content += choice.delta.content or ""
                    calls += [
                        c.model_dump(exclude_none=True) for c in choice.delta.tool_calls or []
                    ]
            msg: dict[str, Any] = {"role": "assistant", "content": content or None}
            if calls:
                msg["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
        else:
            response = client.chat.completions.create(
                model="scripted-brain", messages=messages, tools=tools, extra_headers=headers
            )
            replies.append(response.model_dump())
            msg = response.choices[0].message.model_dump(exclude_none=True)
        messages.append(msg)
        if msg.get("tool_calls"):
            for call in msg["tool_calls"]:
                fn = call["function"]
                action = ToolCall(tool=fn["name"], arguments=fn["arguments"], call_id=call["id"])
                obs = episode.step(action)
                messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": obs.content}
                )
        else:
            obs = episode.step(Message(content=msg["content"] or "", final=False))
            if obs.done:
                break
            messages.append({"role": "user", "content": obs.content})
    verdict = episode.evaluate()
    finish = {"task_id": task_id, "reward": verdict.reward, "status": verdict.status}
    if by_api_key:  # named by the same key as the calls
        auth = {"Authorization": f"Bearer {key}"}
        r = httpx.post(f"{base}/episodes/finish", json=finish, headers=auth)
    else:
        r = httpx.post(f"{base}/episodes/{quote(key, safe='')}/finish", json=finish)
    assert r.status_code == 200, r.text
    return verdict.reward, replies


def assert_server_tokens(record: Any) -> None:
    """Every call's ids and logprobs are what the server computed for that request."""
    assert record.calls
    for call in record.calls:
        context = record.context(call)
        reply = record.messages[call.message_index]
        assert call.prompt_ids == cs.encode(cs.render_prompt(context, record.tools, False))
        output = [*cs.encode(cs.render_assistant(reply, strip_thinking=False)), cs.IM_END]
        assert call.output_ids == output
        assert call.output_logprobs == [cs.logprob(t, j) for j, t in enumerate(output)]
        assert to_messages(record, call.index)[-1] == reply


def test_episodes_by_session_header_hold_the_servers_tokens(proxy: Any) -> None:
    base, store, _ = proxy
    tasks = ["retail/train/1/0", "retail/train/2/1", "hotel/train/1/0"]
    for task_id in tasks:
        reward, replies = harness_episode(base, task_id, f"{task_id}#0")
        assert reward == 1.0
        for r in replies:  # the harness sees the reply as if it had called the server
            assert "prompt_token_ids" not in r and r["choices"][0].get("logprobs") is None
    records = {r.episode_id: r for r in TrajectoryStore(store.directory).records()}
    assert set(records) == {f"{t}#0" for t in tasks}
    for task_id in tasks:
        rec = records[f"{task_id}#0"]
        assert (rec.task_id, rec.env_id, rec.reward, rec.status) == (
            task_id,
            task_id.split("/")[0],
            1.0,
            "completed",
        )
        assert rec.model.provider == "proxy" and rec.tools
        assert_server_tokens(rec)
        assert not to_sequence(rec).rewritten  # one token row: each call extends the last


def test_episode_named_by_api_key_and_streamed(proxy: Any, server: Any) -> None:
    base, store, _ = proxy
    key = "retail/train/1/2#7"
    reward, _ = harness_episode(base, "retail/train/1/2", key, by_api_key=True, stream=True)
    assert reward == 1.0
    (rec,) = TrajectoryStore(store.directory).records()
    assert rec.episode_id == key
    assert_server_tokens(rec)
    # upstream saw the episode as a session (sticky routing), never the episode key as auth
    assert {r["session"] for r in server.state.requests} == {key}
    assert all(r["authorization"] is None for r in server.state.requests)


def test_token_fields_pass_through_when_asked(proxy: Any) -> None:
    base, store, _ = proxy
    task = envfactory.make("retail").task("train", 1, 0)
    body = {
        "model": "scripted-brain",
        "messages": opening(task.public, [], HarnessConfig()),
        "return_token_ids": True,
        "logprobs": True,
    }
    session = {"X-Session-ID": "retail/train/1/0#0"}
    r = httpx.post(f"{base}/v1/chat/completions", json=body, headers=session)
    data = r.json()
    assert r.status_code == 200 and data["prompt_token_ids"]
    httpx.post(f"{base}/episodes/finish", json={}, headers=session).raise_for_status()
    (rec,) = TrajectoryStore(store.directory).records()
    assert rec.calls[0].prompt_ids == data["prompt_token_ids"]
    assert rec.calls[0].output_ids == data["choices"][0]["token_ids"]
    assert (rec.task_id, rec.env_id, rec.reward) == ("external", "external", None)


def test_bad_requests_and_upstream_faults_are_clear(proxy: Any, server: Any) -> None:
    base, store, capture = proxy
    url = f"{base}/v1/chat/completions"
    assert httpx.post(url, json={"messages": []}).status_code == 400  # no episode named
    r = httpx.post(url, content=b"{not json", headers={"X-Session-ID": "e#0"})
    assert r.status_code == 400 and "chat-completions" in r.json()["error"]["message"]
    server.state.faults = lambda session, turn, attempt: cs.Fault("status", status=503)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    r = httpx.post(url, json=body, headers={"X-Session-ID": "e#0"})
    assert r.status_code == 503  # the upstream's own answer, passed through
    server.state.faults = lambda session, turn, attempt: cs.Fault("malformed")
    r = httpx.post(url, json=body, headers={"X-Session-ID": "e#0"})
    assert r.status_code == 502
    assert httpx.post(f"{base}/episodes/nobody/finish", json={}).status_code == 404
    assert capture.open["e#0"].upstream_errors == 2 and not capture.open["e#0"].calls
    assert len(TrajectoryStore(store.directory)) == 0


def test_open_episodes_are_checkpointed_at_shutdown(server: Any, tmp_path: Path) -> None:
    store = TrajectoryStore(tmp_path / "run")
    capture = CaptureProxy(server.base_url, store, token="secret")
    task = envfactory.make("retail").task("train", 1, 0)
    body = {"model": "scripted-brain", "messages": opening(task.public, [], HarnessConfig())}
    with ThreadServer(capture.app()) as http:
        url = f"{http.url}/v1/chat/completions"
        assert httpx.post(url, json=body, headers={"X-Session-ID": "a#0"}).status_code == 401
        headers = {"X-Session-ID": "retail/train/1/0#0", TOKEN_HEADER: "secret"}
        assert httpx.post(url, json=body, headers=headers).status_code == 200
    store.close()
    reopened = TrajectoryStore(tmp_path / "run")
    assert len(reopened) == 0
    (partial,) = reopened.partials.values()
    assert partial.episode_id == "retail/train/1/0#0" and partial.status == "truncated"
    assert partial.calls[0].prompt_ids
    reopened.close()
    lines = (tmp_path / "run" / "partial.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["calls"][0]["output_ids"]


def test_the_proxy_records_the_embedded_models_own_tokens(tmp_path: Path) -> None:
    """The real model behind the proxy (envfactory serve-model's server, SmolLM2-135M): an
    agent harness's two calls are stored with exactly the ids and logprobs the model server
    returned, and the harness sees a plain reply."""
    from openai import OpenAI

    from envfactory.serving.model_server import ModelPool, running_model

    env = envfactory.make("hotel")
    task = env.task("train", 1, 0)
    tools = exposed_tools(task.public, env.tools("openai"), HarnessConfig())
    messages: list[dict[str, Any]] = opening(task.public, tools, HarnessConfig())
    key = f"{task.task_id}#0"
    store = TrajectoryStore(tmp_path / "run")
    direct: list[dict[str, Any]] = []
    with (
        running_model(ModelPool.load(max_tokens=12)) as model,
        ThreadServer(CaptureProxy(model.base_url, store).app()) as http,
    ):
        through = OpenAI(base_url=f"{http.url}/v1", api_key="unused")
        plain = OpenAI(base_url=model.base_url, api_key="unused")
        for _ in range(2):
            request: dict[str, Any] = {
                "model": "smol",
                "messages": messages,
                "tools": tools,
                "max_tokens": 12,
                "temperature": 0,
            }
            reply = through.chat.completions.create(**request, extra_headers={"X-Session-ID": key})
            assert reply.choices[0].logprobs is None  # the harness gets what it asked for
            same = plain.chat.completions.create(
                **request, logprobs=True, extra_body={"return_token_ids": True}
            ).model_dump()
            direct.append(same)
            message = reply.choices[0].message.model_dump(exclude_none=True)
            messages += [message, {"role": "user", "content": "Please go on."}]
        finish = {"task_id": task.task_id, "reward": 0.0, "status": "completed"}
        r = httpx.post(f"{http.url}/episodes/{quote(key, safe='')}/finish", json=finish)
        assert r.status_code == 200, r.text
    store.close()
    (rec,) = TrajectoryStore(store.directory).records()
    assert rec.episode_id == key and len(rec.calls) == 2
    for call, same in zip(rec.calls, direct, strict=True):  # greedy: the same tokens again
        assert call.prompt_ids == same["prompt_token_ids"]
        assert call.output_ids == same["choices"][0]["token_ids"]
        logprobs = [t["logprob"] for t in same["choices"][0]["logprobs"]["content"]]
        assert call.output_logprobs == pytest.approx(logprobs, abs=1e-4)
