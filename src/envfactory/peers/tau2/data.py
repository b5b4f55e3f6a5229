"""Where tau2-bench's retail data lives, and reading it.

The data (MIT licence, kept with it) is not shipped with envfactory: it is looked for in the
folder named by ``ENVFACTORY_TAU2_DATA``, then at ``../shared/peers/tau2-bench`` beside the
repository (or the working directory). Either the ``tau2-bench`` folder or its ``retail``
folder may be named.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from envfactory.contract.errors import EnvironmentUnavailable

DATA_ENV = "ENVFACTORY_TAU2_DATA"
RELATIVE = Path("..") / "shared" / "peers" / "tau2-bench"
FILES = ("db.json", "tasks.json", "split_tasks.json", "policy.md")
_REPO = Path(__file__).resolve().parents[4]


class Tau2DataMissing(EnvironmentUnavailable):
    """tau2-bench's retail data is not where envfactory looks, or is not what it expects."""


@dataclass(frozen=True)
class Tau2Retail:
    """tau2-bench's retail domain as data: database, tasks, train / test split, policy."""

    folder: Path
    db: dict[str, Any]
    tasks: list[dict[str, Any]]
    split: dict[str, list[str]]
    policy: str


def candidates() -> list[Path]:
    """The folders looked at, in order."""
    given = os.environ.get(DATA_ENV)
    if given:
        return [Path(given)]
    return [_REPO / RELATIVE, Path.cwd() / RELATIVE]


def _retail(folder: Path) -> Path:
    return folder if (folder / "db.json").exists() else folder / "retail"


def locate() -> Path:
    """The retail data folder, or :class:`Tau2DataMissing` saying where it was looked for."""
    looked = []
    for folder in candidates():
        retail = _retail(folder)
        if all((retail / f).is_file() for f in FILES):
            return retail.resolve()
        looked.append(str(retail))
    raise Tau2DataMissing(
        "tau2-bench's retail data (db.json, tasks.json, split_tasks.json, policy.md) is not at "
        f"{' or '.join(looked)}; put the tau2-bench folder at ../shared/peers/tau2-bench beside "
        f"the repository or set {DATA_ENV} to it"
    )


def missing_reason() -> str | None:
    """Why the data cannot be used here, or None when it can."""
    try:
        locate()
    except Tau2DataMissing as exc:
        return str(exc)
    return None


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise Tau2DataMissing(f"{path}: {exc}") from None


@lru_cache(maxsize=4)
def load(folder: Path | None = None) -> Tau2Retail:
    """Read the data (once per process and folder) and check its shape."""
    retail = locate() if folder is None else _retail(folder)
    db = _json(retail / "db.json")
    tasks = _json(retail / "tasks.json")
    split = _json(retail / "split_tasks.json")
    if not isinstance(db, dict) or not {"products", "users", "orders"} <= set(db):
        raise Tau2DataMissing(f"{retail / 'db.json'}: expected products, users and orders")
    if not isinstance(tasks, list) or not all(isinstance(t, dict) and "id" in t for t in tasks):
        raise Tau2DataMissing(f"{retail / 'tasks.json'}: expected a list of tasks with ids")
    if not isinstance(split, dict) or not {"train", "test"} <= set(split):
        raise Tau2DataMissing(f"{retail / 'split_tasks.json'}: expected train and test lists")
    try:
        policy = (retail / "policy.md").read_text()
    except OSError as exc:
        raise Tau2DataMissing(str(exc)) from None
    return Tau2Retail(retail, db, tasks, {k: list(v) for k, v in split.items()}, policy)
