"""Episodes of worlds with seats over the server: one seat per WebSocket connection.

``/envfactory/multi/{env_id}/ws``. A client opens a match and takes a seat, others join the
match by id and take the other seats; the episode starts once every seat is taken. Messages
are JSON objects ``{"type", "data"}``:

client -> server
  ``open``   ``{"seat", "task_id"?, "split"?, "difficulty"?, "index"?}``: a new match
  ``join``   ``{"match_id", "seat"}``: a free seat of a match
  ``step``   an engine action (``{"type": "tool_call", ...}`` or ``{"type": "message", ...}``);
             it always acts for the connection's seat
  ``observe``: the seat's observation now
  ``close``: leave (the connection closes)

server -> client
  ``joined``       ``{"match_id", "seat", "seats", "task", "waiting_for"}``
  ``observation``  ``{"observation", "your_turn", "done"}``: pushed when the turn comes to
                   the seat (and after each of its steps while it keeps the turn), and the
                   answer to ``observe``
  ``result``       ``{"observation", "done"}``: what the seat's own step did
  ``end``          ``{"rewards", "reward", "status", "outcome"}``: pushed to every seat at the end
  ``error``        ``{"message", "code"}``

A match is a session of the server (capacity and idle expiry hold), and a seat's observations
are its own: the server sends a connection nothing another seat may not see.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from envfactory.contract.environment import Environment
from envfactory.contract.tasks import Task
from envfactory.episode.seats import SeatedEpisode, seated
from envfactory.serving.bodies import decode
from envfactory.serving.engine import Engine
from envfactory.serving.errors import BadRequest, Conflict, NotFound, ServingError
from envfactory.serving.sessions import Session

PROTOCOL = "envfactory-multi"


@dataclass(eq=False)
class Link:
    """A connection's way out: one message at a time, whoever sends it."""

    websocket: WebSocket
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def send(self, kind: str, data: Any) -> None:
        text = json.dumps({"type": kind, "data": data}, default=str)
        async with self.lock:
            with contextlib.suppress(RuntimeError, WebSocketDisconnect):
                await self.websocket.send_text(text)


@dataclass(eq=False)
class Seat:
    """One connection's seat: its link, and whether it holds the turn."""

    name: str
    link: Link
    turn: bool = False
    ended: bool = False

    async def send(self, kind: str, data: Any) -> None:
        await self.link.send(kind, data)


@dataclass(eq=False)
class Match:
    """An episode with seats and the connections seated at it."""

    id: str
    env: Environment
    task: Task
    episode: SeatedEpisode
    seats: dict[str, Seat | None]
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def full(self) -> bool:
        return all(s is not None for s in self.seats.values())

    async def announce(self, stepped: str | None = None) -> None:
        """Tell each seated connection what it must know: its turn (again, for the seat that
        just stepped and still holds it), or the end."""
        if not self.full:
            return
        actors = self.episode.current_actors()
        for name, seat in self.seats.items():
            if seat is None:
                continue
            if self.episode.done:
                if not seat.ended:
                    seat.ended = True
                    await seat.send("end", self.ending())
                continue
            now = name in actors
            if now and (not seat.turn or name == stepped):
                await seat.send("observation", self.view(name))
            seat.turn = now

    def view(self, seat: str) -> dict[str, Any]:
        obs = self.episode.observe(seat)
        return {
            "observation": obs.model_dump(mode="json"),
            "your_turn": seat in self.episode.current_actors(),
            "done": self.episode.done,
        }

    def ending(self) -> dict[str, Any]:
        verdict = self.episode.evaluate()
        return {
            "rewards": verdict.rewards,
            "reward": verdict.reward,
            "status": verdict.status,
            "outcome": verdict.outcome,
        }


