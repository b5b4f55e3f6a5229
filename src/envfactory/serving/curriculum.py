"""The curriculum over HTTP, under the server's own prefix (``/envfactory/curriculum``).

``GET  /next``            the next task to train on: an environment by learnability (or the
                          one named), a level of its frontier window, a fresh index;
``POST /report/{sid}``    count a finished session's verdict (idempotent per session);
``GET  ``                 every environment's frontier, window, accuracy and weight;
``GET  /history``         the frontier moves.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Query
from pydantic import BaseModel

from envfactory.contract.tasks import PublicTask
from envfactory.curriculum.controller import Curriculum, EnvState
from envfactory.curriculum.store import CurriculumError
from envfactory.serving.engine import Engine
from envfactory.serving.errors import BadRequest, Conflict
from envfactory.serving.routes import PREFIX


class NextTask(BaseModel):
    """A task to open a session on (``POST /envfactory/sessions`` with its ``task_id``)."""

    task_id: str
    env_id: str
    split: str
    difficulty: int
    index: int
    frontier: int
    task: PublicTask


class Reported(BaseModel):
    session_id: str
    counted: bool
    reward: float | None
    frontier: int
    moved: str | None = None


def curriculum_router(engine: Engine, curriculum: Curriculum) -> APIRouter:
    """Routes over ``curriculum`` for the environments ``engine`` hosts (added on the way)."""
    for env_id, env in engine.envs.items():
        curriculum.add(env_id, env.difficulties)
    r = APIRouter(prefix=f"{PREFIX}/curriculum", tags=["curriculum"])

    @r.get("/next", response_model=NextTask)
    async def next_task(
        env_id: str | None = Query(None, max_length=200), split: str = "train"
    ) -> NextTask:
        """The next task the curriculum wants trained on."""
        if env_id is not None:
            env_id = engine.env(env_id).id
        name = engine.catalog(env_id or engine.default_env).split(split)
        try:
            draw = curriculum.draw(env_id, among=list(engine.envs))
        except CurriculumError as exc:
            raise BadRequest(str(exc)) from None
        env = engine.env(draw.env_id)
        index = curriculum.take_index(draw, name, env.capacity(name, draw.difficulty))
        ref = engine.catalog(draw.env_id).ref(name, draw.difficulty, index)
        task = engine.catalog(draw.env_id).task(ref)
        return NextTask(
            task_id=ref.task_id,
            env_id=ref.env_id,
            split=ref.split,
            difficulty=ref.difficulty,
            index=ref.index,
            frontier=curriculum.frontier(draw.env_id),
            task=task.public,
        )

    @r.post("/report/{sid}", response_model=Reported)
    async def report(sid: str) -> Reported:
        """Count a finished session's outcome; faults are not counted. 409 while it runs."""
        s = engine.store.get(sid)
        if s.verdict is None:
            raise Conflict(f"session {sid[:64]!r} has not finished: report it once it has")
        env_id, task = s.env.id, s.task.public
        episode = f"session:{s.id}:{task.task_id}:{s.created}"
        fresh = s.verdict.reward is not None and not curriculum.store.counted(episode)
        event = curriculum.record(episode, env_id, task.difficulty, s.verdict.reward)
        return Reported(
            session_id=s.id,
            counted=fresh,
            reward=s.verdict.reward,
            frontier=curriculum.frontier(env_id),
            moved=event.event if event is not None else None,
        )

    @r.get("", response_model=list[EnvState])
    async def state() -> list[EnvState]:
        return [s for s in curriculum.state() if s.env_id in engine.envs]

    @r.get("/history", response_model=list[dict[str, Any]])
    async def history(env_id: str | None = Query(None, max_length=200)) -> list[dict[str, Any]]:
        return [asdict(e) for e in curriculum.history(env_id)]

    return r
