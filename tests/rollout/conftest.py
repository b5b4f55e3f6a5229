"""Fixtures for the rollout tests: a live OpenAI-compatible server on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from chat_server import ChatServer


@pytest.fixture(scope="session")
def chat_server() -> Iterator[ChatServer]:
    with ChatServer() as server:
        yield server


@pytest.fixture
def server(chat_server: ChatServer) -> Iterator[ChatServer]:
    chat_server.state.reset()
    yield chat_server
    chat_server.state.reset()
