"""The factory of ``web-<domain>`` worlds: a database world served as a website."""

from __future__ import annotations

from envfactory import registry
from envfactory.db.environment import DatabaseEnvironment
from envfactory.web.environment import WebEnvironment


def make(domain_id: str, seed: int = 0, scale: float = 1.0) -> WebEnvironment:
    """The website of the database world ``domain_id``."""
    domain = registry.make(domain_id, seed=seed, scale=scale)
    assert isinstance(domain, DatabaseEnvironment)
    return WebEnvironment(domain)
