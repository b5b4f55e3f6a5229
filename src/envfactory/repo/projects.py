"""The real projects repository worlds repair: pinned source distributions, cached on disk.

``make setup`` downloads each source distribution (``pip download --no-binary :all:``) into
``.cache/repo/sdist`` and runs ``python -m envfactory.repo.prepare``, which checks its sha256,
unpacks it and records the project's baseline (the tests that pass, and which source lines
each test executes). Without that cache the repository worlds register as unavailable and
say why.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

CACHE_ENV = "ENVFACTORY_REPO_CACHE"
RUNNER = "/opt/runner"  # where the sandbox sees the test runner (read-only)
# The test runner's own packages, bound read-only into every sandbox of a repository world.
RUNNER_PACKAGES = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py")


@dataclass(frozen=True)
class Project:
    """One pinned project: where its source and tests are inside the unpacked sdist."""

    name: str
    version: str
    sdist: str
    sha256: str
    licence: str
    source: tuple[str, ...]  # package folders or module files
    tests: tuple[str, ...]  # test folders or files (may lie inside a package folder)
    path: str = "."  # the import root, relative to the project

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"

    def is_test(self, rel: str) -> bool:
        return any(rel == t or rel.startswith(t.rstrip("/") + "/") for t in self.tests)

    def is_source(self, rel: str) -> bool:
        """A Python source file of the project proper (not a test)."""
        if not rel.endswith(".py") or self.is_test(rel) or "__pycache__" in rel:
            return False
        return any(rel == s or rel.startswith(s.rstrip("/") + "/") for s in self.source)

    def module(self, rel: str) -> str:
        """The dotted module name of a source file."""
        parts = list(PurePosixPath(rel).relative_to(self.path).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts)


PROJECTS: tuple[Project, ...] = (
    Project(
        "inflection",
        "0.5.1",
        "inflection-0.5.1.tar.gz",
        "1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417",
        "MIT",
        ("inflection",),
        ("test_inflection.py",),
    ),
    Project(
        "toolz",
        "1.2.0",
        "toolz-1.2.0.tar.gz",
        "9667a038e9d6ecba37995e26cb2f59ec6420b6ad8dd9677de59db9b956b08490",
        "BSD-3-Clause",
        ("toolz",),
        ("toolz/tests",),
    ),
    Project(
        "boltons",
        "26.2.0",
        "boltons-26.2.0.tar.gz",
        "d39cfd15c1a1c3bd4d705c82252fa9edb8e4f5e8cc039f8e39afac7b1b47e92c",
        "BSD-3-Clause",
        ("boltons",),
        ("tests",),
    ),
    Project(
        "tabulate",
        "0.10.0",
        "tabulate-0.10.0.tar.gz",
        "e2cfde8f79420f6deeffdeda9aaec3b6bc5abce947655d17ac662b126e48a60d",
        "MIT",
        ("tabulate",),
        ("test",),
    ),
    Project(
        "xmltodict",
        "1.0.4",
        "xmltodict-1.0.4.tar.gz",
        "6d94c9f834dd9e44514162799d344d815a3a4faec913717a9ecbfa5be1bb8e61",
        "MIT",
        ("xmltodict.py",),
        ("tests",),
    ),
    Project(
        "cachetools",
        "8.0.0",
        "cachetools-8.0.0.tar.gz",
        "5ed01bd676800d51f0025605e4fd8ad0891550513e7b0a4c3da478463764e5c3",
        "MIT",
        ("src/cachetools",),
        ("tests",),
        path="src",
    ),
    Project(
        "parse",
        "1.22.4",
        "parse-1.22.4.tar.gz",
        "706d458feed5a81b02768d3156e8070baf6cee7d150a3a3c0cd43101a875c3b5",
        "MIT",
        ("parse",),
        ("tests",),
    ),
)


def cache_root() -> Path:
    """``$ENVFACTORY_REPO_CACHE``, else ``.cache/repo`` in the project's checkout."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    return Path(__file__).resolve().parents[3] / ".cache" / "repo"


def sdist_path(p: Project) -> Path:
    return cache_root() / "sdist" / p.sdist


def tree_path(p: Project) -> Path:
    return cache_root() / "projects" / p.key


def baseline_path(p: Project) -> Path:
    return cache_root() / "projects" / f"{p.key}.baseline.json"


def verdicts_path(p: Project) -> Path:
    return cache_root() / "verdicts" / f"{p.key}.jsonl"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def unpack(p: Project) -> Path:
    """Check the sdist's hash and unpack it (source, tests and the files beside them)."""
    src = sdist_path(p)
    if not src.is_file():
        raise FileNotFoundError(f"{src} is missing")
    digest = sha256(src)
    if digest != p.sha256:
        raise ValueError(f"{src.name} has sha256 {digest}, not the pinned {p.sha256}")
    dest = tree_path(p)
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    prefix = f"{p.sdist.removesuffix('.tar.gz')}/"
    with tarfile.open(src) as tar:
        for m in tar.getmembers():
            rel = m.name.removeprefix(prefix)
            if not m.name.startswith(prefix) or not m.isfile() or _skipped(rel):
                continue
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            member = tar.extractfile(m)
            assert member is not None
            target.write_bytes(member.read())
            os.chmod(target, 0o644)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return dest


def _skipped(rel: str) -> bool:
    parts = PurePosixPath(rel).parts
    return any(x == "__pycache__" or x.endswith(".egg-info") for x in parts) or ".." in parts


def files(p: Project) -> list[str]:
    """Every file of the unpacked project, relative paths, sorted."""
    root = tree_path(p)
    return sorted(str(f.relative_to(root)) for f in root.rglob("*") if f.is_file())


def source_files(p: Project) -> list[str]:
    return [f for f in files(p) if p.is_source(f)]


@functools.cache
def runner_binds() -> tuple[tuple[Path, str], ...]:
    """The test runner's packages as read-only binds under :data:`RUNNER` (empty when pytest
    is not installed here)."""
    out = []
    for name in RUNNER_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            if name == "py":
                continue
            return ()
        origin = Path(spec.origin)
        host = origin.parent if spec.submodule_search_locations else origin
        out.append((host, f"{RUNNER}/{host.name}"))
    return tuple(out)


def unavailable_reason() -> str | None:
    """Why repository worlds cannot run here, or None."""
    from envfactory.terminal.sandbox import unavailable_reason as sandbox_reason

    return cache_reason() or sandbox_reason()


def cache_reason() -> str | None:
    """Why the projects cannot be used (the cheap part of :func:`unavailable_reason`)."""
    if not runner_binds():
        return "pytest is not installed (repository worlds run the projects' tests with it)"
    missing = [p.key for p in PROJECTS if not baseline_path(p).is_file()]
    if missing:
        return (
            f"the projects' cache is missing ({', '.join(missing)} under {cache_root()}); "
            "run `make setup` (it downloads and prepares them)"
        )
    return None
