"""Our Python client, sync and async: it reads like the in-process API and agrees with it."""

from __future__ import annotations

import asyncio

import pytest
from serving_helpers import play_oracle

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.db.environment import DatabaseEnvironment
from envfactory.serving.client import AsyncRemoteEnvironment, connect
from envfactory.serving.errors import EpisodeFinished, SessionUnknown
from envfactory.serving.server import Running


def test_sync_client_matches_in_process(server: Running, world: DatabaseEnvironment) -> None:
    task = world.task("train", 3, 2)
    local = world.episode()
    local_obs = local.reset(task)
    with connect(server.url, "retail") as env:
        assert env.info().id == "retail" and env.tools()[0]["type"] == "function"
        assert env.task("train", 3, 2) == task.public
        episode = env.episode()
        first = episode.reset(env.task("train", 3, 2))
        assert first == local_obs and episode.task == task.public

        def send(action: ToolCall | Message) -> Observation:
            mirrored = local.step(action)
            remote = episode.step(action)
            assert remote == mirrored
            return remote

        play_oracle(task, send, first)
        assert episode.done and episode.status == "completed"
        full = local.evaluate()  # the client is an agent's: no rubric
        assert episode.evaluate() == full.model_copy(update={"items": []})
        assert episode.state_hash() == local.state_hash()
        with pytest.raises(EpisodeFinished):
            episode.step(ToolCall(tool="get_order", arguments={"order_id": "ORD-00001"}))
        sid = episode.session_id
        episode.close()
        with pytest.raises(SessionUnknown):
            env.call(env.calls.state(sid or ""))
    local.close()


def test_async_client(server: Running, world: DatabaseEnvironment) -> None:
    async def run() -> tuple[float | None, str]:
        async with AsyncRemoteEnvironment(server.url, "retail") as env:
            episodes = [env.episode() for _ in range(5)]
            await asyncio.gather(*(e.reset(f"retail/train/1/{i}") for i, e in enumerate(episodes)))
            await asyncio.gather(*(e.step(Message(content="I cannot help.")) for e in episodes))
            verdicts = await asyncio.gather(*(e.evaluate() for e in episodes))
            hashes = {await e.state_hash() for e in episodes}
            await asyncio.gather(*(e.close() for e in episodes))
            assert all(e.done and e.status == "completed" for e in episodes)
            return max(v.reward or 0.0 for v in verdicts), hashes.pop()

    best, _ = asyncio.run(run())
    assert best == 0.0  # doing nothing earns nothing
