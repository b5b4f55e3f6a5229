"""Typed serving errors; each carries its HTTP status and becomes ``{"detail", "error"}``."""

from __future__ import annotations

from envfactory.contract.errors import EnvFactoryError


class ServingError(EnvFactoryError):
    """A request the server refuses. ``status`` is the HTTP status, ``code`` a stable name."""

    status: int = 400
    code: str = "bad_request"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(ServingError):
    status, code = 400, "bad_request"


class Unauthorized(ServingError):
    status, code = 401, "unauthorized"


class NotFound(ServingError):
    status, code = 404, "not_found"


class SessionUnknown(NotFound):
    code = "unknown_session"


class SessionExpired(ServingError):
    status, code = 410, "session_expired"


class Conflict(ServingError):
    status, code = 409, "conflict"


class EpisodeFinished(Conflict):
    code = "episode_finished"


class NotForkable(ServingError):
    """The session's kind of world cannot fork (the detail says why)."""

    status, code = 501, "fork_unsupported"


class CapacityReached(ServingError):
    status, code = 503, "capacity_reached"
