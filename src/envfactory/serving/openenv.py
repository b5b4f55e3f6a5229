"""OpenEnv's WebSocket episode channel: ``/openenv/{env_id}/ws`` (and ``/ws`` for the first env).

One episode per connection. Client messages ``{"type": "reset"|"step"|"state"|"close", "data"}``;
answers ``{"type": "observation", "data": {"observation", "reward", "done"}}``,
``{"type": "state", "data": {...}}`` or ``{"type": "error", "data": {"message", "code"}}``.

``reset`` data picks the task: ``task_id``, or ``split`` / ``difficulty`` / ``index``; ``seed``
stands for the index when none is given. ``step`` data is an engine action
(``{"type": "tool_call", "tool", "arguments"}`` or ``{"type": "message", "content", "final"}``)
or an OpenEnv MCP action (``{"type": "call_tool", "tool_name", "arguments"}``,
``{"type": "list_tools"}``).
"""

from __future__ import annotations

import contextlib
import json
import random
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from envfactory.serving.bodies import decode
from envfactory.serving.catalog import TaskRef
from envfactory.serving.engine import Engine, Outcome
from envfactory.serving.errors import ServingError
from envfactory.serving.sessions import Session

PROTOCOL = "openenv"


def _error(message: str, code: str) -> str:
    return json.dumps({"type": "error", "data": {"message": message, "code": code}})


def _observation(observation: dict[str, Any], reward: float | None, done: bool) -> str:
    data = {"observation": observation, "reward": reward, "done": done}
    return json.dumps({"type": "observation", "data": data}, default=str)


class Channel:
    """One connection's episode."""

    def __init__(self, engine: Engine, env_id: str) -> None:
        self.engine = engine
        self.env_id = env_id
        self.session: Session | None = None
        self.episode_id: str | None = None

    def _ref(self, data: dict[str, Any]) -> TaskRef:
        catalog = self.engine.catalog(self.env_id)
        if isinstance(data.get("task_id"), str):
            return catalog.parse_task_id(data["task_id"])
        env = catalog.env
        split = str(data.get("split", "train"))
        difficulty = data.get("difficulty", env.difficulties[0])
        index = data.get("index", data.get("seed"))
        if index is None:
            index = random.randrange(catalog.num_tasks(split))
        if not isinstance(difficulty, int) or not isinstance(index, int):
            raise ServingError("reset: difficulty, index and seed are integers")
        return catalog.ref(split, difficulty, index)

    async def reset(self, data: dict[str, Any]) -> str:
        ref = self._ref(data)
        self.close()
        self.session, obs = await self.engine.open(ref, PROTOCOL)
        episode_id = data.get("episode_id")
        self.episode_id = str(episode_id) if episode_id is not None else self.session.id
        return _observation(obs.model_dump(mode="json"), None, False)

    def _live(self) -> Session:
        if self.session is None:
            raise ServingError("no episode yet: send a reset message first")
        return self.engine.store.get(self.session.id)

    async def step(self, data: dict[str, Any]) -> str:
        session = self._live()
        kind = data.get("type")
        if kind == "list_tools":
            tools = self.engine.tool_specs(session.env.id, list(session.task.public.tools))
            tools += self.engine.reserved[session.env.id].specs()
            listed = [
                {
                    "name": t["name"],
                    "description": t["description"],
                    "input_schema": t["inputSchema"],
                }
                for t in tools
            ]
            return _observation({"tools": listed}, None, session.finished)
        if kind == "call_tool":
            name = str(data.get("tool_name", ""))
            action = self.engine.action(session.env.id, name, data.get("arguments", {}))
            outcome = await self.engine.act(session, action)
            return _observation(_tool_observation(name, outcome), outcome.reward, outcome.finished)
        outcome = await self.engine.act(session, data)
        return _observation(
            outcome.observation.model_dump(mode="json"), outcome.reward, outcome.finished
        )

    def state(self) -> str:
        session = self._live()
        data = {
            "episode_id": self.episode_id,
            "step_count": session.episode.steps,
            "session_id": session.id,
            "env_id": session.env.id,
            "task_id": session.task.task_id,
            "done": session.finished,
            "status": session.verdict.status if session.verdict else None,
            "reward": session.verdict.reward if session.verdict else None,
            "state_hash": session.episode.state_hash(),
        }
        return json.dumps({"type": "state", "data": data})

    def close(self) -> None:
        if self.session is not None:
            self.engine.close(self.session.id)
            self.session = None


def _tool_observation(name: str, outcome: Outcome) -> dict[str, Any]:
    """An OpenEnv ``CallToolObservation``: tool errors go in ``result``, transport ones in
    ``error``."""
    obs = outcome.observation
    code = obs.error.code if obs.error else None
    error = None
    if code == "unknown_tool":
        error = {"error_type": "tool_not_found", "message": obs.content}
    elif code in ("malformed_action", "invalid_arguments"):
        error = {"error_type": "invalid_args", "message": obs.content}
    result = {"data": obs.data, "content": obs.content, "is_error": obs.error is not None}
    return {"tool_name": name, "result": result, "error": error, "metadata": {"kind": obs.kind}}


def openenv_router(engine: Engine) -> APIRouter:
    r = APIRouter()

    async def serve(websocket: WebSocket, env_id: str) -> None:
        await websocket.accept()
        try:
            engine.env(env_id)
            engine.store.check_room()
        except ServingError as exc:
            await websocket.send_text(_error(exc.message, _code(exc)))
            await websocket.close()
            return
        channel = Channel(engine, engine.env(env_id).id)
        try:
            while True:
                raw = await websocket.receive_text()
                reply = await _answer(channel, raw)
                if reply is None:
                    break
                await websocket.send_text(reply)
        except WebSocketDisconnect:
            pass
        finally:
            channel.close()
        await _close_quietly(websocket)

    @r.websocket("/openenv/{env_id}/ws")
    async def ws_env(websocket: WebSocket, env_id: str) -> None:
        await serve(websocket, env_id)

    @r.websocket("/ws")
    async def ws_default(websocket: WebSocket) -> None:
        await serve(websocket, engine.default_env)

    return r


async def _answer(channel: Channel, raw: str) -> str | None:
    """The reply to one client message; None closes the connection."""
    try:
        message = decode(raw)
    except ValueError as exc:
        return _error(f"Invalid JSON: {exc}", "INVALID_JSON")
    if not isinstance(message, dict):
        return _error("a message is a JSON object with a 'type'", "VALIDATION_ERROR")
    kind = message.get("type")
    data = message.get("data", {})
    if not isinstance(data, dict):
        return _error("'data' must be an object", "VALIDATION_ERROR")
    try:
        if kind == "reset":
            return await channel.reset(data)
        if kind == "step":
            return await channel.step(data)
        if kind == "state":
            return channel.state()
        if kind == "close":
            return None
        return _error(f"Unknown message type: {kind}", "UNKNOWN_TYPE")
    except ServingError as exc:
        return _error(exc.message, _code(exc))


def _code(exc: ServingError) -> str:
    if exc.code == "capacity_reached":
        return "CAPACITY_REACHED"
    if exc.code in ("unknown_session", "session_expired", "episode_finished"):
        return "SESSION_ERROR"
    if exc.code == "not_found":
        return "FACTORY_ERROR"
    return "EXECUTION_ERROR"


async def _close_quietly(websocket: WebSocket) -> None:
    with contextlib.suppress(RuntimeError):
        await websocket.close()
