"""Multi-agent matches over a real server on loopback: one seat per WebSocket connection."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from multiagent_helpers import world

from envfactory.contract.actions import Observation
from envfactory.serving import ServeConfig, running
from envfactory.serving.seat_client import MatchError, SeatClient
from envfactory.serving.server import Running


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    envs = ("kuhn_poker", "cooperation", "blotto", "retail")
    with running(ServeConfig(envs=envs, max_sessions=64)) as srv:
        yield srv


async def play_seat(
    me: SeatClient, env_id: str, name: str, level: int, heard: list[str]
) -> dict[str, Any]:
    """Play ``name`` with the scripted seat of ``level``; what it is shown goes to ``heard``."""
    env = world(env_id)
    player = env.scripted(name, level)
    player.start(env.task("test", 2, 5), name)

    def choose(obs: dict[str, Any]) -> dict[str, Any]:
        heard.append(json.dumps(obs))
        return player.act(Observation.model_validate(obs)).model_dump(exclude_none=True)

    return await me.play(choose)


async def match(url: str, env_id: str, level: int) -> tuple[list[Any], list[list[str]]]:
    """Two connections, one seat each, play the task test/2/5 of ``env_id``."""
    a, b = world(env_id).agents
    heard: list[list[str]] = [[], []]
    async with SeatClient(url, env_id) as first, SeatClient(url, env_id) as second:
        joined = await first.open(a, task_id=f"{env_id}/test/2/5")
        assert joined["waiting_for"] == [b] and joined["task"]["task_id"] == f"{env_id}/test/2/5"
        assert '"game"' not in json.dumps(joined)  # the public task only
        await second.join(joined["match_id"], b)
        ends = await asyncio.gather(
            play_seat(first, env_id, a, level, heard[0]),
            play_seat(second, env_id, b, level, heard[1]),
        )
    return list(ends), heard


@pytest.mark.parametrize("env_id", ["kuhn_poker", "cooperation", "blotto"])
def test_two_connections_play_a_match(server: Running, env_id: str) -> None:
    (end_a, end_b), heard = asyncio.run(match(server.url, env_id, 3))
    assert end_a == end_b and end_a["status"] == "completed"
    env = world(env_id)
    assert set(end_a["rewards"]) == set(env.agents)
    if env_id == "cooperation":
        assert end_a["rewards"] == {"front": 1.0, "back": 1.0}
    if env_id == "kuhn_poker":  # a seat's card reaches only that seat (until a showdown)
        assert all(heard)
        deals = env.task("test", 2, 5).hidden.game["deals"]
        for i, lines in enumerate(heard):
            other = 1 - i
            for line in lines:
                for hand, deal in enumerate(deals):
                    assert json.dumps({"hand": hand, "card": deal[other]}) not in line


def test_match_errors(server: Running) -> None:
    async def main() -> None:
        async with (
            SeatClient(server.url, "kuhn_poker") as a,
            SeatClient(server.url, "kuhn_poker") as b,
        ):
            with pytest.raises(MatchError, match="bad_request"):
                await a.open("player_7")
            joined = await a.open("player_0", index=1)
            with pytest.raises(MatchError, match="conflict"):
                await a.step({"type": "tool_call", "tool": "act", "arguments": {"move": "bet"}})
            with pytest.raises(MatchError, match="conflict"):
                await b.join(joined["match_id"], "player_0")
            with pytest.raises(MatchError, match="not_found"):
                await b.join("no-such-match", "player_1")
            await b.join(joined["match_id"], "player_1")
            kind, data = await a.receive()
            assert kind == "observation" and data["your_turn"]
            assert data["observation"]["data"]["private"]["card"] in "JQK"
            # an action naming the other seat still acts for this connection's seat
            move = {"type": "tool_call", "tool": "act", "arguments": {"move": "check"}}
            result = await a.step({**move, "actor": "player_1"})
            assert result["observation"]["actor"] == "player_0" and not result["done"]
            kind, data = await b.receive()
            assert kind == "observation" and data["your_turn"]
            assert "player_0 checks" in data["observation"]["content"]
            bad = await b.step({"type": "tool_call", "tool": "act", "arguments": {"move": "fold"}})
            assert bad["observation"]["error"]["code"] == "rule_violation"

        async with SeatClient(server.url, "retail") as c:
            with pytest.raises(MatchError, match="one agent"):
                await c.open("agent")

    asyncio.run(main())


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("[" * 3000 + "]" * 3000, "nested more than"),
        ('{"type": "open", "data": {"seat": "\\ud800"}}', "lone surrogate"),
        ("{not json", "invalid JSON"),
    ],
)
def test_hostile_messages_get_an_error_and_the_socket_stays(
    server: Running, raw: str, says: str
) -> None:
    """Deep nesting raised RecursionError out of the socket loop (a dropped connection)."""
    from websockets.asyncio.client import connect

    async def main() -> None:
        url = server.url.replace("http://", "ws://") + "/envfactory/multi/kuhn_poker/ws"
        async with connect(url) as ws:
            await ws.send(raw)
            reply = json.loads(await ws.recv())
            assert reply["type"] == "error" and says in reply["data"]["message"]
            await ws.send(json.dumps({"type": "open", "data": {"seat": "player_0"}}))
            assert json.loads(await ws.recv())["type"] == "joined"

    asyncio.run(main())


def test_single_agent_routes_still_work(server: Running) -> None:
    opened = httpx.post(f"{server.url}/envfactory/sessions", json={"env_id": "retail"}).json()
    assert opened["session_id"] and opened["observation"]["kind"] == "task"
    info = httpx.get(f"{server.url}/envfactory/envs/kuhn_poker").json()
    assert info["kind"] == "multiagent" and info["agents"] == 2
