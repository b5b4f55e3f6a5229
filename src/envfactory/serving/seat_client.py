"""A seat at a match of a world with seats on an envfactory server (``envfactory[serve]``).

``async with SeatClient(url, "connect_four") as me: await me.open("player_0")``, then
``await me.play(choose)``: ``choose(observation)`` returns an action whenever the turn comes
to the seat, and ``play`` returns the end of the episode (every seat's reward, the outcome).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

from envfactory.contract.errors import EnvFactoryError

Chooser = Callable[[dict[str, Any]], Awaitable[dict[str, Any]] | dict[str, Any]]


class MatchError(EnvFactoryError):
    """The server refused a message (its ``code`` says why)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class SeatClient:
    """One seat over one WebSocket connection (see the module docstring)."""

    def __init__(self, base_url: str, env_id: str, token: str | None = None) -> None:
        url = base_url.rstrip("/").replace("http://", "ws://", 1).replace("https://", "wss://", 1)
        self.url = f"{url}/envfactory/multi/{env_id}/ws"
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.pending: deque[tuple[str, dict[str, Any]]] = deque()
        self.match_id: str | None = None
        self.seat: str | None = None
        self._ws: Any = None

    async def __aenter__(self) -> SeatClient:
        from websockets.asyncio.client import connect

        self._ws = await connect(self.url, additional_headers=self.headers, max_size=2**24)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._ws is not None:
            await self._ws.close()

    async def _send(self, kind: str, data: dict[str, Any]) -> None:
        await self._ws.send(json.dumps({"type": kind, "data": data}))

    async def _read(self) -> tuple[str, dict[str, Any]]:
        message = json.loads(await self._ws.recv())
        return str(message["type"]), dict(message.get("data") or {})

    async def _reply(self, *kinds: str) -> dict[str, Any]:
        """The next message of one of ``kinds`` (pushes that come first wait their turn)."""
        while True:
            kind, data = await self._read()
            if kind == "error":
                raise MatchError(str(data.get("message")), str(data.get("code")))
            if kind in kinds:
                return data
            self.pending.append((kind, data))

    async def open(self, seat: str, **task: Any) -> dict[str, Any]:
        """A new match, taking ``seat``; ``task`` picks the task (task_id, or split /
        difficulty / index). Others join with the returned ``match_id``."""
        await self._send("open", {"seat": seat, **task})
        joined = await self._reply("joined")
        self.match_id, self.seat = joined["match_id"], seat
        return joined

    async def join(self, match_id: str, seat: str) -> dict[str, Any]:
        await self._send("join", {"match_id": match_id, "seat": seat})
        joined = await self._reply("joined")
        self.match_id, self.seat = match_id, seat
        return joined

    async def receive(self) -> tuple[str, dict[str, Any]]:
        """The next message the server pushed (an observation on the seat's turn, or the end)."""
        if self.pending:
            return self.pending.popleft()
        kind, data = await self._read()
        if kind == "error":
            raise MatchError(str(data.get("message")), str(data.get("code")))
        return kind, data

    async def step(self, action: dict[str, Any]) -> dict[str, Any]:
        """Take ``action`` for this seat; returns its result (``observation``, ``done``)."""
        await self._send("step", action)
        return await self._reply("result")

    async def observe(self) -> dict[str, Any]:
        await self._send("observe", {})
        return await self._reply("observation")

    async def play(self, choose: Chooser) -> dict[str, Any]:
        """Act on every turn of this seat until the episode ends; returns the end."""
        while True:
            kind, data = await self.receive()
            if kind == "end":
                return data
            if kind == "observation" and data.get("your_turn"):
                action = choose(data["observation"])
                if not isinstance(action, dict):
                    action = await action
                await self.step(action)
