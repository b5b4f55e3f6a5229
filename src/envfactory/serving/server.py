"""Running the app: ``serve`` (blocking) and ``running`` (a server in a thread, for tests,
notebooks and examples)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import httpx
import uvicorn

from envfactory.contract.environment import Environment
from envfactory.serving.app import create_app
from envfactory.serving.config import ServeConfig, check_bind


def _uvicorn_config(
    config: ServeConfig,
    host: str,
    port: int,
    log_level: str,
    envs: Mapping[str, Environment] | None = None,
) -> uvicorn.Config:
    check_bind(host, config.token)
    return uvicorn.Config(
        create_app(config, envs),
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        loop="auto",
        http="auto",
        ws="auto",
        backlog=4096,
        timeout_keep_alive=60,
    )


def serve(
    config: ServeConfig,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "info",
    envs: Mapping[str, Environment] | None = None,
) -> None:
    """Serve until interrupted. Refuses to bind beyond loopback without a token."""
    uvicorn.Server(_uvicorn_config(config, host, port, log_level, envs)).run()


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(frozen=True)
class Running:
    """A server running in a background thread."""

    url: str
    server: uvicorn.Server


@contextlib.contextmanager
def running(
    config: ServeConfig | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    envs: Mapping[str, Environment] | None = None,
) -> Iterator[Running]:
    """Start a server on a free loopback port, wait until it answers, stop it on exit."""
    config = config or ServeConfig()
    port = port or free_port(host)
    server = uvicorn.Server(_uvicorn_config(config, host, port, "warning", envs))
    url = f"http://{host}:{port}"
    with in_background(server, url, "envfactory-server"):
        yield Running(url=url, server=server)


@contextlib.contextmanager
def in_background(server: uvicorn.Server, url: str, name: str) -> Iterator[None]:
    """Run ``server`` in a thread until the block ends, once ``url/health`` answers."""
    thread = threading.Thread(target=server.run, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or not thread.is_alive():
            server.should_exit = True
            raise RuntimeError(f"the server at {url} did not start")
        time.sleep(0.02)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)
