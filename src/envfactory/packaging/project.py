"""Packages of worlds: scaffold one (``envfactory init``), pack worlds into one as a folder or a
wheel (``envfactory pack``), and install one (``envfactory install``).

A package of worlds is an ordinary Python distribution: its domain files (and their handlers)
live in ``src/<module>/worlds/``, and its ``envfactory.environments`` entry point names a
function that returns that folder, so an installed package's worlds are registered with the
built-ins and every command takes their ids.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from envfactory.contract.errors import EnvFactoryError
from envfactory.domain.loader import read_mapping
from envfactory.packaging import templates
from envfactory.registry.sources import world_files

NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")


class PackagingError(EnvFactoryError):
    """A package of worlds cannot be made or installed (bad name, build or install failed)."""


def package_name(name: str) -> str:
    """``name`` normalised as pip normalises distribution names (PEP 503: each run of ``-``,
    ``_`` and ``.`` becomes one ``-``, letters lowercase): ``My_Shop`` -> ``my-shop``. It is
    the distribution's name and its starter world's id."""
    normal = re.sub(r"[-_.]+", "-", name).lower()
    if not NAME.fullmatch(normal):
        raise PackagingError(
            f"{name!r} is not a package name: letters, digits and single separators "
            "(-, _ or .), starting with a letter"
        )
    return normal


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def write_project(
    dest: Path, name: str, worlds: list[Path] | None = None, version: str = "0.1.0"
) -> Path:
    """Write a package of worlds to the new folder ``dest``: the ``worlds`` files given (with
    the handlers modules beside them), or a starter world named ``name`` with a Python
    handler. ``name`` is normalised (:func:`package_name`). Returns ``dest``."""
    name = package_name(name)
    module = name.replace("-", "_")
    if dest.exists() and any(dest.iterdir()):
        raise PackagingError(f"{dest} exists and is not empty")
    fill = {"name": name, "module": module, "title": name.replace("-", " ").capitalize()}
    package = dest / "src" / module
    if worlds is None:
        _write(package / "worlds" / f"{name}.yaml", templates.DOMAIN.format(**fill))
        _write(package / "handlers.py", templates.HANDLERS.format(**fill))
        first = name
    else:
        first = _copy_worlds(worlds, package / "worlds")
    _write(dest / "pyproject.toml", templates.PYPROJECT.format(version=version, **fill))
    _write(dest / "README.md", templates.README.format(first=first, **fill))
    _write(package / "__init__.py", templates.INIT.format(**fill))
    _write(dest / "tests" / "test_worlds.py", templates.TEST.format(**fill))
    return dest


def _copy_worlds(sources: list[Path], into: Path) -> str:
    """Copy world files (or every world file of a folder) into ``into``, with the handlers
    modules their domains name when those sit beside them; returns the first world's id."""
    files = [f for s in sources for f in (world_files(s) if s.is_dir() else [s])]
    if not files:
        raise PackagingError(f"no world files in {', '.join(map(str, sources))}")
    into.mkdir(parents=True, exist_ok=True)
    ids = []
    for file in files:
        if (into / file.name).exists():
            raise PackagingError(f"two world files are named {file.name}")
        shutil.copy2(file, into / file.name)
        data = read_mapping(file)
        domain = data.get("domain")  # a saved library world wraps its domain
        ids.append(str((domain if isinstance(domain, dict) else data).get("id") or file.stem))
        handlers = data.get("handlers")
        if isinstance(handlers, str):
            relative = Path(*handlers.split(".")).with_suffix(".py")
            if (file.parent / relative).is_file():
                (into / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(file.parent / relative, into / relative)
    return ids[0]


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("pip") is None:
        raise PackagingError(f"pip is not installed in {sys.prefix}; install it to go on")
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def build_wheel(project: Path, out: Path) -> Path:
    """Build ``project`` into a wheel in ``out`` (with this environment's setuptools when it has
    one, so no download is needed); returns the wheel's path."""
    out.mkdir(parents=True, exist_ok=True)
    isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
    before = set(out.glob("*.whl"))
    done = _pip("wheel", "--no-deps", *isolation, "--wheel-dir", str(out), str(project.resolve()))
    if done.returncode != 0:
        raise PackagingError(f"building {project} failed:\n{done.stdout[-1500:]}{done.stderr}")
    built = sorted(set(out.glob("*.whl")) - before) or sorted(out.glob("*.whl"))
    return built[-1]


def pack(sources: list[Path], name: str, out: Path, wheel: bool = True) -> Path:
    """Pack world files and folders into a package named ``name``: a wheel in ``out`` (or,
    with ``wheel=False``, the project folder ``out/<name>``, ``name`` normalised as
    :func:`package_name` does). Returns the wheel or folder."""
    name = package_name(name)
    if not wheel:
        return write_project(out / name, name, sources)
    with tempfile.TemporaryDirectory(prefix="envfactory-pack-") as tmp:
        project = write_project(Path(tmp) / name, name, sources)
        return build_wheel(project, out)


def install(source: Path, target: Path | None = None, no_deps: bool = False) -> list[str]:
    """Install a package of worlds (a wheel or a project folder; a plain folder or file of
    worlds is packed first, named after it) into this Python, or into ``target``. Returns
    the ids of the worlds it provides, read in a fresh interpreter."""
    with tempfile.TemporaryDirectory(prefix="envfactory-install-") as tmp:
        if source.suffix != ".whl" and not (source / "pyproject.toml").is_file():
            if not source.exists():
                raise PackagingError(f"{source}: no such file or folder")
            source = pack([source], _name_for(source), Path(tmp))
        args = ["install", "--no-input", *(["--no-deps"] if no_deps else [])]
        if target is not None:
            args += ["--target", str(target), "--upgrade"]
        done = _pip(*args, str(source.resolve()))
        if done.returncode != 0:
            raise PackagingError(f"installing {source} failed:\n{done.stderr[-2000:]}")
        return provided_worlds(_distribution(source), target)


def _name_for(source: Path) -> str:
    """A package name made from a file or folder name."""
    stem = re.sub(r"[^a-z0-9]+", "-", source.stem.lower()).strip("-")
    return package_name(stem if stem[:1].isalpha() else f"worlds-{stem}")


def _distribution(source: Path) -> str:
    """The distribution name of a wheel or a project folder."""
    if source.suffix == ".whl":
        return source.name.split("-")[0]
    return str(tomllib.loads((source / "pyproject.toml").read_text())["project"]["name"])


def provided_worlds(distribution: str, target: Path | None = None) -> list[str]:
    """The world ids the installed ``distribution`` provides, read in a fresh interpreter
    (with ``target`` on its path) as any later command would."""
    env = dict(os.environ)
    if target is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(target), env.get("PYTHONPATH")]))
    code = "import json, sys; from envfactory.registry.sources import installed_worlds; "
    code += "print(json.dumps(installed_worlds(sys.argv[1])))"
    done = subprocess.run(
        [sys.executable, "-c", code, distribution], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise PackagingError(
            f"{distribution} is installed but its worlds do not load:\n{done.stderr}"
        )
    return list(json.loads(done.stdout))
