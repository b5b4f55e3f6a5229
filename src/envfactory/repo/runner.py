"""Project trees for episodes and checks, and the test driver run over them in sandboxes.

A process keeps one pristine copy of each project on the sandboxes' filesystem (its store).
A tree for an episode or a check hard-links every file of the store except the project's
Python source, which it copies (the agent edits those); the hard-linked paths (tests,
configuration, documents) are bound read-only inside the sandbox, so no command can write
through a link, and the file tools replace a linked file rather than write into it. A reset
is therefore a few hundred links and the source's copy, never a copy of the project.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envfactory.repo import projects
from envfactory.repo.projects import Project
from envfactory.terminal.checks import python_check
from envfactory.terminal.sandbox import (
    HOME,
    Bind,
    Limits,
    Sandbox,
    SandboxError,
    _remove,
    runtime,
)

DRIVER = (Path(__file__).parent / "_driver.py").read_text()
SPEC_NAME = ".envfactory-spec.json"
OUT_NAME = ".envfactory-out.json"
CHECK_LIMITS = Limits(wall_s=300, cpu_s=300, memory_mb=1024, processes=64, tmp_mb=128)
PYTEST_WRAPPER = '#!/bin/sh\nexec python3 -m pytest -p no:cacheprovider "$@"\n'


@dataclass
class Store:
    """A pristine copy of one project where sandboxes' working directories live."""

    project: Project
    root: Path
    files: list[str]
    sources: list[str]
    linked_roots: list[str]  # the top-most paths holding no source: bound read-only

    def read(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()


_STORES: dict[str, Store] = {}
_LOCK = threading.Lock()


def store(p: Project) -> Store:
    with _LOCK:
        found = _STORES.get(p.key)
        if found is None:
            found = _STORES[p.key] = _make_store(p)
        return found


def _make_store(p: Project) -> Store:
    root = _readable_copy(projects.tree_path(p), f"repo-{p.key}")
    files = projects.files(p)
    wrapper = root / ".envfactory-bin" / "pytest"
    wrapper.parent.mkdir()
    wrapper.write_text(PYTEST_WRAPPER)
    os.chmod(wrapper, 0o555)
    sources = [f for f in files if p.is_source(f)]
    return Store(p, root, files, sources, _linked_roots(files, set(sources)))


def _readable_copy(source: Path, name: str) -> Path:
    """``source`` (a folder, or one file put in a folder) copied beside the sandboxes' working
    directories, read-only and readable by the sandbox's user, removed with the process (and
    swept with it, like episodes)."""
    rt = runtime()
    root = rt.root / f"ep-{rt.tag}-{name}"
    if root.exists():
        _remove(str(root))
    if source.is_dir():
        shutil.copytree(source, root, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        root.mkdir()
        shutil.copy2(source, root / source.name)
    for dirpath, _, names in os.walk(root):
        os.chmod(dirpath, 0o755)
        for n in names:
            os.chmod(os.path.join(dirpath, n), 0o444)
    atexit.register(_remove, str(root))
    return root


_RUNNER: list[Bind] = []


def _runner_binds() -> list[Bind]:
    """The test runner's packages, copied once per process: the interpreter's own folder may
    be unreadable to the sandbox's user (a checkout in a private directory)."""
    with _LOCK:
        if not _RUNNER:
            for host, inside in projects.runner_binds():
                copy = _readable_copy(host, f"runner-{host.name}")
                _RUNNER.append((copy if host.is_dir() else copy / host.name, inside))
        return list(_RUNNER)


def _linked_roots(files: list[str], sources: set[str]) -> list[str]:
    """The fewest paths (folders or files) that together hold every non-source file."""
    out: list[str] = []

    def holds_source(prefix: str) -> bool:
        return any(s.startswith(prefix + "/") for s in sources)

    def walk(prefix: str, names: list[str]) -> None:
        children: dict[str, list[str]] = {}
        for rel in names:
            head = rel[len(prefix) + 1 :] if prefix else rel
            first = head.split("/", 1)[0]
            children.setdefault(first, []).append(rel)
        for first, rels in sorted(children.items()):
            path = f"{prefix}/{first}" if prefix else first
            if path in sources:
                continue
            if rels == [path]:
                out.append(path)
            elif holds_source(path):
                walk(path, rels)
            else:
                out.append(path)

    walk("", files)
    return out


def layout(
    s: Store, workdir: Path, sources: dict[str, bytes], owner: tuple[int, int] | None
) -> None:
    """Lay the project out in ``workdir``: links to the store, the source files copied (from
    ``sources`` where given, else pristine). Source files ``sources`` maps to None... are
    left out."""
    made: set[Path] = set()
    for rel in s.files:
        target = workdir / rel
        parent = target.parent
        if parent not in made and parent != workdir:
            _mkdirs(workdir, parent, owner, made)
        if rel in s.sources:
            data = sources.get(rel)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            try:
                os.write(fd, s.read(rel) if data is None else data)
                if owner:
                    os.fchown(fd, *owner)
            finally:
                os.close(fd)
        else:
            os.link(s.root / rel, target)


def _mkdirs(workdir: Path, path: Path, owner: tuple[int, int] | None, made: set[Path]) -> None:
    chain = []
    while path != workdir and path not in made:
        chain.append(path)
        path = path.parent
    for d in reversed(chain):
        d.mkdir(exist_ok=True)
        if owner:
            os.chown(d, *owner)
        made.add(d)


def binds(s: Store, workdir: Path) -> list[Bind]:
    """Read-only binds: the runner's packages, the pytest wrapper, the linked paths."""
    out: list[Bind] = _runner_binds()
    out.append((s.root / ".envfactory-bin", f"{projects.RUNNER}/bin"))
    out += [(workdir / rel, f"{HOME}/{rel}") for rel in s.linked_roots]
    return out


def agent_env(p: Project) -> dict[str, str]:
    """The agent's variables: pytest importable and on the PATH, the project importable."""
    root = HOME if p.path == "." else f"{HOME}/{p.path}"
    return {
        "PYTHONPATH": f"{projects.RUNNER}:{root}",
        "PATH": f"{projects.RUNNER}/bin:/usr/local/bin:/usr/bin:/bin",
    }


def drive(
    s: Store, sources: dict[str, bytes], spec: dict[str, Any], limits: Limits = CHECK_LIMITS
) -> tuple[str, Any]:
    """Run the driver over a fresh tree (pristine but for ``sources``); its printed result
    line (after the nonce) and, for ``trace``/``verify``, the JSON it wrote."""
    nonce = secrets.token_hex(8)
    with Sandbox(limits) as box:
        layout(s, box.path, sources, box.owner)
        p = s.project
        full = {"path": HOME if p.path == "." else f"{HOME}/{p.path}", "out": f"{HOME}/{OUT_NAME}"}
        (box.path / SPEC_NAME).write_text(json.dumps({**full, **spec}))
        box.binds = tuple(binds(s, box.path))
        result = box.run(python_check(DRIVER, f"{HOME}/{SPEC_NAME}", nonce))
        marker = f"RESULT-{nonce} "
        lines = [ln for ln in result.output.splitlines() if ln.startswith(marker)]
        if not lines:
            raise DriverFailed(result.output[-2000:], result.limit)
        written = None
        if spec["mode"] != "run":
            out = box.path / OUT_NAME
            written = json.loads(out.read_text()) if out.is_file() else None
        return lines[-1][len(marker) :], written


class DriverFailed(SandboxError):
    """The driver printed no result (it crashed, or ran out of time)."""

    def __init__(self, output: str, limit: str | None) -> None:
        super().__init__(f"the test driver gave no result ({limit or 'crashed'}): {output[-500:]}")
        self.limit = limit


def test_files(ids: list[str]) -> list[str]:
    return sorted({t.split("::", 1)[0] for t in ids})
