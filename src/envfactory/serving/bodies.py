"""JSON text from clients, checked before anything parses it again: no body larger than
:data:`MAX_BODY`, no nesting deeper than :data:`MAX_DEPTH`, and valid Unicode only (a JSON
``"\\ud800"`` escape decodes to a lone surrogate, which no response could encode). Such input is
the client's mistake (400 or 413), never a server error; every HTTP protocol (ORS, envfactory,
MCP) passes through :class:`JsonBodies`, and the OpenEnv socket decodes with :func:`decode`.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY = 16 * 2**20
MAX_DEPTH = 128


class BadJson(ValueError):
    """JSON text no client may send; ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _depth(value: Any) -> int:
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                return level
            todo.extend((v, level + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def decode(text: str | bytes) -> Any:
    """The JSON value of ``text``; :class:`BadJson` for what no client may send (and
    ``ValueError`` for text that is not JSON)."""
    if len(text) > MAX_BODY:
        raise BadJson(f"a JSON body is at most {MAX_BODY} bytes", 413)
    try:
        value = json.loads(text)
    except RecursionError:
        raise BadJson(f"JSON nested more than {MAX_DEPTH} levels deep") from None
    if _depth(value) > MAX_DEPTH:
        raise BadJson(f"JSON nested more than {MAX_DEPTH} levels deep")
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=True).encode()
    except UnicodeEncodeError:
        raise BadJson("JSON text must be valid Unicode: it holds a lone surrogate") from None
    return value


class JsonBodies:
    """ASGI middleware: a request body that :func:`decode` refuses gets its 400 or 413 here,
    before any parser (FastAPI's, the MCP SDK's) meets it; text that is not JSON at all goes on
    to the route, which answers 422 or its protocol's error."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY:
                await _refuse(send, BadJson(f"a JSON body is at most {MAX_BODY} bytes", 413))
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            if body.strip():
                decode(body)
        except BadJson as exc:
            await _refuse(send, exc)
            return
        except ValueError:
            pass  # not JSON: the route says so in its own way
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _refuse(send: Send, exc: BadJson) -> None:
    payload = json.dumps({"detail": str(exc), "error": "bad_request"}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(payload))]
    await send({"type": "http.response.start", "status": exc.status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
