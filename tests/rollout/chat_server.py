"""An OpenAI-compatible chat-completions server for the tests, on loopback.

It speaks the real wire format (FastAPI + uvicorn, as vLLM's server does): native tool calls
or Hermes ``<tool_call>`` text, ``prompt_token_ids`` / ``token_ids`` (``return_token_ids``),
logprobs with ``token_id:N`` tokens (``return_tokens_as_token_ids``), usage. Behind it, a
scripted brain plays the oracle from what it reads: the task from the session header (the
episode id starts with the task id), its progress from the transcript. Faults are injected per
(session, turn, attempt): HTTP errors, Retry-After, slow replies, dropped connections,
malformed JSON, and model mistakes (broken tool arguments).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

import envfactory
from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.results import ToolError
from envfactory.policies.scripted import Oracle

IM_START, IM_END = 1, 2
_SPECIAL = re.compile(r"(<\|im_start\|>|<\|im_end\|>)")
_ERROR = re.compile(r"^Error \(([a-z_]+)\): (.*)$", re.S)
_THINK = re.compile(r"<think>.*?</think>\n?", re.S)


# -- a byte-level tokenizer and a ChatML template ------------------------------------------------


def encode(text: str) -> list[int]:
    ids: list[int] = []
    for part in _SPECIAL.split(text):
        if part == "<|im_start|>":
            ids.append(IM_START)
        elif part == "<|im_end|>":
            ids.append(IM_END)
        else:
            ids.extend(b + 3 for b in part.encode())
    return ids


def render_calls(calls: list[dict[str, Any]]) -> str:
    return "".join(
        f'\n<tool_call>\n{{"name": {json.dumps(c["function"]["name"])}, '
        f'"arguments": {c["function"]["arguments"]}}}\n</tool_call>'
        for c in calls
    )


def render_assistant(message: dict[str, Any], strip_thinking: bool) -> str:
    content = message.get("content") or ""
    if strip_thinking:
        content = _THINK.sub("", content)
    return content + render_calls(message.get("tool_calls") or [])


def render_prompt(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, strip_thinking: bool
) -> str:
    out = []
    for i, m in enumerate(messages):
        role = m["role"]
        if role == "assistant":
            body = render_assistant(m, strip_thinking)
        else:
            body = m.get("content") or ""
        if i == 0 and role == "system" and tools:
            body += "\n\n<tools>\n" + "\n".join(json.dumps(t) for t in tools) + "\n</tools>"
        out.append(f"<|im_start|>{role}\n{body}<|im_end|>\n")
    out.append("<|im_start|>assistant\n")
    return "".join(out)


def logprob(token: int, position: int) -> float:
    return -((token * 7919 + position * 104729) % 997 + 1) / 1000.0


# -- the brain -----------------------------------------------------------------------------------


def observation(message: dict[str, Any]) -> Observation:
    """What the oracle would have observed, read back from a transcript message."""
    content = message.get("content") or ""
    if message["role"] == "user" and content.startswith("<tool_response>"):
        content = content.removeprefix("<tool_response>\n").removesuffix("\n</tool_response>")
    elif message["role"] == "user":
        return Observation(kind="user", content=content)
    m = _ERROR.match(content)
    if m:
        error = ToolError(code=m.group(1), message=m.group(2))  # type: ignore[arg-type]
        return Observation(kind="tool_error", content=content, error=error)
    return Observation(kind="tool_result", content=content)


def next_action(task_id: str, messages: list[dict[str, Any]]) -> ToolCall | Message:
    """Replay the transcript through a fresh oracle and return its next action. Replies the
    brain spoiled on purpose (ids starting ``bad``) are skipped, as if never made."""
    task = envfactory.make(task_id.split("/")[0]).task(*_address(task_id))
    oracle = Oracle()
    oracle.start(task, [])
    last = Observation(kind="task", content=task.public.instruction)
    pending: list[dict[str, Any]] = []
    skip = False
    for m in messages[2:]:
        if m["role"] == "assistant":
            if pending and not skip:
                last = observation(pending[-1])
            calls = m.get("tool_calls") or []
            skip = bool(calls) and str(calls[0].get("id", "")).startswith("bad")
            if not skip:
                oracle.act(last)
            pending = []
        else:
            pending.append(m)
    if pending and not skip:
        last = observation(pending[-1])
    return oracle.act(last)


def _address(task_id: str) -> tuple[str, int, int]:
    _, split, difficulty, index = task_id.split("/")
    return split, int(difficulty), int(index)


# -- faults --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """``kind``: status (with ``status``, ``retry_after``), slow (``delay``), drop, malformed,
    bad_args (a model mistake: broken tool-call arguments)."""

    kind: str
    status: int = 500
    retry_after: str | None = None
    delay: float = 0.0
    body: str = "upstream failure"


FaultPlan = Callable[[str, int, int], Fault | None]
"""(session, turn, attempt) -> the fault to inject, if any."""


@dataclass
class ServerState:
    model: str = "scripted-brain"
    faults: FaultPlan | None = None
    delay: float = 0.0
    strip_thinking: bool = False
    think: bool = False
    attempts: Counter[tuple[str, int]] = field(default_factory=Counter)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.faults = None
            self.delay = 0.0
            self.strip_thinking = self.think = False
            self.attempts.clear()
            self.requests.clear()


def completion(state: ServerState, body: dict[str, Any], session: str, bad: bool) -> dict[str, Any]:
    messages = body["messages"]
    tools = body.get("tools")
    turn = sum(m["role"] == "assistant" for m in messages)
    task_id = session.split("#")[0]
    action = next_action(task_id, messages)
    think = f"<think>turn {turn}: working on it</think>\n" if state.think else ""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    if isinstance(action, Message):
        message["content"] = think + action.content
    else:
        args = "{not json" if bad else json.dumps(action.arguments)
        call = {
            "id": f"{'bad' if bad else 'chatcmpl-tool'}-{turn}",
            "type": "function",
            "function": {"name": action.tool, "arguments": args},
        }
        if tools:
            message["content"] = think or None
            message["tool_calls"] = [call]
            finish = "tool_calls"
        else:
            message["content"] = think + render_calls([call]).lstrip("\n")
    prompt = encode(render_prompt(messages, tools, state.strip_thinking))
    output = [*encode(render_assistant(message, strip_thinking=False)), IM_END]
    choice: dict[str, Any] = {
        "index": 0,
        "message": message,
        "finish_reason": finish,
        "stop_reason": None,
    }
    if body.get("logprobs"):
        as_ids = body.get("return_tokens_as_token_ids")
        choice["logprobs"] = {
            "content": [
                {
                    "token": f"token_id:{t}" if as_ids else chr(max(t - 3, 32)),
                    "logprob": logprob(t, j),
                    "bytes": None,
                    "top_logprobs": [],
                }
                for j, t in enumerate(output)
            ]
        }
    data: dict[str, Any] = {
        "id": f"chatcmpl-{session}-{turn}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": state.model,
        "choices": [choice],
        "usage": {
            "prompt_tokens": len(prompt),
            "completion_tokens": len(output),
            "total_tokens": len(prompt) + len(output),
        },
    }
    if body.get("return_token_ids"):
        data["prompt_token_ids"] = prompt
        choice["token_ids"] = output
    return data


def create_app(state: ServerState) -> FastAPI:
    app = FastAPI()

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": state.model, "object": "model"}]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        body = await request.json()
        session = request.headers.get("x-session-id", "")
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        with state.lock:
            state.attempts[(session, turn)] += 1
            attempt = state.attempts[(session, turn)]
            state.requests.append(
                {
                    "session": session,
                    "turn": turn,
                    "attempt": attempt,
                    "body": body,
                    "authorization": request.headers.get("authorization"),
                }
            )
        fault = state.faults(session, turn, attempt) if state.faults else None
        if state.delay:
            await asyncio.sleep(state.delay)
        if fault is not None and fault.kind == "status":
            headers = {"Retry-After": fault.retry_after} if fault.retry_after else None
            err = {"error": {"message": fault.body, "type": "server_error", "code": fault.status}}
            return JSONResponse(err, status_code=fault.status, headers=headers)
        if fault is not None and fault.kind == "slow":
            await asyncio.sleep(fault.delay)
        if fault is not None and fault.kind == "malformed":
            return Response(
                b'{"id": "chatcmpl-x", "choices": [{"mess', media_type="application/json"
            )
        if fault is not None and fault.kind == "drop":
            return StreamingResponse(_dropped(), media_type="application/json")
        bad = fault is not None and fault.kind == "bad_args"
        return JSONResponse(completion(state, body, session, bad))

    return app


async def _dropped() -> AsyncIterator[bytes]:
    yield b'{"id": "chatcmpl-x", "choices": ['
    raise ConnectionAbortedError("the connection drops mid-response")


class ChatServer:
    """The app on 127.0.0.1 in a background thread: ``with ChatServer() as s: s.base_url``."""

    def __init__(self) -> None:
        self.state = ServerState()
        config = uvicorn.Config(
            create_app(self.state), host="127.0.0.1", port=0, log_level="critical", lifespan="off"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> ChatServer:
        self.thread.start()
        deadline = time.time() + 10
        while not self.server.started:
            if time.time() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        return self

    @property
    def base_url(self) -> str:
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
