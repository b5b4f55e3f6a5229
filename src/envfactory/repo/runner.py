"""Project trees for episodes and checks, and the test driver run over them in sandboxes.

A process keeps one pristine copy of each project on the sandboxes' filesystem (its store).
A tree for an episode or a check hard-links every file of the store except the project's
Python source, which it copies (the agent edits those); the hard-linked paths (tests,
configuration, documents) are bound read-only inside the sandbox, so no command can write
through a link, and the file tools replace a linked file rather than write into it. A reset
is therefore a few hundred links and the source's copy, never a copy of the project.

Each store also keeps the modules a run of the project's tests imports, compiled once by a
first run in a sandbox (the runner's, the standard library's and the pristine tests' as
pytest rewrites them; never the project's source, which a verdict replaces): later runs read
them from a read-only tree (:data:`PYCACHE`) instead of compiling pytest and rewriting the
tests again, and the agent's own runs of pytest read them too.
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
COMPILED_NAME = ".envfactory-pycache"  # where the first run writes the compiled modules
PYCACHE = "/opt/pycache"  # where the sandbox sees them (read-only)
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
    compiled: Path | None = None  # compiled modules, bound read-only at PYCACHE

    def read(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()


_STORES: dict[str, Store] = {}
_LOCK = threading.RLock()


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
    s = Store(p, root, files, sources, _linked_roots(files, set(sources)))
    s.compiled = _compile(s)
    return s


def _compile(s: Store) -> Path | None:
    """The modules collecting every test imports, compiled in a sandbox (see the module's
    docstring), less those of the project's source; None when that run fails (runs then
    compile what they import, as they would without)."""
    spec = {"mode": "run", "select": [], "files_to_collect": list(s.project.tests)}
    with Sandbox(CHECK_LIMITS) as box:
        try:
            _drive(s, box, {}, spec, f"{HOME}/{COMPILED_NAME}")
        except DriverFailed:
            return None
        made = box.path / COMPILED_NAME
        if not made.is_dir():
            return None
        _keep_pristine(made, {f"{HOME}/{rel}" for rel in set(s.files) - set(s.sources)})
        return _readable_copy(made, f"pycache-{s.project.key}")


def _keep_pristine(made: Path, linked: set[str]) -> None:
    """Remove from the compiled tree ``made`` (``/a/b/c.*.pyc`` compiles ``/a/b/c.py``) every
    module but the runner's, the system's and those of ``linked`` (paths in the sandbox)."""
    for dirpath, _, names in os.walk(made):
        folder = "/" + Path(dirpath).relative_to(made).as_posix()
        for name in names:
            source = f"{folder}/{name.split('.', 1)[0]}.py"
            if source not in linked and not source.startswith((f"{projects.RUNNER}/", "/usr/")):
                os.unlink(os.path.join(dirpath, name))


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
    """Read-only binds: the runner's packages, the pytest wrapper, the compiled modules, the
    linked paths."""
    out: list[Bind] = _runner_binds()
    out.append((s.root / ".envfactory-bin", f"{projects.RUNNER}/bin"))
    if s.compiled is not None:
        out.append((s.compiled, PYCACHE))
    out += [(workdir / rel, f"{HOME}/{rel}") for rel in s.linked_roots]
    return out


def agent_env(s: Store) -> dict[str, str]:
    """The agent's variables: pytest importable and on the PATH, the project importable, the
    compiled modules read."""
    p = s.project
    root = HOME if p.path == "." else f"{HOME}/{p.path}"
    out = {
        "PYTHONPATH": f"{projects.RUNNER}:{root}",
        "PATH": f"{projects.RUNNER}/bin:/usr/local/bin:/usr/bin:/bin",
    }
    if s.compiled is not None:
        out["PYTHONPYCACHEPREFIX"] = PYCACHE
    return out


def drive(
    s: Store, sources: dict[str, bytes], spec: dict[str, Any], limits: Limits = CHECK_LIMITS
) -> tuple[str, Any]:
    """Run the driver over a fresh tree (pristine but for ``sources``); its printed result
    line (after the nonce) and, for ``trace``/``verify``, the JSON it wrote."""
    with Sandbox(limits) as box:
        return _drive(s, box, sources, spec)


def _drive(
    s: Store, box: Sandbox, sources: dict[str, bytes], spec: dict[str, Any], compiled: str = ""
) -> tuple[str, Any]:
    """:func:`drive` in ``box``; ``compiled``: where the driver writes the modules it compiles
    (else it reads the store's, if any)."""
    nonce = secrets.token_hex(8)
    layout(s, box.path, sources, box.owner)
    p = s.project
    full = {"path": HOME if p.path == "." else f"{HOME}/{p.path}", "out": f"{HOME}/{OUT_NAME}"}
    (box.path / SPEC_NAME).write_text(json.dumps({**full, **spec}))
    box.binds = tuple(binds(s, box.path))
    prefix = compiled or (PYCACHE if s.compiled is not None else "")
    result = box.run(python_check(DRIVER, f"{HOME}/{SPEC_NAME}", nonce, prefix))
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
