"""The standard library's facts kept on disk: :func:`~.extract.isolated_json` takes seconds (a
fresh interpreter imports ~90 modules), so its JSON is kept in the cache folder
(``$ENVFACTORY_CACHE`` or ``~/.cache/envfactory``) under a key of everything it depends on (the
interpreter and the extractor's source); a changed interpreter or extractor reads another file,
so a stale one is never read.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from envfactory.openapi.corpus import cache_dir
from envfactory.research.pydocs import extract
from envfactory.research.pydocs.extract import Module, isolated_json, modules_of


def cache_key() -> str:
    """This interpreter (its version and build, its standard library's folder, the platform)
    and the extractor's source, hashed."""
    made = hashlib.sha256(Path(extract.__file__).read_bytes())
    for part in (sys.version, sys.base_prefix, sys.platform):
        made.update(b"\0" + part.encode())
    return made.hexdigest()[:32]


def cache_path(key: str) -> Path:
    return cache_dir() / "pydocs" / f"stdlib-{key}.json"


def stdlib_cached(key: str | None = None) -> list[Module]:
    """:func:`~.extract.stdlib_isolated`, read from the cache file of :func:`cache_key` (or
    ``key``) when an earlier process kept it, else extracted now and kept."""
    path = cache_path(key or cache_key())
    try:
        return modules_of(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):  # not kept yet, or not whole
        pass
    text = isolated_json()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)  # whole or not at all: a reader never sees half a file
    except OSError:  # a read-only cache folder: extract each time, as before
        pass
    return modules_of(text)
