"""The registry: ``make(env_id)`` and ``list_envs()``, in Gymnasium's habit."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from pathlib import Path

from envfactory import sources
from envfactory.contract.environment import Environment
from envfactory.contract.errors import DomainError, EnvironmentUnavailable, UnknownEnvironment
from envfactory.db.environment import DatabaseEnvironment
from envfactory.domain.loader import builtin_domain_files, load_domain

Factory = Callable[..., Environment]

# Modules whose import registers built-in environments of other kinds (terminal, ...).
# Each calls ``register`` at import time; a kind whose runtime is missing still registers
# and says so when an episode starts.
BUILTIN_MODULES: list[str] = [
    "envfactory.terminal.builtin",
    "envfactory.research.builtin",
    "envfactory.repo.builtin",
    "envfactory.peers.tau2.register",
    "envfactory.multiagent.register",
    "envfactory.web.builtin",  # web-<domain>: every built-in database domain as a website
]

_FACTORIES: dict[str, Factory] = {}
_UNAVAILABLE: dict[str, str] = {}  # env id -> why it cannot be made here
_MADE: dict[tuple[str, int, float], Environment] = {}
_LOCK = threading.RLock()
_builtins_loaded = False


def register(env_id: str, factory: Factory, *, overwrite: bool = False) -> None:
    """Register ``factory(seed=..., scale=...) -> Environment`` under ``env_id``."""
    with _LOCK:
        if env_id in _FACTORIES and not overwrite:
            raise ValueError(f"environment {env_id!r} is already registered")
        _FACTORIES[env_id] = factory


def unregister(env_id: str) -> None:
    """Forget ``env_id`` (a world registered for a while, such as the audit's mutants)."""
    with _LOCK:
        _FACTORIES.pop(env_id, None)
        for key in [k for k in _MADE if k[0] == env_id]:
            del _MADE[key]


def register_unavailable(env_id: str, reason: str) -> None:
    """Name an environment that cannot be made here (its data is missing): ``make`` raises
    :class:`EnvironmentUnavailable` with ``reason``, and ``list_envs`` leaves it out."""
    with _LOCK:
        _UNAVAILABLE[env_id] = reason


def register_domain_file(path: str | Path, *, overwrite: bool = False) -> str:
    """Register a domain data file; returns its environment id."""
    spec = load_domain(path)

    def factory(seed: int = 0, scale: float = 1.0) -> Environment:
        return DatabaseEnvironment(spec, seed=seed, scale=scale)

    register(spec.id, factory, overwrite=overwrite)
    return spec.id


def _refuse(error: DomainError) -> Factory:
    def factory(seed: int = 0, scale: float = 1.0) -> Environment:
        raise error

    return factory


def _load_builtins() -> None:
    global _builtins_loaded
    with _LOCK:
        if _builtins_loaded:
            return
        _builtins_loaded = True
        for path in builtin_domain_files():
            try:
                register_domain_file(path, overwrite=True)
            except DomainError as exc:
                # One broken file must not hide the other worlds; making this one says why.
                register(path.stem, _refuse(exc), overwrite=True)
        for module in BUILTIN_MODULES:
            importlib.import_module(module)
        # Installed packages of worlds, then the files and folders ENVFACTORY_LIBRARY names.
        sources.register_entry_points()
        sources.register_from_environment()


def list_envs() -> list[str]:
    """Ids of every registered environment."""
    _load_builtins()
    return sorted(_FACTORIES)


def build(env_id: str | Path, *, seed: int = 0, scale: float = 1.0) -> Environment:
    """A new, unshared instance of ``env_id`` (``make`` returns the shared one). ``env_id``
    may also be a domain file or a folder holding one world (see :mod:`envfactory.sources`)."""
    _load_builtins()
    env_id = _one_id(env_id)
    factory = _FACTORIES.get(env_id)
    if factory is None and env_id in _UNAVAILABLE:
        raise EnvironmentUnavailable(f"{env_id} is not available here: {_UNAVAILABLE[env_id]}")
    if factory is None:
        raise UnknownEnvironment(
            f"no environment {env_id!r}; known: {', '.join(sorted(_FACTORIES))}"
        )
    return factory(seed=seed, scale=scale)


def _one_id(source: str | Path) -> str:
    """The id of the one world ``source`` names."""
    if isinstance(source, str) and source in _FACTORIES:
        return source
    ids = sources.resolve(source)
    if len(ids) != 1:
        raise UnknownEnvironment(
            f"{source} holds {len(ids)} worlds ({', '.join(ids) or 'none'}); name one"
        )
    return ids[0]


def make(env_id: str | Path, *, seed: int = 0, scale: float = 1.0) -> Environment:
    """The environment ``env_id`` (built once per process and shared; it is read-only); a
    domain file or a folder holding one world works too."""
    _load_builtins()
    env_id = _one_id(env_id)
    with _LOCK:
        key = (env_id, seed, scale)
        env = _MADE.get(key)
        if env is None:
            env = _MADE[key] = build(env_id, seed=seed, scale=scale)
        return env
