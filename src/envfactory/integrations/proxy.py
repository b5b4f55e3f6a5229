"""A capture proxy: an OpenAI-compatible endpoint between any agent harness and the inference
server that records every call's exact tokens, per episode, into a trajectory store.

The harness points its base URL at the proxy and names its episode with a session header
(``X-Session-ID`` by default) or, failing that, its API key. Each chat completion is forwarded
upstream asking for token ids and logprobs (vLLM: ``return_token_ids``, ``logprobs`` with
``return_tokens_as_token_ids``); the harness gets the reply as if it had called the server
directly (the fields it did not ask for are removed), and the proxy keeps the prompt ids,
output ids and logprobs. ``POST /episodes/{id}/finish`` (with the task, reward and status the
harness knows; or ``POST /episodes/finish`` with the episode's header or key) writes the
episode to the store as an :class:`EpisodeRecord`; episodes still
open when the proxy stops are checkpointed, never lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from envfactory.contract.actions import EpisodeStatus
from envfactory.contract.verdict import RubricItem
from envfactory.policies.base import PolicyFault, PolicyReply, call_record
from envfactory.policies.openai import parse_completion
from envfactory.rollout.types import TaskRef
from envfactory.trajectory.record import CallRecord, ChatMessage, EpisodeRecord, ModelInfo, Timing
from envfactory.trajectory.store import StoreError, TrajectoryStore

#: The header that carries the proxy's own token, when it has one (the harness's API key
#: names its episode, so it cannot be the proxy's credential).
TOKEN_HEADER = "X-Envfactory-Token"


class Finish(BaseModel):
    """What the harness knows at the end of an episode."""

    model_config = ConfigDict(extra="forbid")

    task_id: str | None = Field(None, description="env/split/difficulty/index, when it has one")
    group_id: str | None = None
    sample_index: int = 0
    status: EpisodeStatus = "completed"
    reward: float | None = None
    rubric: list[RubricItem] = Field(default_factory=list)
    metrics: dict[str, float] = Field(default_factory=dict)
    error: str | None = None


@dataclass
class Capture:
    """The calls of one episode so far, and the transcript they add up to."""

    episode_id: str
    started: float = field(default_factory=time.time)
    messages: list[ChatMessage] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    model: str = ""
    upstream_errors: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def add(
        self, request: list[ChatMessage], reply: PolicyReply, message: ChatMessage, latency: float
    ) -> None:
        """One call: the request extends the transcript (the usual case), or it is recorded as
        the call's own context (the harness rewrote or dropped earlier turns)."""
        n = len(self.messages)
        context: list[ChatMessage] | None = None
        if request[:n] == self.messages:
            self.messages += request[n:]
        else:
            context = list(request)
        self.calls.append(call_record(reply, len(self.calls), len(self.messages), context, latency))
        self.messages.append(message)

    def record(self, finish: Finish, base_url: str) -> EpisodeRecord:
        task_id = finish.task_id or "external"
        try:
            ref: TaskRef | None = TaskRef.parse(task_id)
        except ValueError:
            ref = None
        ended = time.time()
        return EpisodeRecord(
            episode_id=self.episode_id,
            group_id=finish.group_id or task_id,
            task_id=task_id,
            env_id=ref.env_id if ref else "external",
            split=ref.split if ref else "train",
            difficulty=ref.difficulty if ref else 0,
            sample_index=finish.sample_index,
            status=finish.status,
            reward=finish.reward,
            rubric=finish.rubric,
            error=finish.error,
            metrics={**finish.metrics, "upstream_errors": float(self.upstream_errors)},
            timing=Timing(
                started=self.started,
                ended=ended,
                wall_s=ended - self.started,
                policy_s=sum(c.latency_s for c in self.calls),
            ),
            messages=self.messages,
            tools=self.tools,
            model=ModelInfo(name=self.model or "unknown", provider="proxy", base_url=base_url),
            calls=self.calls,
        )


def episode_key(request: Request, session_header: str) -> str | None:
    """The episode a request belongs to: the session header, else the bearer API key."""
    session = request.headers.get(session_header)
    if session:
        return session
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        return None
    return key.strip()


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(
        {"error": {"message": message, "type": "invalid_request_error", "code": status}},
        status_code=status,
    )