class Matches:
    """The open matches of one server."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.live: dict[str, Match] = {}

    def _task(self, env: Environment, data: dict[str, Any]) -> Task:
        catalog = self.engine.catalog(env.id)
        if isinstance(data.get("task_id"), str):
            ref = catalog.parse_task_id(data["task_id"])
        else:
            difficulty, index = data.get("difficulty", env.difficulties[0]), data.get("index")
            split = str(data.get("split", "train"))
            if index is None:
                index = random.randrange(catalog.num_tasks(split))
            if not isinstance(difficulty, int) or not isinstance(index, int):
                raise BadRequest("open: difficulty and index are integers")
            ref = catalog.ref(split, difficulty, index)
        return catalog.task(ref)

    async def open(self, env_id: str, data: dict[str, Any], seat: Seat) -> Match:
        env = self.engine.env(env_id)
        world = seated(env)
        if world is None:
            raise BadRequest(f"{env.id} is a {env.kind} world: it has one agent, not seats")
        if seat.name not in world.seats:
            raise BadRequest(f"{env.id} has no seat {seat.name!r}; seats: {', '.join(world.seats)}")
        self.engine.store.check_room()
        task = self._task(env, data)
        episode = world.episode(self.engine.episode_config)
        episode.reset(task)
        sid = self.engine.store.new_id()
        session = Session(id=sid, env=env, episode=episode, task=task, protocol=PROTOCOL)
        try:
            self.engine.store.add(session)
        except BaseException:
            episode.close()
            raise
        match = Match(sid, env, task, episode, dict.fromkeys(world.seats))
        match.seats[seat.name] = seat
        self.live[sid] = match
        return match

    def join(self, match_id: str, seat: Seat) -> Match:
        match = self.get(match_id)
        if seat.name not in match.seats:
            raise BadRequest(
                f"the match has no seat {seat.name!r}; seats: {', '.join(match.seats)}"
            )
        if match.seats[seat.name] is not None:
            raise Conflict(f"seat {seat.name} of match {match_id[:64]!r} is taken")
        match.seats[seat.name] = seat
        return match

    def get(self, match_id: str) -> Match:
        match = self.live.get(match_id)
        if match is None:
            raise NotFound(f"no match {match_id[:64]!r}")
        try:
            self.engine.store.get(match_id)  # marks the session seen
        except ServingError:
            self.live.pop(match_id, None)  # expired: the store has closed its episode
            raise
        return match

    def leave(self, match: Match, seat: Seat) -> None:
        if match.seats.get(seat.name) is seat:
            match.seats[seat.name] = None
        if all(s is None for s in match.seats.values()):
            self.live.pop(match.id, None)
            self.engine.close(match.id)


class Channel:
    """One connection: a seat at a match."""

    def __init__(self, matches: Matches, env_id: str, websocket: WebSocket) -> None:
        self.matches = matches
        self.env_id = env_id
        self.link = Link(websocket)
        self.seat: Seat | None = None
        self.match: Match | None = None

    async def answer(self, message: Any) -> bool:
        """Handle one client message; False closes the connection."""
        if not isinstance(message, dict) or not isinstance(message.get("data", {}), dict):
            raise BadRequest("a message is an object with a 'type' and an object 'data'")
        kind, data = message.get("type"), message.get("data", {})
        if kind == "close":
            return False
        if kind in ("open", "join"):
            await self._sit(kind, data)
        elif kind == "step":
            await self._step(data)
        elif kind == "observe":
            match, seat = self._seated()
            await seat.send("observation", match.view(seat.name))
        else:
            raise BadRequest(f"unknown message type {str(kind)[:40]!r}")
        return True

    async def _sit(self, kind: str, data: dict[str, Any]) -> None:
        if self.match is not None:
            raise Conflict("this connection already has a seat")
        name = data.get("seat")
        if not isinstance(name, str):
            raise BadRequest(f"{kind}: name the seat to take")
        seat = Seat(name, self.link)
        if kind == "open":
            match = await self.matches.open(self.env_id, data, seat)
        else:
            match = self.matches.join(str(data.get("match_id", "")), seat)
        self.match, self.seat = match, seat
        waiting = [s for s, c in match.seats.items() if c is None]
        await seat.send(
            "joined",
            {
                "match_id": match.id,
                "seat": name,
                "seats": list(match.seats),
                "task": match.task.public.model_dump(mode="json"),
                "waiting_for": waiting,
            },
        )
        async with match.lock:
            await match.announce()

    def _seated(self) -> tuple[Match, Seat]:
        if self.match is None or self.seat is None:
            raise BadRequest("take a seat first: send open or join")
        self.matches.get(self.match.id)
        return self.match, self.seat

    async def _step(self, action: dict[str, Any]) -> None:
        match, seat = self._seated()
        if not match.full:
            raise Conflict("the match starts when every seat is taken")
        async with match.lock:
            if match.episode.done:
                raise Conflict("the episode is over")
            obs = await asyncio.to_thread(match.episode.step, action, seat.name)
            result = {"observation": obs.model_dump(mode="json"), "done": obs.done}
            await seat.send("result", result)
            await match.announce(stepped=seat.name)

    def close(self) -> None:
        if self.match is not None and self.seat is not None:
            self.matches.leave(self.match, self.seat)


def seats_router(engine: Engine) -> APIRouter:
    """``/envfactory/multi/{env_id}/ws``: one seat of a world with seats per connection."""
    r = APIRouter(prefix="/envfactory/multi", tags=["envfactory"])
    matches = Matches(engine)

    @r.websocket("/{env_id}/ws")
    async def ws(websocket: WebSocket, env_id: str) -> None:
        await websocket.accept()
        channel = Channel(matches, env_id, websocket)
        try:
            while True:
                raw = await websocket.receive_text()
                try:
                    if not await channel.answer(decode(raw)):
                        break
                except ValueError as exc:
                    await channel.link.send(
                        "error", {"message": f"invalid JSON: {exc}", "code": "invalid_json"}
                    )
                except ServingError as exc:
                    await channel.link.send("error", {"message": exc.message, "code": exc.code})
        except WebSocketDisconnect:
            pass
        finally:
            channel.close()
        with contextlib.suppress(RuntimeError):
            await websocket.close()

    return r
