"""The registry: ``make(env_id)`` and ``list_envs()``, in Gymnasium's habit.

:mod:`~envfactory.registry.table` holds id -> factory or lazy entry point (the kinds' built-in
tables are read, not imported for their side effects); :mod:`~envfactory.registry.sources`
adds worlds from files, folders, installed packages and ``ENVFACTORY_LIBRARY``.
"""

from __future__ import annotations

import threading
from pathlib import Path

from envfactory.contract.environment import Environment
from envfactory.contract.errors import EnvironmentUnavailable, UnknownEnvironment
from envfactory.registry import table
from envfactory.registry.sources import load_installed, resolve
from envfactory.registry.table import (
    EntryPoint,
    register,
    register_domain_file,
    register_unavailable,
)

__all__ = [
    "EntryPoint",
    "build",
    "list_envs",
    "make",
    "register",
    "register_domain_file",
    "register_unavailable",
    "unregister",
]

_MADE: dict[tuple[str, int, float], Environment] = {}
_LOCK = threading.RLock()


def _load() -> None:
    table.load_builtins()
    load_installed()


def unregister(env_id: str) -> None:
    """Forget ``env_id`` (a world registered for a while, such as the audit's mutants)."""
    with _LOCK:
        table.forget(env_id)
        for key in [k for k in _MADE if k[0] == env_id]:
            del _MADE[key]


def list_envs() -> list[str]:
    """Ids of every registered environment."""
    _load()
    return table.registered()


def build(env_id: str | Path, *, seed: int = 0, scale: float = 1.0) -> Environment:
    """A new, unshared instance of ``env_id`` (``make`` returns the shared one). ``env_id``
    may also be a domain file or a folder holding one world (see :mod:`.sources`)."""
    _load()
    env_id = _one_id(env_id)
    factory = table.factory(env_id)
    if factory is None and (why := table.unavailable(env_id)) is not None:
        raise EnvironmentUnavailable(f"{env_id} is not available here: {why}")
    if factory is None:
        raise UnknownEnvironment(
            f"no environment {env_id!r}; known: {', '.join(table.registered())}"
        )
    return factory(seed=seed, scale=scale)


def _one_id(source: str | Path) -> str:
    """The id of the one world ``source`` names."""
    if isinstance(source, str) and source in table.registered():
        return source
    ids = resolve(source)
    if len(ids) != 1:
        raise UnknownEnvironment(
            f"{source} holds {len(ids)} worlds ({', '.join(ids) or 'none'}); name one"
        )
    return ids[0]


def make(env_id: str | Path, *, seed: int = 0, scale: float = 1.0) -> Environment:
    """The environment ``env_id`` (built once per process and shared; it is read-only); a
    domain file or a folder holding one world works too."""
    _load()
    env_id = _one_id(env_id)
    with _LOCK:
        key = (env_id, seed, scale)
        env = _MADE.get(key)
        if env is None:
            env = _MADE[key] = build(env_id, seed=seed, scale=scale)
        return env
