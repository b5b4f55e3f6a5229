"""Open Reward Standard routes over the engine.

Discovery: ``/list_environments``, ``/{env}/tools``, ``/{env}/splits``, ``/{env}/tasks``,
``/{env}/num_tasks``, ``/{env}/task``, ``/{env}/task_range``. Sessions (``X-Session-ID``):
``/create_session``, ``/create``, ``/ping``, ``/delete``, ``/delete_session``. Episodes:
``/{env}/prompt``, ``/{env}/messages``, ``/{env}/task_tools``, ``/{env}/call`` (server-sent
events). Bare paths (``/call``, ``/tools``, ...) address the first hosted environment, as the
standard's reference server does.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from envfactory.serving.catalog import TaskRef, task_spec
from envfactory.serving.engine import Engine, Outcome, render_prompt
from envfactory.serving.errors import BadRequest, EpisodeFinished
from envfactory.serving.models import (
    CreateBody,
    ListToolsOutput,
    NumTasksOut,
    ORSMessage,
    ORSToolCall,
    RunToolError,
    RunToolOutput,
    RunToolSuccess,
    SidOut,
    Split,
    SplitBody,
    StatusOut,
    TaskBody,
    TaskOut,
    TaskRangeBody,
    TasksOut,
    TaskSpec,
    TerminalToolSpec,
    TextBlock,
    ToolOutput,
    ToolSpec,
)
from envfactory.serving.sessions import Session
from envfactory.serving.sse import SSE, frame, result_stream, sse_content

ENV_SCOPED = frozenset(
    {"tools", "splits", "tasks", "num_tasks", "task", "task_range", "prompt", "messages"}
    | {"task_tools", "call"}
)
SID_DOC = "The session (episode) id from /create_session."
PROTOCOL = "ors"


def _sid(value: str | None) -> str:
    if not value or not value.strip():
        raise BadRequest("the X-Session-ID header is required")
    return value.strip()


def _spec(ref: TaskRef) -> TaskSpec:
    return TaskSpec(**task_spec(ref))


def tool_output(outcome: Outcome) -> RunToolOutput:
    """An engine outcome as the standard's tool-call result."""
    obs = outcome.observation
    code = obs.error.code if obs.error else None
    if not outcome.finished and code == "unknown_tool":
        return RunToolOutput(RunToolError(error=obs.content, reason="not_found"))
    if not outcome.finished and code in ("malformed_action", "invalid_arguments"):
        return RunToolOutput(RunToolError(error=obs.content, reason="input_validation"))
    metadata: dict[str, Any] = {"kind": obs.kind}
    if obs.error is not None:
        metadata["error"] = obs.error.model_dump(exclude_none=True)
    if outcome.verdict is not None:
        metadata["status"] = outcome.verdict.status  # no rubric: it is the trainer's
    output = ToolOutput(
        blocks=[TextBlock(text=obs.content)],
        metadata=metadata,
        reward=outcome.reward,
        finished=outcome.finished,
    )
    return RunToolOutput(RunToolSuccess(output=output))


class BarePaths:
    """ASGI middleware: ``/call`` means ``/{first env}/call`` (and so on for env routes)."""

    def __init__(self, app: ASGIApp, default_env: str) -> None:
        self.app = app
        self.default_env = default_env

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            if path.count("/") == 1 and path[1:] in ENV_SCOPED:
                scope = dict(scope, path=f"/{self.default_env}{path}", raw_path=None)
        await self.app(scope, receive, send)


