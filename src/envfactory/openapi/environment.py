"""Worlds compiled from API documents: database environments of kind ``openapi``."""

from __future__ import annotations

from envfactory.db.environment import DatabaseEnvironment


class OpenAPIEnvironment(DatabaseEnvironment):
    """A database world whose domain was compiled from an OpenAPI document."""

    kind = "openapi"
