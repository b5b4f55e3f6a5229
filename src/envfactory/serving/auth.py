"""Bearer-token guard: every route but ``/health`` and the trainer's (which check their own
token) requires the agents' token when one is set.

The token is accepted as ``Authorization: Bearer <token>`` or ``X-API-Key: <token>`` (the header
the Open Reward SDK sends), for HTTP requests and WebSocket handshakes alike.
"""

from __future__ import annotations

import hmac
import json

from starlette.types import ASGIApp, Receive, Scope, Send

OPEN_PATHS = frozenset({"/health"})
TRAINER_PATHS = "/envfactory/trainer/"  # guarded by the trainer's own token, not this one


def presented_token(headers: list[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name == b"authorization":
            scheme, _, credential = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer":
                return credential.strip()
        elif name == b"x-api-key":
            return value.decode("latin-1").strip()
    return None


class TokenGuard:
    """ASGI middleware refusing requests without the right token (401, or a closed socket)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    def _allowed(self, scope: Scope) -> bool:
        path = scope.get("path", "")
        if path in OPEN_PATHS or path.startswith(TRAINER_PATHS):
            return True
        got = presented_token(scope.get("headers", []))
        return got is not None and hmac.compare_digest(got.encode(), self.token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self._allowed(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "unauthorized"})
            return
        body = json.dumps(
            {
                "detail": "a valid token is required: send 'Authorization: Bearer <token>' "
                "or 'X-API-Key: <token>'",
                "error": "unauthorized",
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b"Bearer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
