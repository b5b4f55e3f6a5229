"""Fixtures for the adapter tests: the tiny local model and tokenizer, and the rollout tests'
OpenAI-compatible loopback server with its scripted brain (loaded from tests/rollout)."""

from __future__ import annotations

import importlib.util
import os
import sys
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
