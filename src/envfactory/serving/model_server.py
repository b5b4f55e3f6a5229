"""A local model behind an OpenAI-compatible chat-completions API (``envfactory serve-model``).

The embedded model (or any local model folder or ``.gguf`` file) answers ``POST
/v1/chat/completions`` and ``GET /v1/models``, so every OpenAI client, and envfactory's own
:class:`~envfactory.policies.openai.OpenAIPolicy`, can run episodes against it with no GPU.

* **Tools as text.** A chat template without tool support (SmolLM2's) never sees ``tools``:
  the server appends :func:`~envfactory.harness.toolcalls.tools_block` (Hermes
  ``<tool_call>`` JSON) to the system message, renders earlier assistant tool calls with
  :func:`~envfactory.harness.toolcalls.render_call` and tool results as a user turn of
  ``<tool_response>`` blocks (as the harness does in text mode), and parses the reply's
  ``<tool_call>`` blocks back into ``message.tool_calls``.
* **Token-faithful.** Like vLLM: ``return_token_ids`` adds ``prompt_token_ids`` and each
  choice's ``token_ids``; ``logprobs`` gives the sampler's logprob of every output token
  (``return_tokens_as_token_ids`` names each token ``token_id:N``).
* **Batched.** Requests that arrive together are generated together through
  ``TransformersPolicy.generate`` (:mod:`envfactory.integrations.local_model`), up to
  ``max_batch`` at once; requests with other sampling settings wait their turn.
  :attr:`ModelPool.batches` counts the batch sizes.

Not supported (a clear 400): ``stream``, ``n`` > 1, ``tool_choice`` "required" or a named
function, ``top_p`` < 1, ``stop``, penalties, ``top_logprobs``, non-text content parts.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from envfactory.harness.toolcalls import parse_tool_calls, render_call, tool_response, tools_block
from envfactory.integrations.local_model import (
    MAX_BATCH,
    Generated,
    PendingCall,
    TransformersPolicy,
    reply_text,
)
from envfactory.serving.auth import TokenGuard
from envfactory.serving.bodies import BadJson, decode
from envfactory.serving.config import check_bind
from envfactory.serving.server import free_port, in_background

DEFAULT_MAX_TOKENS = 512
_POLICIES_KEPT = 16  # sampling settings with a batcher of their own, at most (idle ones go)


class RequestError(Exception):
    """A request the server refuses, answered as OpenAI's ``{"error": {...}}``."""

    def __init__(self, message: str, status: int = 400, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param


# -- wire types: requests ---------------------------------------------------------------------


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")  # fields other servers know are ignored here


class TextPart(_Open):
    type: str
    text: str | None = None


class FunctionCallIn(_Open):
    name: str
    arguments: str | dict[str, Any] = "{}"


class ToolCallIn(_Open):
    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCallIn


class ChatMessageIn(_Open):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None


class FunctionIn(_Open):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ToolIn(_Open):
    type: Literal["function"] = "function"
    function: FunctionIn


class ChatRequest(_Open):
    model: str = ""
    messages: list[ChatMessageIn] = Field(min_length=1)
    tools: list[ToolIn] | None = None
    tool_choice: str | dict[str, Any] | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    n: int | None = Field(None, ge=1)
    stream: bool | None = None
    stop: str | list[str] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = Field(None, ge=0)
    seed: int | None = None  # accepted; sampling is not seeded per request
    return_token_ids: bool | None = None
    return_tokens_as_token_ids: bool | None = None


# -- wire types: responses --------------------------------------------------------------------


class FunctionOut(BaseModel):
    name: str
    arguments: str  # JSON text


class ToolCallOut(BaseModel):
    id: str
    type: Literal["function"] = "function"
    function: FunctionOut


class AssistantOut(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: list[ToolCallOut] | None = None


class TokenLogprob(BaseModel):
    token: str
    logprob: float
    bytes: list[int] | None
    top_logprobs: list[dict[str, Any]] = Field(default_factory=list)


class LogprobsOut(BaseModel):
    content: list[TokenLogprob]


class ChoiceOut(BaseModel):
    index: int = 0
    message: AssistantOut
    finish_reason: Literal["stop", "length", "tool_calls"]
    logprobs: LogprobsOut | None = None
    token_ids: list[int] | None = None


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChoiceOut]
    usage: Usage
    prompt_token_ids: list[int] | None = None

    def wire(self) -> dict[str, Any]:
        """The JSON body: fields not asked for are left out, but ``content`` and ``logprobs``
        are always there (null when empty), as OpenAI sends them."""
        data = self.model_dump(mode="json", exclude_none=True)
        for choice in data["choices"]:
            choice["message"].setdefault("content", None)
            choice.setdefault("logprobs", None)
        return data


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "envfactory"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


# -- the model and its batchers ---------------------------------------------------------------


class _Batcher(TransformersPolicy):
    """A :class:`TransformersPolicy` for one sampling setting, sharing the model with the
    pool's other batchers: one batch runs at a time, and each batch's size is counted."""

    def __init__(self, pool: ModelPool, temperature: float, max_new_tokens: int) -> None:
        super().__init__(
            pool.model,
            pool.tokenizer,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            name=pool.name,
            stop_ids=pool.stop_ids,
            max_batch=pool.max_batch,
        )
        self.pool = pool
        self.pending = 0  # calls queued or generating

    def _generate_calls(self, calls: list[PendingCall]) -> list[Generated]:
        with self.pool.lock:
            self.pool.batches.append(len(calls))
            return super()._generate_calls(calls)


class ModelPool:
    """A loaded model serving completions: batches requests with the same sampling setting
    (temperature, token limit) through :meth:`TransformersPolicy.generate`, one batch at a
    time. ``batches`` holds the size of every batch generated."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str,
        stop_ids: tuple[int, ...] | None = None,
        max_batch: int = MAX_BATCH,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        if max_batch < 1 or max_tokens < 1:
            raise ValueError("max_batch and max_tokens are at least 1")
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.stop_ids = stop_ids or (tokenizer.eos_token_id,)
        self.max_batch = max_batch
        self.max_tokens = max_tokens
        self.context = int(getattr(model.config, "max_position_embeddings", 0) or 2048)
        self.created = int(time.time())
        self.lock = threading.Lock()
        self.batches: list[int] = []
        self._batchers: dict[tuple[float, int], _Batcher] = {}
        self._template = TransformersPolicy(model, tokenizer, name=name)

    @classmethod
    def load(
        cls, path: str | Path | None = None, *, max_batch: int = MAX_BATCH, max_tokens: int = 512
    ) -> ModelPool:
        """The model at ``path`` (a folder or ``.gguf`` file; None: the embedded model)."""
        from envfactory.integrations.embedded import load

        local = load(path)
        return cls(
            local.model,
            local.tokenizer,
            name=local.name,
            stop_ids=local.stop_ids,
            max_batch=max_batch,
            max_tokens=max_tokens,
        )

    def encode(self, messages: list[dict[str, Any]]) -> list[int]:
        """Prompt ids of a context (the chat template, with the generation prompt)."""
        try:
            return [int(t) for t in self._template.encode(messages)]
        except Exception as exc:  # a template refusing a conversation is the client's mistake
            raise RequestError(f"the chat template refused the messages: {exc}") from None

    async def complete(self, prompt_ids: list[int], temperature: float, limit: int) -> Generated:
        """One reply of at most ``limit`` tokens, batched with the calls beside it."""
        key = (temperature, limit)
        batcher = self._batchers.get(key)
        if batcher is None:
            self._forget_idle()
            batcher = self._batchers[key] = _Batcher(self, temperature, limit)
        batcher.pending += 1
        try:
            return await batcher.generate(prompt_ids)
        finally:
            batcher.pending -= 1

    def _forget_idle(self) -> None:
        if len(self._batchers) >= _POLICIES_KEPT:
            for key in [k for k, b in self._batchers.items() if b.pending == 0]:
                del self._batchers[key]

    async def aclose(self) -> None:
        for batcher in list(self._batchers.values()):
            await batcher.aclose()


# -- requests to prompts, replies to responses ------------------------------------------------


def _text(message: ChatMessageIn, index: int) -> str:
    content = message.content
    if content is None or isinstance(content, str):
        return content or ""
    parts = []
    for part in content:
        if part.type != "text" or part.text is None:
            raise RequestError(
                f"messages[{index}]: only text content parts are supported (got {part.type!r})",
                param=f"messages[{index}].content",
            )
        parts.append(part.text)
    return "".join(parts)


def prompt_messages(request: ChatRequest, with_tools: bool) -> list[dict[str, Any]]:
    """The conversation as the chat template reads it: plain role/content turns, the tools in
    the system message, tool calls and tool results as Hermes text."""
    out: list[dict[str, Any]] = []
    results: list[str] = []
    for i, m in enumerate(request.messages):
        text = _text(m, i)
        if m.role == "tool":
            results.append(tool_response(text))
            continue
        if results:
            out.append({"role": "user", "content": "\n".join(results)})
            results = []
        if m.role == "assistant" and m.tool_calls:
            calls = [render_call(c.function.name, c.function.arguments) for c in m.tool_calls]
            text = "\n".join(([text] if text else []) + calls)
        role = "system" if m.role == "developer" else m.role
        out.append({"role": role, "content": text})
    if results:
        out.append({"role": "user", "content": "\n".join(results)})
    if with_tools and request.tools:
        block = tools_block([t.model_dump(exclude_none=True) for t in request.tools])
        if out[0]["role"] == "system":
            out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{block}"}
        else:
            out.insert(0, {"role": "system", "content": block})
    return out


def _refuse_unsupported(request: ChatRequest) -> None:
    if request.stream:
        raise RequestError("streaming is not supported: send stream false", param="stream")
    if request.n not in (None, 1):
        raise RequestError("only n = 1 is supported: send one request per sample", param="n")
    choice = request.tool_choice
    if choice is not None and choice not in ("auto", "none"):
        raise RequestError(
            "tool_choice may be 'auto' or 'none' (the model is not constrained to call a tool)",
            param="tool_choice",
        )
    if request.top_p not in (None, 1.0):
        raise RequestError(
            "top_p < 1 is not supported: the sampler draws from the whole distribution "
            "(at the temperature asked), so its logprobs are the ones a trainer sees",
            param="top_p",
        )
    if request.stop:
        raise RequestError("stop sequences are not supported", param="stop")
    if request.presence_penalty or request.frequency_penalty:
        raise RequestError("presence and frequency penalties are not supported")
    if request.top_logprobs:
        raise RequestError(
            "top_logprobs is not supported: logprobs gives the sampled tokens' logprobs",
            param="top_logprobs",
        )


def _tool_calls(text: str) -> tuple[str, list[ToolCallOut]] | None:
    """The reply's ``<tool_call>`` blocks as tool calls, or None when it has none (or one
    without a readable name, which no tool call can carry: the text is then the content)."""
    plain, calls = parse_tool_calls(text)
    if not calls or any(not isinstance(c.get("tool"), str) for c in calls):
        return None
    out = []
    for call in calls:
        args = call["arguments"]
        arguments = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        out.append(
            ToolCallOut(
                id=f"call_{uuid.uuid4().hex[:24]}",
                function=FunctionOut(name=call["tool"], arguments=arguments),
            )
        )
    return plain, out


async def chat_completion(pool: ModelPool, request: ChatRequest) -> ChatCompletion:
    """Answer one chat-completions request."""
    _refuse_unsupported(request)
    with_tools = bool(request.tools) and request.tool_choice != "none"
    prompt_ids = pool.encode(prompt_messages(request, with_tools))
    room = pool.context - len(prompt_ids)
    if room < 1:
        raise RequestError(
            f"the prompt has {len(prompt_ids)} tokens: the model's maximum context length is "
            f"{pool.context}",
            param="messages",
        )
    asked = request.max_completion_tokens or request.max_tokens or pool.max_tokens
    limit = min(asked, pool.max_tokens, room)
    temperature = 1.0 if request.temperature is None else request.temperature
    out = await pool.complete(prompt_ids, temperature, limit)
    text = reply_text(pool.tokenizer, out.output_ids)
    parsed = _tool_calls(text) if with_tools else None
    if parsed is not None:
        plain, calls = parsed
        message = AssistantOut(content=plain or None, tool_calls=calls)
    else:
        message = AssistantOut(content=text)
    finish: Literal["stop", "length", "tool_calls"] = "stop" if out.stopped else "length"
    if parsed is not None and out.stopped:
        finish = "tool_calls"
    logprobs = None
    if request.logprobs:
        named = bool(request.return_tokens_as_token_ids)
        pairs = zip(out.output_ids, out.logprobs, strict=True)
        logprobs = LogprobsOut(content=[_token(pool, t, lp, named) for t, lp in pairs])
    ids = bool(request.return_token_ids)
    return ChatCompletion(
        id=f"chatcmpl-{uuid.uuid4().hex}",
        created=int(time.time()),
        model=request.model or pool.name,
        choices=[
            ChoiceOut(
                message=message,
                finish_reason=finish,
                logprobs=logprobs,
                token_ids=list(out.output_ids) if ids else None,
            )
        ],
        usage=Usage(
            prompt_tokens=len(prompt_ids),
            completion_tokens=len(out.output_ids),
            total_tokens=len(prompt_ids) + len(out.output_ids),
        ),
        prompt_token_ids=prompt_ids if ids else None,
    )


def _token(pool: ModelPool, token_id: int, logprob: float, named: bool) -> TokenLogprob:
    if named:
        return TokenLogprob(token=f"token_id:{token_id}", logprob=logprob, bytes=None)
    text = pool.tokenizer.decode([token_id])
    return TokenLogprob(token=text, logprob=logprob, bytes=list(text.encode("utf-8")))


# -- the app ----------------------------------------------------------------------------------


def _error(message: str, status: int, param: str | None = None) -> JSONResponse:
    kind = "invalid_request_error" if status < 500 else "server_error"
    body = {"error": {"message": message, "type": kind, "param": param, "code": None}}
    return JSONResponse(body, status_code=status)


def _validation_message(exc: ValidationError) -> tuple[str, str | None]:
    problems = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "body"
        problems.append(f"{where}: {err['msg']}")
    first = exc.errors()[0]["loc"] if exc.errors() else ()
    return "invalid request: " + "; ".join(problems), (str(first[0]) if first else None)


def create_model_app(pool: ModelPool, token: str | None = None) -> FastAPI:
    """The OpenAI-compatible app serving ``pool``'s model (``token``: required as a bearer
    token on every route but ``/health``)."""

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await pool.aclose()

    app = FastAPI(
        title="envfactory model server",
        version="0.1.0",
        description="A local model behind OpenAI's chat-completions API.",
        lifespan=lifespan,
    )
    app.state.pool = pool

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        return _error(str(exc.detail), exc.status_code)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/models", response_model=ModelList)
    async def models() -> ModelList:
        return ModelList(data=[ModelCard(id=pool.name, created=pool.created)])

    @app.post(
        "/v1/chat/completions",
        response_model=ChatCompletion,
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": ChatRequest.model_json_schema()}},
            }
        },
    )
    async def completions(http: Request) -> JSONResponse:
        raw = await http.body()
        try:
            body = decode(raw)
        except BadJson as exc:
            return _error(str(exc), exc.status)
        except ValueError as exc:
            return _error(f"the body is not valid JSON: {exc}", 400)
        if not isinstance(body, dict):
            return _error("the body must be a JSON object", 400)
        try:
            request = ChatRequest.model_validate(body)
        except ValidationError as exc:
            message, param = _validation_message(exc)
            return _error(message, 400, param)
        try:
            completion = await chat_completion(pool, request)
        except RequestError as exc:
            return _error(exc.message, exc.status, exc.param)
        return JSONResponse(completion.wire())

    if token:
        app.add_middleware(TokenGuard, token=token)
    return app


# -- running it -------------------------------------------------------------------------------


def _uvicorn_config(
    pool: ModelPool, host: str, port: int, token: str | None, log_level: str
) -> uvicorn.Config:
    check_bind(host, token)
    return uvicorn.Config(
        create_model_app(pool, token),
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        timeout_keep_alive=60,
    )


def serve_model(
    pool: ModelPool,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    log_level: str = "info",
) -> None:
    """Serve until interrupted. Refuses to bind beyond loopback without a token."""
    uvicorn.Server(_uvicorn_config(pool, host, port, token, log_level)).run()


@dataclass(frozen=True)
class RunningModel:
    """A model server running in a background thread; ``base_url`` ends in ``/v1``."""

    url: str
    base_url: str
    server: uvicorn.Server
    pool: ModelPool


@contextlib.contextmanager
def running_model(
    pool: ModelPool, host: str = "127.0.0.1", port: int | None = None, token: str | None = None
) -> Iterator[RunningModel]:
    """Serve ``pool`` on a free loopback port until the block ends."""
    port = port or free_port(host)
    server = uvicorn.Server(_uvicorn_config(pool, host, port, token, "warning"))
    url = f"http://{host}:{port}"
    with in_background(server, url, "envfactory-model-server"):
        yield RunningModel(url=url, base_url=f"{url}/v1", server=server, pool=pool)


__all__ = [
    "ChatCompletion",
    "ChatRequest",
    "ModelPool",
    "RunningModel",
    "chat_completion",
    "create_model_app",
    "prompt_messages",
    "running_model",
    "serve_model",
]
