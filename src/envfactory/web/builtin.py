"""Registers ``web-<domain>`` for every built-in database domain (imported by the registry)."""

from __future__ import annotations

from envfactory.db.environment import DatabaseEnvironment
from envfactory.domain.loader import builtin_domain_files
from envfactory.registry import make, register
from envfactory.web.environment import WebEnvironment


def _factory(domain_id: str):  # type: ignore[no-untyped-def]
    def factory(seed: int = 0, scale: float = 1.0) -> WebEnvironment:
        domain = make(domain_id, seed=seed, scale=scale)
        assert isinstance(domain, DatabaseEnvironment)
        return WebEnvironment(domain)

    return factory


for _path in builtin_domain_files():
    register(f"web-{_path.stem}", _factory(_path.stem), overwrite=True)
