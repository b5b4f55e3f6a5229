"""Episodes over MCP, driven by the official ``mcp`` client (streamable HTTP)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from pydantic import AnyUrl
from serving_helpers import assert_no_hidden

from envfactory.contract.actions import Message, Observation
from envfactory.contract.results import ToolError
from envfactory.db.environment import DatabaseEnvironment
from envfactory.policies.scripted import Oracle
from envfactory.serving import ServeConfig, running
from envfactory.serving.server import Running


async def _play(url: str, world: DatabaseEnvironment, task_id: str) -> dict[str, Any]:
    _, split, level, index = task_id.split("/")
    task = world.task(split, int(level), int(index))  # type: ignore[arg-type]
    mcp_url = f"{url}/mcp/retail?task_id={task_id}"
    async with (
        streamable_http_client(mcp_url) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert {"finish", "message_user"} <= set(tools)
        assert set(task.public.tools) <= set(tools)
        task_text = (await session.read_resource(AnyUrl("envfactory://task"))).contents[0]
        public = json.loads(task_text.text)  # type: ignore[union-attr]
        assert public["task_id"] == task_id
        oracle = Oracle()
        oracle.start(task, [])
        obs = Observation(kind="task", content=public["instruction"])
        structured: dict[str, Any] = {}
        while not obs.done:
            action = oracle.act(obs)
            if isinstance(action, Message):
                name, args = "finish", {"message": action.content}
            else:
                name, args = action.tool, dict(action.arguments)  # type: ignore[arg-type]
            result = await session.call_tool(name, args)
            structured = result.structuredContent or {}
            assert_no_hidden(result.model_dump_json(), task)
            error = ToolError(**structured["error"]) if structured.get("error") else None
            obs = Observation(
                kind=structured["kind"],
                content=result.content[0].text,  # type: ignore[union-attr]
                data=structured["data"],
                error=error,
                done=structured["finished"],
            )
        again = await session.call_tool("finish", {"message": "again"})
        assert again.isError
        verdict = json.loads(
            (await session.read_resource(AnyUrl("envfactory://verdict"))).contents[0].text  # type: ignore[union-attr]
        )
        return {"last": structured, "verdict": verdict}


def test_an_mcp_agent_finishes_and_reads_its_reward(
    server: Running, world: DatabaseEnvironment
) -> None:
    out = asyncio.run(_play(server.url, world, "retail/test/2/4"))
    assert out["last"]["finished"] is True and out["last"]["reward"] == 1.0
    assert out["verdict"]["reward"] == 1.0 and out["verdict"]["status"] == "completed"
    assert out["verdict"]["items"] == []  # the rubric is the trainer's


def test_mcp_session_close_frees_the_episode(server: Running, world: DatabaseEnvironment) -> None:
    async def count_during_and_after() -> tuple[int, int]:
        url = f"{server.url}/mcp/retail?split=train&difficulty=1&index=3"
        async with (
            streamable_http_client(url) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.list_tools()
            during = httpx.get(f"{server.url}/envfactory/stats").json()["sessions"]
        after = httpx.get(f"{server.url}/envfactory/stats").json()["sessions"]
        return during, after

    during, after = asyncio.run(count_during_and_after())
    assert after == during - 1


def test_a_second_server_in_the_process_serves_mcp(
    server: Running, world: DatabaseEnvironment
) -> None:
    """sse-starlette's process-wide exit event, bound to the first server's loop, made every
    MCP request to a later server in the same process hang."""
    asyncio.run(_play(server.url, world, "retail/test/2/4"))
    with running(ServeConfig(envs=("retail",))) as second:
        out = asyncio.run(asyncio.wait_for(_play(second.url, world, "retail/test/2/4"), 60))
    assert out["verdict"]["reward"] == 1.0
