"""Episodes over MCP (streamable HTTP, the official ``mcp`` SDK): ``/mcp/{env_id}``.

Each MCP session is one episode. Query parameters choose the task (``task_id``, or ``split``,
``difficulty``, ``index``; by default train, the lowest difficulty, index 0). The episode's
tools are the world's tools plus ``message_user`` and ``finish``; every call result carries
``structuredContent`` with ``reward`` and ``finished``; the resource ``envfactory://verdict``
holds reward and status once the episode has finished (no rubric: that is the trainer's).
Deleting the MCP session closes the episode.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from pydantic import AnyUrl
from sse_starlette.sse import AppStatus
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from envfactory.serving.catalog import TaskRef
from envfactory.serving.engine import Engine
from envfactory.serving.errors import BadRequest, EpisodeFinished, SessionUnknown
from envfactory.serving.sessions import Session

PROTOCOL = "mcp"
VERDICT_URI = "envfactory://verdict"
TASK_URI = "envfactory://task"
SESSION_HEADER = "mcp-session-id"


def _forget_earlier_servers() -> None:
    """sse-starlette (before 3.0) keeps one process-wide exit event, bound to the event loop of
    the first server that streamed, and a process-wide exit flag: a second server in the same
    process (tests, a notebook, ``running()`` twice) then hung on every MCP request. Each
    server starts with both cleared."""
    AppStatus.should_exit = False
    if hasattr(AppStatus, "should_exit_event"):
        AppStatus.should_exit_event = None


class McpEpisodes:
    """The MCP server, its session manager, and the map from MCP sessions to episodes."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.server: Server[Any, Any] = Server("envfactory")
        self.manager: StreamableHTTPSessionManager | None = None
        self._register()

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Run a session manager for the app's lifespan (a new one each time it starts)."""
        _forget_earlier_servers()
        self.manager = StreamableHTTPSessionManager(
            self.server, session_idle_timeout=self.engine.config.idle_timeout
        )
        try:
            async with self.manager.run():
                yield
        finally:
            self.manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry for ``/mcp/{env_id}``; a DELETE also closes the episode."""
        request = Request(scope)
        mcp_sid = request.headers.get(SESSION_HEADER)
        if self.manager is None:
            raise RuntimeError("the MCP session manager runs in the app's lifespan")
        await self.manager.handle_request(scope, receive, send)
        if request.method == "DELETE" and mcp_sid:
            self.engine.close(_sid(mcp_sid))

    # -- episode lookup ----------------------------------------------------------------------

    def _ref(self, request: Request) -> TaskRef:
        env_id = request.path_params.get("env_id", self.engine.default_env)
        catalog = self.engine.catalog(env_id)
        q = request.query_params
        if "task_id" in q:
            return catalog.parse_task_id(q["task_id"])
        try:
            difficulty = int(q.get("difficulty", catalog.env.difficulties[0]))
            index = int(q.get("index", 0))
        except ValueError:
            raise BadRequest("difficulty and index are integers") from None
        return catalog.ref(q.get("split", "train"), difficulty, index)

    async def _session(self) -> Session:
        request = self.server.request_context.request
        if not isinstance(request, Request):
            raise BadRequest("MCP episodes are served over streamable HTTP only")
        mcp_sid = request.headers.get(SESSION_HEADER)
        if not mcp_sid:
            raise BadRequest("no MCP session: initialize first")
        sid = _sid(mcp_sid)
        try:
            return self.engine.store.get(sid)  # an expired one raises SessionExpired
        except SessionUnknown:
            pass
        session, _ = await self.engine.open(self._ref(request), PROTOCOL, sid=sid)
        return session

    # -- handlers ----------------------------------------------------------------------------

    def _register(self) -> None:
        server = self.server

        @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
        async def list_tools() -> list[types.Tool]:
            session = await self._session()
            env_id = session.env.id
            specs = self.engine.tool_specs(env_id, list(session.task.public.tools))
            specs += self.engine.reserved[env_id].specs()
            return [
                types.Tool(
                    name=t["name"], description=t["description"], inputSchema=t["inputSchema"]
                )
                for t in specs
            ]

        @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
        async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
            session = await self._session()
            try:
                outcome = await self.engine.act(
                    session, self.engine.action(session.env.id, name, arguments)
                )
            except EpisodeFinished as exc:
                return _result(exc.message, True, {"reward": None, "finished": True})
            obs = outcome.observation
            structured = {
                "kind": obs.kind,
                "data": obs.data,
                "error": obs.error.model_dump(exclude_none=True) if obs.error else None,
                "reward": outcome.reward,
                "finished": outcome.finished,
                "status": outcome.verdict.status if outcome.verdict else None,
            }
            return _result(obs.content, obs.error is not None, structured)

        @server.list_resources()  # type: ignore[no-untyped-call, untyped-decorator]
        async def list_resources() -> list[types.Resource]:
            await self._session()
            return [
                types.Resource(
                    uri=AnyUrl(VERDICT_URI),
                    name="verdict",
                    description="The episode's reward and status, once it has finished.",
                    mimeType="application/json",
                ),
                types.Resource(
                    uri=AnyUrl(TASK_URI),
                    name="task",
                    description="The public task: instruction, persona, rules, tools.",
                    mimeType="application/json",
                ),
            ]

        @server.read_resource()  # type: ignore[no-untyped-call, untyped-decorator]
        async def read_resource(uri: AnyUrl) -> str:
            session = await self._session()
            if str(uri) == VERDICT_URI:
                return self.engine.agent_verdict(session).model_dump_json()
            if str(uri) == TASK_URI:
                return session.task.public.model_dump_json()
            raise BadRequest(f"no resource {str(uri)[:80]!r}")


def _sid(mcp_sid: str) -> str:
    return f"mcp-{mcp_sid[:64]}"


def _result(text: str, is_error: bool, structured: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structuredContent=json.loads(json.dumps(structured, default=str)),
        isError=is_error,
    )
