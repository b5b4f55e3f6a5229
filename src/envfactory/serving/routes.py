"""envfactory's own routes, under ``/envfactory``: what the standard has no route for.

Environment info, public tasks by address, JSON sessions (open, step, fork, state, verdict
with its rubric, close) and server stats. Sessions are shared with the other protocols: the
verdict of an Open Reward Standard session is ``GET /envfactory/sessions/{X-Session-ID}/verdict``.
Later additions (curriculum, multi-agent seats) belong under this prefix too.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Header
from pydantic import Field

from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.environment import EnvInfo
from envfactory.contract.tasks import PublicTask
from envfactory.contract.verdict import Verdict
from envfactory.serving.engine import Engine
from envfactory.serving.errors import BadRequest
from envfactory.serving.models import (
    Closed,
    ErrorOut,
    Forked,
    OpenBody,
    Opened,
    SessionState,
    Stats,
    StepOut,
)
from envfactory.serving.sessions import Session

PREFIX = "/envfactory"
PROTOCOL = "envfactory"

Action = Annotated[ToolCall | Message, Field(discriminator="type")]


def session_state(s: Session) -> SessionState:
    return SessionState(
        session_id=s.id,
        env_id=s.env.id,
        task_id=s.task.task_id,
        protocol=s.protocol,
        steps=s.episode.steps,
        finished=s.finished,
        status=s.verdict.status if s.verdict else None,
        state_hash=s.verdict.state_hash if s.verdict else s.episode.state_hash(),
        idle_s=round(time.monotonic() - s.last_seen, 3),
    )


def envfactory_router(engine: Engine) -> APIRouter:
    r = APIRouter(prefix=PREFIX, tags=["envfactory"])

    @r.get("/envs", response_model=list[EnvInfo])
    async def envs() -> list[EnvInfo]:
        return [e.info() for e in engine.envs.values()]

    @r.get("/envs/{env_id}", response_model=EnvInfo)
    async def env_info(env_id: str) -> EnvInfo:
        return engine.env(env_id).info()

    @r.get("/envs/{env_id}/tools", response_model=list[dict[str, Any]])
    async def env_tools(env_id: str, format: Literal["openai", "mcp"] = "openai") -> list[Any]:
        """The world's tool schemas, in OpenAI function form or MCP form."""
        return engine.env(env_id).tools(format)

    @r.get("/envs/{env_id}/tasks/{split}/{difficulty}/{index}", response_model=PublicTask)
    async def public_task(env_id: str, split: str, difficulty: int, index: int) -> PublicTask:
        catalog = engine.catalog(env_id)
        return catalog.task(catalog.ref(split, difficulty, index)).public

    @r.post("/sessions", response_model=Opened, status_code=201)
    async def open_session(
        body: OpenBody, x_session_id: str | None = Header(None, max_length=200)
    ) -> Opened:
        """Open an episode in a new session (``X-Session-ID`` chooses its id)."""
        if body.task_id is not None:
            env_id = body.task_id.split("/", 1)[0]
            ref = engine.catalog(env_id).parse_task_id(body.task_id)
        else:
            env_id = body.env_id or engine.default_env
            env = engine.env(env_id)
            difficulty = env.difficulties[0] if body.difficulty is None else body.difficulty
            ref = engine.catalog(env_id).ref(body.split, difficulty, body.index)
        if body.env_id is not None and engine.env(body.env_id).id != ref.env_id:
            raise BadRequest(f"task {ref.task_id} is not a task of {body.env_id}")
        sid = x_session_id.strip() if x_session_id and x_session_id.strip() else None
        s, obs = await engine.open(ref, PROTOCOL, sid=sid)
        return Opened(session_id=s.id, task=s.task.public, observation=obs)

    @r.get("/sessions/{sid}", response_model=SessionState)
    async def state(sid: str) -> SessionState:
        return session_state(engine.store.get(sid))

    @r.post("/sessions/{sid}/step", response_model=StepOut)
    async def step(sid: str, action: Annotated[Action, Body()]) -> StepOut:
        """One action; 409 once the episode has finished."""
        outcome = await engine.act(engine.store.get(sid), action)
        return StepOut(
            observation=outcome.observation,
            reward=outcome.reward,
            finished=outcome.finished,
            status=outcome.verdict.status if outcome.verdict else None,
        )

    @r.post(
        "/sessions/{sid}/fork",
        response_model=Forked,
        status_code=201,
        responses={501: {"model": ErrorOut, "description": "this kind of world cannot fork"}},
    )
    async def fork(sid: str) -> Forked:
        """A new session with an independent copy of this one's live episode; 501
        (``fork_unsupported``) for a kind of world that cannot fork."""
        parent = engine.store.get(sid)
        child = await engine.fork(parent, parent.protocol)
        return Forked(
            session_id=child.id,
            parent_id=sid,
            task=child.task.public,
            steps=child.episode.steps,
            finished=child.finished,
            state_hash=session_state(child).state_hash,
        )

    @r.get("/sessions/{sid}/verdict", response_model=Verdict)
    async def verdict(sid: str) -> Verdict:
        """Reward, status and state hash once the episode has finished (409 before); the rubric
        is the trainer's (``/envfactory/trainer/sessions/{sid}/verdict``)."""
        return engine.agent_verdict(engine.store.get(sid))

    @r.delete("/sessions/{sid}", response_model=Closed)
    async def close(sid: str) -> Closed:
        engine.store.get(sid)
        return Closed(session_id=sid, closed=engine.close(sid))

    @r.get("/stats", response_model=Stats)
    async def stats() -> Stats:
        return Stats(
            sessions=len(engine.store),
            capacity=engine.store.capacity,
            idle_timeout_s=engine.store.idle_timeout,
            expired_total=engine.store.expired_total,
            envs=list(engine.envs),
        )

    return r
