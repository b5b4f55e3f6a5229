"""Fixtures for the adapter tests: the tiny local model and tokenizer, and the rollout tests'
OpenAI-compatible loopback server with its scripted brain (loaded from tests/rollout)."""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def chat_server_module() -> ModuleType:
    """The rollout tests' chat-completions server module (one shared copy)."""
    name = "envfactory_tests_chat_server"
    if name not in sys.modules:
        path = Path(__file__).parents[1] / "rollout" / "chat_server.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def chat_server() -> Iterator[Any]:
    with chat_server_module().ChatServer() as server:
        yield server


@pytest.fixture
def server(chat_server: Any) -> Iterator[Any]:
    chat_server.state.reset()
    yield chat_server
    chat_server.state.reset()


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    from envfactory.integrations.tiny import tiny_tokenizer

    return tiny_tokenizer(["retail"])


@pytest.fixture
def model(tokenizer: Any) -> Any:
    from envfactory.integrations.tiny import tiny_model

    return tiny_model(tokenizer)


class ThreadServer:
    """An ASGI app served by uvicorn on 127.0.0.1 in a background thread."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> ThreadServer:
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return self

    @property
    def url(self) -> str:
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
