"""Running the dashboard: ``serve`` (blocking, the command's) and ``running`` (in a thread, for
tests, the screenshots and examples)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import uvicorn

from envfactory.dashboard.app import Dashboard, create_app
from envfactory.serving.config import check_bind
from envfactory.serving.server import free_port, in_background


def _server(
    dashboard: Dashboard, host: str, port: int, token: str | None, log: str
) -> uvicorn.Server:
    check_bind(host, token)
    config = uvicorn.Config(
        create_app(dashboard, token), host=host, port=port, log_level=log, access_log=False
    )
    return uvicorn.Server(config)


def serve(
    dashboard: Dashboard,
    host: str = "127.0.0.1",
    port: int = 8050,
    token: str | None = None,
    log_level: str = "warning",
) -> None:
    """Serve until interrupted; refuses to bind beyond loopback without a token."""
    _server(dashboard, host, port, token, log_level).run()


@contextlib.contextmanager
def running(
    dashboard: Dashboard, host: str = "127.0.0.1", token: str | None = None
) -> Iterator[str]:
    """The dashboard on a free port of ``host`` until the block ends; yields its URL."""
    port = free_port(host)
    url = f"http://{host}:{port}"
    with in_background(_server(dashboard, host, port, token, "warning"), url, "dashboard"):
        yield url
