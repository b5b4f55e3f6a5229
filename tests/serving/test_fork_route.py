"""``POST /envfactory/sessions/{id}/fork`` on a real server, through raw HTTP and the client."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from serving_helpers import play_oracle

import envfactory
from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.db.environment import DatabaseEnvironment
from envfactory.serving import ServeConfig, running
from envfactory.serving.client import AsyncRemoteEnvironment, connect
from envfactory.serving.errors import NotForkable, SessionUnknown
from envfactory.serving.server import Running

STOP = Message(content="I have to stop here, sorry.")


def test_fork_route_gives_an_independent_session(
    server: Running, world: DatabaseEnvironment
) -> None:
    task = world.task("train", 3, 4)
    local = world.episode()
    local.reset(task)
    with httpx.Client(base_url=server.url) as http:
        opened = http.post("/envfactory/sessions", json={"task_id": task.task_id}).json()
        sid = opened["session_id"]
        step = task.hidden.gold_plan[0]
        action = {"type": "tool_call", "tool": step.tool, "arguments": step.arguments}
        http.post(f"/envfactory/sessions/{sid}/step", json=action).raise_for_status()
        local.step(ToolCall(tool=step.tool, arguments=step.arguments))
        forked = http.post(f"/envfactory/sessions/{sid}/fork")
        assert forked.status_code == 201
        body = forked.json()
        child = body["session_id"]
        assert child != sid and body["parent_id"] == sid and body["steps"] == 1
        assert body["state_hash"] == local.state_hash() and not body["finished"]
        assert body["task"]["task_id"] == task.task_id and "gold_plan" not in forked.text
        state = http.get(f"/envfactory/sessions/{child}").json()
        assert state["steps"] == 1 and state["state_hash"] == local.state_hash()
        # the fork ends; its parent goes on, untouched
        done = http.post(f"/envfactory/sessions/{child}/step", json=STOP.model_dump()).json()
        assert done["finished"] and done["status"] == "completed"
        parent = http.get(f"/envfactory/sessions/{sid}").json()
        assert not parent["finished"] and parent["state_hash"] == local.state_hash()
        missing = http.post("/envfactory/sessions/no-such-session/fork")
        assert missing.status_code == 404 and missing.json()["error"] == "unknown_session"
        for s in (sid, child):
            http.delete(f"/envfactory/sessions/{s}").raise_for_status()
    local.close()


def test_client_fork_plays_like_its_parent(server: Running, world: DatabaseEnvironment) -> None:
    task = world.task("train", 2, 3)
    with connect(server.url, "retail") as env:
        parent = env.episode()
        first = parent.reset(task.public)
        parent.step(ToolCall(tool="get_product", arguments={"product_id": "PRD-00001"}))
        child = parent.fork()
        assert child.session_id != parent.session_id and child.steps == parent.steps == 1
        assert child.task == parent.task and child.state_hash() == parent.state_hash()
        for ep in (parent, child):
            play_oracle(task, ep.step, first)
            assert ep.done and ep.status == "completed"
        assert child.evaluate() == parent.evaluate() and child.evaluate().reward == 1.0
        sid = child.session_id
        child.close()
        with pytest.raises(SessionUnknown):
            env.call(env.calls.state(sid or ""))
        # a finished episode forks too: its fork is finished with the same verdict
        late = parent.fork()
        assert late.done and late.evaluate() == parent.evaluate()
        late.close()
        parent.close()


def test_async_client_fork(server: Running, world: DatabaseEnvironment) -> None:
    task = world.task("train", 1, 5)

    async def run() -> tuple[str, str, str]:
        async with AsyncRemoteEnvironment(server.url, "retail") as env:
            parent = env.episode()
            await parent.reset(task)
            child = await parent.fork()
            step = task.hidden.gold_plan[0]
            await child.step(ToolCall(tool=step.tool, arguments=step.arguments))
            hashes = (await parent.state_hash(), await child.state_hash(), child.status)
            await child.close()
            await parent.close()
            return hashes

    mine, theirs, status = asyncio.run(run())
    local = world.episode()
    local.reset(task)
    assert mine == local.state_hash() and status == "truncated"
    step = task.hidden.gold_plan[0]
    local.step(ToolCall(tool=step.tool, arguments=step.arguments))
    assert theirs == local.state_hash()
    local.close()


def test_an_unforkable_kind_gets_a_structured_501() -> None:
    envs = {"term-git": envfactory.make("term-git")}
    config = ServeConfig(envs=("term-git",))
    with running(config, envs=envs) as srv, connect(srv.url, "term-git") as env:
        episode = env.episode()
        first: Observation = episode.reset(env.task("train", 1, 0))
        assert first.kind == "task"
        response = env.http.post(f"/envfactory/sessions/{episode.session_id}/fork")
        assert response.status_code == 501
        body = response.json()
        assert body["error"] == "fork_unsupported" and "TerminalEpisode" in body["detail"]
        assert "sandboxed directory" in body["detail"]
        with pytest.raises(NotForkable) as err:
            episode.fork()
        assert err.value.status == 501
        stats = env.http.get("/envfactory/stats").json()
        assert stats["sessions"] == 1  # the refused fork left no session behind
        episode.close()
