"""The table of registered worlds: id -> factory, filled without importing any world (kinds
are named by strings, so the registry sits below every kind and imports none).

A world is registered as a factory ``f(seed=..., scale=...) -> Environment`` or, as Gymnasium's
registry does, as an :class:`EntryPoint` (``"module:attribute"`` and keyword arguments) whose
module is imported only when the world is first made. Each kind names its built-in worlds in a
``WORLDS`` table of its ``register`` module (data, no side effects); :func:`load_builtins`
reads those tables (the database kind's names the built-in domain files).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from envfactory.contract.environment import Environment
from envfactory.domain.loader import load_domain

Factory = Callable[..., Environment]

#: The kinds' registration modules, each with a ``WORLDS`` table of id -> EntryPoint.
BUILTIN_TABLES: list[str] = [
    "envfactory.db.register",  # one database world per built-in domain file
    "envfactory.terminal.register",
    "envfactory.research.register",
    "envfactory.repo.register",
    "envfactory.peers.tau2.register",
    "envfactory.multiagent.register",
    "envfactory.web.register",  # web-<domain>: every built-in database domain as a website
    "envfactory.campaign.register",  # campaign-<domain>: runs of tasks over one evolving state
]


def _attribute(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class EntryPoint:
    """A world's factory by name, imported when the world is first made. ``unavailable``
    names a function (also ``"module:attribute"``) that says why the world cannot run here,
    or returns None when it can; such a world stays unlisted and ``make`` gives the reason."""

    target: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    unavailable: str | None = None

    def load(self) -> Factory:
        return partial(_attribute(self.target), **self.kwargs)

    def why_unavailable(self) -> str | None:
        return _attribute(self.unavailable)() if self.unavailable else None


_FACTORIES: dict[str, Factory | EntryPoint] = {}
_UNAVAILABLE: dict[str, str] = {}  # env id -> why it cannot be made here
_COMPILED: set[str] = set()  # ids of compiled worlds (documents, libraries): replaceable
_LOCK = threading.RLock()
_builtins_loaded = False


def register(env_id: str, factory: Factory | EntryPoint, *, overwrite: bool = False) -> None:
    """Register ``factory(seed=..., scale=...) -> Environment`` (or an entry point naming
    one) under ``env_id``."""
    with _LOCK:
        if env_id in _FACTORIES and not overwrite:
            raise ValueError(f"environment {env_id!r} is already registered")
        _FACTORIES[env_id] = factory


def forget(env_id: str) -> None:
    """Drop ``env_id`` from the table."""
    with _LOCK:
        _FACTORIES.pop(env_id, None)


def register_unavailable(env_id: str, reason: str) -> None:
    """Name an environment that cannot be made here (its data is missing): ``make`` raises
    :class:`EnvironmentUnavailable` with ``reason``, and ``list_envs`` leaves it out."""
    with _LOCK:
        _UNAVAILABLE[env_id] = reason


def register_compiled(env_id: str, factory: Factory | EntryPoint) -> None:
    """Register a compiled world (an imported document, a library file), replacing an
    earlier compiled world of that id."""
    with _LOCK:
        _COMPILED.add(env_id)
        register(env_id, factory, overwrite=True)


def free_id(env_id: str) -> str:
    """``env_id``, or ``<env_id>-openapi`` when a world that is not compiled already has it."""
    load_builtins()
    with _LOCK:
        taken = env_id in _FACTORIES and env_id not in _COMPILED
    return f"{env_id}-openapi" if taken else env_id


def register_domain_file(path: str | Path, *, overwrite: bool = False) -> str:
    """Register a domain data file; returns its environment id."""
    spec = load_domain(path)
    entry = EntryPoint("envfactory.db.environment:DatabaseEnvironment", {"spec": spec})
    register(spec.id, entry, overwrite=overwrite)
    return spec.id


def load_builtins() -> None:
    """Register every kind's ``WORLDS`` table (once)."""
    global _builtins_loaded
    with _LOCK:
        if _builtins_loaded:
            return
        _builtins_loaded = True  # before the tables: an availability check may list worlds
        try:
            for table in BUILTIN_TABLES:
                worlds: dict[str, EntryPoint] = _attribute(f"{table}:WORLDS")
                for env_id, entry in worlds.items():
                    why = entry.why_unavailable()
                    if why is None:
                        register(env_id, entry, overwrite=True)
                    else:
                        register_unavailable(env_id, why)
        except BaseException:
            _builtins_loaded = False  # a broken table leaves no half-filled registry behind
            raise


def registered() -> list[str]:
    """The ids registered so far (built-ins included once loaded)."""
    with _LOCK:
        return sorted(_FACTORIES)


def entry(env_id: str) -> Factory | EntryPoint | None:
    """What ``env_id`` is registered as (an entry point stays unimported), or None."""
    with _LOCK:
        return _FACTORIES.get(env_id)


def factory(env_id: str) -> Factory | None:
    """The factory of ``env_id`` (an entry point's module imported now), or None."""
    found = entry(env_id)
    return found.load() if isinstance(found, EntryPoint) else found


def unavailable(env_id: str) -> str | None:
    """Why ``env_id`` cannot be made here, when it is known to be unavailable."""
    with _LOCK:
        return _UNAVAILABLE.get(env_id)