def ors_router(engine: Engine) -> APIRouter:
    r = APIRouter(tags=["Open Reward Standard"])

    def session(sid: str | None) -> Session:
        return engine.store.get(_sid(sid))

    def env_session(env_name: str, sid: str | None) -> Session:
        """The session, once ``env_name`` is known (an unknown environment is the first 404)."""
        engine.env(env_name)
        return session(sid)

    @r.get("/list_environments", response_model=list[str])
    async def list_environments() -> list[str]:
        return list(engine.envs)

    @r.post("/ping", response_model=StatusOut)
    async def ping(x_session_id: str | None = Header(None, description=SID_DOC)) -> StatusOut:
        session(x_session_id)
        return StatusOut(status="ok")

    @r.post(
        "/create_session",
        response_model=SidOut,
        responses=sse_content("task_id event with the new id, then end (or JSON {sid})"),
    )
    async def create_session(request: Request) -> Response:
        """A new session id. Event stream when the client accepts one, else JSON."""
        sid = engine.store.new_id()
        if SSE in request.headers.get("accept", ""):
            body = frame("task_id", sid) + frame("end", SidOut(sid=sid).model_dump_json())
            return Response(body, media_type=SSE, headers={"Cache-Control": "no-cache"})
        return JSONResponse({"sid": sid})

    @r.post("/create", response_model=SidOut)
    async def create(
        body: CreateBody, x_session_id: str | None = Header(None, description=SID_DOC)
    ) -> SidOut:
        sid = _sid(x_session_id)
        if body.toolset_name is not None:
            raise BadRequest("toolsets are not supported by this server")
        catalog = engine.catalog(body.env_name or engine.default_env)
        if body.task_spec is not None:
            ref = catalog.parse_spec(body.task_spec)
        else:
            assert body.split is not None and body.index is not None
            ref = catalog.at(body.split, body.index)
        await engine.open(ref, PROTOCOL, sid=sid)
        return SidOut(sid=sid)

    @r.post("/delete", response_model=SidOut)
    async def delete(x_session_id: str | None = Header(None, description=SID_DOC)) -> SidOut:
        sid = session(x_session_id).id
        engine.close(sid)
        return SidOut(sid=sid)

    @r.post("/delete_session", response_model=SidOut)
    async def delete_session(
        x_session_id: str | None = Header(None, description=SID_DOC),
    ) -> SidOut:
        """Release a session id (closing its episode if one is still open)."""
        sid = _sid(x_session_id)
        engine.close(sid)
        return SidOut(sid=sid)

    @r.get("/{env_name}/tools", response_model=ListToolsOutput)
    async def tools(env_name: str) -> ListToolsOutput:
        return tool_list(env_name, None)

    def tool_list(env_name: str, names: list[str] | None) -> ListToolsOutput:
        env = engine.env(env_name)
        reserved = engine.reserved[env.id]
        specs = engine.tool_specs(env.id, names) + reserved.specs()[:1]
        return ListToolsOutput(
            tools=[
                ToolSpec(
                    name=t["name"], description=t["description"], input_schema=t["inputSchema"]
                )
                for t in specs
            ],
            terminal_tool=TerminalToolSpec(
                name=reserved.finish,
                arg="message",
                description=reserved.specs()[1]["description"],
            ),
        )

    @r.get("/{env_name}/splits", response_model=list[Split])
    async def splits(env_name: str) -> list[Split]:
        return [Split(name=s, type=s) for s in engine.env(env_name).splits]

    @r.post("/{env_name}/tasks", response_model=TasksOut)
    async def tasks(env_name: str, body: SplitBody) -> TasksOut:
        catalog = engine.catalog(env_name)
        refs = catalog.span(body.split, None, None)
        return TasksOut(tasks=[_spec(t) for t in refs], env_name=catalog.env.id)

    @r.post("/{env_name}/num_tasks", response_model=NumTasksOut)
    async def num_tasks(env_name: str, body: SplitBody) -> NumTasksOut:
        return NumTasksOut(num_tasks=engine.catalog(env_name).num_tasks(body.split))

    @r.post("/{env_name}/task", response_model=TaskOut)
    async def task(env_name: str, body: TaskBody) -> TaskOut:
        catalog = engine.catalog(env_name)
        return TaskOut(task=_spec(catalog.at(body.split, body.index)), env_name=catalog.env.id)

    @r.post("/{env_name}/task_range", response_model=TasksOut)
    async def task_range(env_name: str, body: TaskRangeBody) -> TasksOut:
        catalog = engine.catalog(env_name)
        refs = catalog.span(body.split, body.start, body.stop)
        return TasksOut(tasks=[_spec(t) for t in refs], env_name=catalog.env.id)

    @r.get("/{env_name}/task_tools", response_model=ListToolsOutput)
    async def task_tools(
        env_name: str, x_session_id: str | None = Header(None, description=SID_DOC)
    ) -> ListToolsOutput:
        s = env_session(env_name, x_session_id)
        return tool_list(s.env.id, list(s.task.public.tools))

    @r.get("/{env_name}/prompt", response_model=list[TextBlock])
    async def prompt(
        env_name: str, x_session_id: str | None = Header(None, description=SID_DOC)
    ) -> list[TextBlock]:
        system, user = render_prompt(env_session(env_name, x_session_id).task.public)
        return [TextBlock(text=f"{system}\n\n{user}")]

    @r.get("/{env_name}/messages", response_model=list[ORSMessage])
    async def messages(
        env_name: str, x_session_id: str | None = Header(None, description=SID_DOC)
    ) -> list[ORSMessage]:
        system, user = render_prompt(env_session(env_name, x_session_id).task.public)
        return [
            ORSMessage(role="system", blocks=[TextBlock(text=system)]),
            ORSMessage(role="user", blocks=[TextBlock(text=user)]),
        ]

    @r.post(
        "/{env_name}/call",
        response_class=Response,
        responses=sse_content("task_id, then chunk* and end carrying a RunToolOutput"),
    )
    async def call(
        env_name: str,
        body: ORSToolCall,
        x_session_id: str | None = Header(None, description=SID_DOC),
    ) -> Response:
        s = env_session(env_name, x_session_id)
        if body.task_id is not None and body.task_id in s.replies:
            return result_stream(body.task_id, s.replies[body.task_id])
        call_id = body.task_id or engine.store.new_id()
        try:
            action = engine.action(s.env.id, body.name, body.input)
            result = tool_output(await engine.act(s, action))
        except EpisodeFinished:
            result = RunToolOutput(
                RunToolError(
                    error=f"{body.name[:60]!r} was not run: the episode has finished, "
                    "so no further tool calls are accepted",
                    reason="episode_finished",
                )
            )
        payload = result.model_dump_json()
        s.remember(call_id, payload)
        return result_stream(call_id, payload)

    return r
