"""Fixtures for the adapter tests: the embedded model (loaded once per session), the tiny local
model and tokenizer for TRL's own tool loop (whose chat template must render tools, which the
embedded model's does not), and the rollout tests' OpenAI-compatible loopback server with its
scripted brain (loaded from tests/rollout)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from integration_servers import chat_server_module

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


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


@pytest.fixture(scope="session")
def embedded() -> Any:
    """The packaged SmolLM2 model and its real tokenizer: shared, so never trained in place."""
    from envfactory.integrations.embedded import load

    return load()
