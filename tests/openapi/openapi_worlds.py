"""Helpers for the OpenAPI tests: worlds compiled from the hand-made documents in ``specs/``
(built once per session) and a client that calls their tools through a live episode."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from envfactory.contract.actions import Observation, ToolCall
from envfactory.db.episode import DatabaseEpisode
from envfactory.domain.loader import parse_domain
from envfactory.openapi.compile import compile_document
from envfactory.openapi.document import read_document
from envfactory.openapi.environment import OpenAPIEnvironment

SPECS = Path(__file__).parent / "specs"


@cache
def domain(name: str) -> dict[str, Any]:
    return compile_document(read_document(SPECS / name), name)


@cache
def world(name: str) -> OpenAPIEnvironment:
    return OpenAPIEnvironment(parse_domain(domain(name), name))


class Client:
    """Calls a world's tools through a live episode, like an agent would."""

    def __init__(self, env: OpenAPIEnvironment) -> None:
        self.env = env
        self.episode: DatabaseEpisode = env.episode()
        self.episode.reset(env.task("train", 1, 0))

    def __call__(self, tool: str, **args: Any) -> Observation:
        return self.episode.step(ToolCall(tool=tool, arguments=args))

    def ok(self, tool: str, **args: Any) -> Any:
        obs = self(tool, **args)
        assert obs.error is None, obs.error
        return obs.data

    def rows(self, table: str) -> list[dict[str, Any]]:
        return self.episode.store.rows(table)
