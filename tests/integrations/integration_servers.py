"""Servers for the adapter tests: the rollout tests' chat-completions server module, and an
ASGI app on loopback in a thread (a module of its own, so no test imports a conftest by name)."""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any


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