def _strip(data: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The reply as the harness asked for it: token fields it did not request removed."""
    out = dict(data)
    choices = []
    for choice in out.get("choices") or []:
        if isinstance(choice, dict):
            choice = dict(choice)
            if not body.get("logprobs"):
                choice.pop("logprobs", None)
            if not body.get("return_token_ids"):
                choice.pop("token_ids", None)
                choice.pop("prompt_token_ids", None)
        choices.append(choice)
    out["choices"] = choices
    if not body.get("return_token_ids"):
        out.pop("prompt_token_ids", None)
    return out


def _sse(data: dict[str, Any]) -> bytes:
    """A complete reply as a chat-completions event stream (one delta, then the end)."""
    chunks = []
    for choice in data.get("choices") or []:
        msg = choice.get("message") or {}
        delta: dict[str, Any] = {"role": "assistant", "content": msg.get("content")}
        if msg.get("tool_calls"):
            delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(msg["tool_calls"])]
        base = {k: data.get(k) for k in ("id", "created", "model")}
        base["object"] = "chat.completion.chunk"
        chunks.append({**base, "choices": [{"index": choice.get("index", 0), "delta": delta}]})
        end = {"index": choice.get("index", 0), "delta": {}}
        end["finish_reason"] = choice.get("finish_reason")
        chunks.append({**base, "choices": [end], "usage": data.get("usage")})
    lines = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


class CaptureProxy:
    """The proxy's state and app: ``uvicorn.run(CaptureProxy(url, store).app())``."""

    def __init__(
        self,
        upstream: str,
        store: TrajectoryStore,
        *,
        api_key: str | None = None,
        session_header: str = "X-Session-ID",
        timeout_s: float = 600.0,
        token: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.token = token
        self.transport = transport  # another way to reach the upstream (an ASGI app, ...)
        self.store = store
        self.api_key = api_key
        self.session_header = session_header
        self.timeout_s = timeout_s
        self.open: dict[str, Capture] = {}
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx.AsyncClient(
                base_url=self.upstream,
                headers=headers,
                timeout=self.timeout_s,
                transport=self.transport,
            )
        return self._client

    async def chat(self, request: Request) -> Response:
        key = episode_key(request, self.session_header)
        if key is None:
            return _error(400, f"name the episode: a {self.session_header} header or an API key")
        try:
            body = json.loads(await request.body())
            messages = body["messages"]
            if not isinstance(body, dict) or not isinstance(messages, list):
                raise TypeError("messages is not a list")
        except (ValueError, KeyError, TypeError) as exc:
            return _error(400, f"not a chat-completions request: {exc}")
        upstream = {**body, "stream": False, "logprobs": True, "return_token_ids": True}
        upstream["return_tokens_as_token_ids"] = True
        upstream.pop("stream_options", None)
        if body.get("logprobs") and not body.get("return_tokens_as_token_ids"):
            upstream.pop("return_tokens_as_token_ids")  # keep the tokens as the harness wants
        capture = self.open.setdefault(key, Capture(key))
        t0 = time.perf_counter()
        try:
            response = await self._http().post(
                "/chat/completions", json=upstream, headers={self.session_header: key}
            )
        except httpx.HTTPError as exc:
            capture.upstream_errors += 1
            return _error(502, f"the upstream server failed: {type(exc).__name__}: {exc}")
        latency = time.perf_counter() - t0
        if response.status_code != 200:
            capture.upstream_errors += 1
            return Response(
                response.content,
                status_code=response.status_code,
                media_type=response.headers.get("content-type"),
            )
        try:
            data = json.loads(response.content)
            reply = parse_completion(data, len(capture.calls), text_reply_final=False)
        except (ValueError, PolicyFault) as exc:
            capture.upstream_errors += 1
            return _error(502, f"the upstream reply is not a chat completion: {exc}")
        async with capture.lock:
            capture.model = capture.model or str(body.get("model") or "")
            capture.tools = capture.tools or list(body.get("tools") or [])
            capture.add(messages, reply, dict(data["choices"][0]["message"]), latency)
        out = _strip(data, body)
        if body.get("stream"):
            return StreamingResponse(iter([_sse(out)]), media_type="text/event-stream")
        return JSONResponse(out)

    async def finish(self, episode_id: str, finish: Finish) -> Response:
        capture = self.open.get(episode_id)
        if capture is None:
            return _error(404, f"no open episode {episode_id!r}")
        async with capture.lock:
            record = capture.record(finish, self.upstream)
            try:
                await self.store.append(record)
            except StoreError as exc:
                return _error(409, str(exc))
            del self.open[episode_id]
        return JSONResponse({"episode_id": episode_id, "calls": len(record.calls)})

    async def models(self) -> Response:
        try:
            response = await self._http().get("/models")
        except httpx.HTTPError as exc:
            return _error(502, f"the upstream server failed: {exc}")
        return Response(response.content, status_code=response.status_code)

    async def aclose(self) -> None:
        """Checkpoint the episodes still open and close the upstream connections."""
        for capture in list(self.open.values()):
            if capture.calls:
                record = capture.record(Finish(status="truncated"), self.upstream)
                await asyncio.wrap_future(self.store.checkpoint(record))
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def app(self) -> FastAPI:
        @contextlib.asynccontextmanager
        async def lifespan(_: FastAPI) -> AsyncIterator[None]:
            yield
            await self.aclose()

        app = FastAPI(title="envfactory capture proxy", lifespan=lifespan)

        @app.middleware("http")
        async def guard(request: Request, call_next: Any) -> Response:
            if self.token and request.headers.get(TOKEN_HEADER) != self.token:
                return _error(401, f"this proxy needs its token in {TOKEN_HEADER}")
            response: Response = await call_next(request)
            return response

        app.post("/v1/chat/completions")(self.chat)
        app.get("/v1/models")(self.models)

        @app.post("/episodes/finish")
        async def finish_mine(request: Request, body: Finish) -> Response:
            key = episode_key(request, self.session_header)
            if key is None:
                return _error(400, f"name the episode: a {self.session_header} header or API key")
            return await self.finish(key, body)

        @app.post("/episodes/{episode_id:path}/finish")
        async def finish(episode_id: str, body: Finish) -> Response:
            return await self.finish(episode_id, body)

        @app.get("/episodes")
        async def episodes() -> dict[str, Any]:
            return {"open": {k: len(c.calls) for k, c in self.open.items()}}

        return app


def run_proxy(
    upstream: str,
    out: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8100,
    api_key: str | None = None,
    session_header: str = "X-Session-ID",
    token: str | None = None,
    log_level: str = "info",
) -> None:
    """Serve the proxy until stopped; episodes go to ``out/episodes.jsonl``."""
    import uvicorn

    with TrajectoryStore(out) as store:
        proxy = CaptureProxy(
            upstream, store, api_key=api_key, session_header=session_header, token=token
        )
        uvicorn.run(proxy.app(), host=host, port=port, log_level=log_level)
