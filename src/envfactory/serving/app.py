"""The application: one engine behind every protocol, in one ASGI app."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from http import HTTPStatus

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

from envfactory.contract.environment import Environment
from envfactory.gc_tuning import quiet_gc
from envfactory.serving.auth import TokenGuard
from envfactory.serving.bodies import JsonBodies
from envfactory.serving.config import ServeConfig
from envfactory.serving.engine import Engine
from envfactory.serving.errors import ServingError
from envfactory.serving.mcp import McpEpisodes
from envfactory.serving.models import ErrorOut, StatusOut
from envfactory.serving.openenv import openenv_router
from envfactory.serving.ors import BarePaths, ors_router
from envfactory.serving.routes import envfactory_router
from envfactory.serving.seats import seats_router
from envfactory.serving.trainer import trainer_router

DESCRIPTION = """\
envfactory worlds over every protocol from one engine:
Open Reward Standard routes (HTTP + server-sent events), OpenEnv's WebSocket channel
(`/openenv/{env_id}/ws`), MCP over streamable HTTP (`/mcp/{env_id}`), and envfactory's own
JSON routes under `/envfactory`. With a token set, every route but `/health` requires
`Authorization: Bearer <token>` (or `X-API-Key`).
"""

Mount = Callable[[Engine, ServeConfig], APIRouter | None]


def _always(router: Callable[[Engine], APIRouter]) -> Mount:
    return lambda engine, _: router(engine)


def _curriculum(engine: Engine, config: ServeConfig) -> APIRouter | None:
    if not config.curriculum:
        return None
    from envfactory.curriculum import Curriculum
    from envfactory.serving.curriculum import curriculum_router

    return curriculum_router(engine, Curriculum(config.curriculum))


def _trainer(engine: Engine, config: ServeConfig) -> APIRouter | None:
    return trainer_router(engine, config.trainer_token) if config.trainer_token else None


#: The routers a server mounts, in order (a path an earlier one serves wins); a mount that
#: gives None is not configured. A world with seats is served by the same engine through
#: ``seats_router`` (one seat per connection); nothing here asks a world's kind.
ROUTERS: tuple[Mount, ...] = (
    _always(envfactory_router),
    _always(seats_router),
    _curriculum,
    _trainer,
    _always(openenv_router),
    _always(ors_router),
)


def create_app(
    config: ServeConfig | None = None, envs: Mapping[str, Environment] | None = None
) -> FastAPI:
    """A server hosting ``config.envs`` (or ``envs``, already built)."""
    config = config or ServeConfig()
    engine = Engine(config, envs)
    episodes = McpEpisodes(engine)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        reaper = asyncio.create_task(engine.reap_forever())
        try:
            with quiet_gc(config.gc_tuning):
                async with episodes.run():
                    yield
        finally:
            reaper.cancel()
            engine.store.close_all()

    app = FastAPI(
        title="envfactory",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        responses={code: {"model": ErrorOut} for code in (400, 404, 409, 410, 503)},
    )
    app.state.engine = engine

    @app.exception_handler(ServingError)
    async def serving_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ServingError)
        headers = {"Retry-After": "1"} if exc.status == 503 else None
        return JSONResponse(
            {"detail": exc.message, "error": exc.code}, status_code=exc.status, headers=headers
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        return JSONResponse(
            {"detail": str(exc.detail), "error": HTTPStatus(exc.status_code).phrase.lower()},
            status_code=exc.status_code,
            headers=exc.headers,
        )

    @app.get("/health", response_model=StatusOut, tags=["health"])
    async def health() -> StatusOut:
        return StatusOut(status="ok")

    for mount in ROUTERS:
        router = mount(engine, config)
        if router is not None:
            app.include_router(router)
    app.router.routes.append(
        Route("/mcp/{env_id}", endpoint=episodes, methods=["GET", "POST", "DELETE"])
    )
    app.add_middleware(BarePaths, default_env=engine.default_env)
    app.add_middleware(JsonBodies)
    if config.token:
        app.add_middleware(TokenGuard, token=config.token)
    return app
