"""Worlds from files, folders and installed packages: ``envfactory init``, ``pack`` and
``install``, the ``envfactory.environments`` entry point, and every command taking a domain file
or folder. Everything runs in fresh processes (as a user would), so no test leaves a world
registered in the test process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from envfactory.packaging import PackagingError, package_name
from envfactory.serving.server import free_port

STARTER = "my-shop"
TYPED = "My_Shop"  # how a Python user may type it: pip normalises it to STARTER


def run(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envfactory", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def folded(text: str) -> str:
    """CLI output with rich's line wrapping undone."""
    return " ".join(text.split())


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A package scaffolded by ``envfactory init My_Shop`` (its folder as typed, its names
    normalised) and installed by ``envfactory install`` into a folder of its own; the
    environment variables that put it on a process's path."""
    root = tmp_path_factory.mktemp("packages")
    made = run("init", TYPED, cwd=root)
    assert made.returncode == 0, made.stderr
    assert f"envfactory audit {STARTER}" in folded(made.stdout)
    site = root / "site"
    done = run("install", str(root / TYPED), "--target", str(site), "--no-deps", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["worlds"] == [STARTER]
    yield root / TYPED, {"PYTHONPATH": str(site)}


@pytest.mark.parametrize(
    ("typed", "normal"),
    [
        ("my-shop", "my-shop"),
        ("my_shop", "my-shop"),
        ("My.Shop", "my-shop"),
        ("a__b-.c2", "a-b-c2"),
    ],
)
def test_package_names_are_normalised_as_pip_does(typed: str, normal: str) -> None:
    assert package_name(typed) == normal


@pytest.mark.parametrize("bad", ["My Shop", "2shop", "shop-", "_shop", "shöp"])
def test_names_pip_would_refuse_are_refused(bad: str) -> None:
    with pytest.raises(PackagingError, match="is not a package name"):
        package_name(bad)


def test_init_writes_a_package_with_its_audit_as_a_test(
    installed: tuple[Path, dict[str, str]],
) -> None:
    project, _ = installed
    module = STARTER.replace("-", "_")
    for part in (
        "pyproject.toml",
        "README.md",
        "tests/test_worlds.py",
        f"src/{module}/__init__.py",
        f"src/{module}/handlers.py",
        f"src/{module}/worlds/{STARTER}.yaml",
    ):
        assert (project / part).is_file(), part
    pyproject = (project / "pyproject.toml").read_text()
    assert '[project.entry-points."envfactory.environments"]' in pyproject
    assert f'{STARTER} = "{module}:environments"' in pyproject


def test_an_installed_package_is_listed_audited_and_tested(
    installed: tuple[Path, dict[str, str]],
) -> None:
    project, env = installed
    listed = run("envs", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    info = {i["id"]: i for i in json.loads(listed.stdout)}
    assert info[STARTER]["kind"] == "db" and info[STARTER]["tools"] == 6
    assert "retail" in info  # the built-ins are still there
    audited = run(
        "audit", STARTER, "-n", "60", "--json", "--report", str(project / "a.html"), env=env
    )
    assert audited.returncode == 0, audited.stderr[-2000:]
    (report,) = json.loads(audited.stdout)
    assert report["passed"] and report["oracle_success_rate"] == 1.0
    assert report["noop_reward_mean"] == 0.0
    assert max(e["mean"] for e in report["exploits"].values()) <= 0.02
    tested = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(project / "tests")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )
    assert tested.returncode == 0, tested.stdout[-2000:]
    assert "2 passed" in tested.stdout


# Plays the gold plan of a train task against a server, through the HTTP client.
REMOTE_ORACLE = """
import sys
import envfactory
from envfactory.contract.actions import Message, ToolCall
from envfactory.policies.scripted import answer_text
from envfactory.serving.client import connect

remote = connect(sys.argv[1], sys.argv[2])
task = envfactory.make(sys.argv[2]).task("train", 2, 0)
episode = remote.episode()
episode.reset(task.public)
for step in task.hidden.gold_plan:
    episode.step(ToolCall(tool=step.tool, arguments=step.arguments))
episode.step(Message(content=answer_text(task.hidden.answers)))
print(episode.evaluate().reward)
"""


def test_an_installed_package_is_served(installed: tuple[Path, dict[str, str]]) -> None:
    _, env = installed
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "envfactory", "serve", "--port", str(port), "--envs", STARTER],
        stderr=subprocess.PIPE,
        env={**os.environ, **env},
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                httpx.get(f"{url}/health", timeout=1)
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
        played = subprocess.run(
            [sys.executable, "-c", REMOTE_ORACLE, url, STARTER],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **env},
        )
        assert played.returncode == 0, played.stderr[-2000:]
        assert float(played.stdout) == 1.0
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="module")
def domain_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a domain file whose handlers module sits beside it, not installed."""
    folder = tmp_path_factory.mktemp("worlds")
    made = run("init", "side-world", "--dir", str(folder / "pkg"))
    assert made.returncode == 0, made.stderr
    text = (folder / "pkg/src/side_world/worlds/side-world.yaml").read_text()
    text = text.replace("handlers: side_world.handlers", "handlers: side_handlers")
    (folder / "side-world.yaml").write_text(text.replace("side_world.", "side_handlers."))
    handlers = (folder / "pkg/src/side_world/handlers.py").read_text()
    (folder / "side_handlers.py").write_text(handlers.replace("side_world.", "side_handlers."))
    return folder


def test_commands_take_a_domain_file_or_a_folder(domain_folder: Path, tmp_path: Path) -> None:
    file = domain_folder / "side-world.yaml"
    tasks = run("tasks", str(file), "-n", "2", "--json")
    assert tasks.returncode == 0, tasks.stderr
    assert [t["task_id"].split("/")[0] for t in json.loads(tasks.stdout)] == ["side-world"] * 2
    checked = run("check", str(file), "--json")
    assert checked.returncode == 0 and json.loads(checked.stdout)["oracle_success_rate"] == 1.0
    # Two worlds audited in two worker processes: the folder reaches the workers too.
    audited = run(
        "audit",
        str(domain_folder),
        "retail",
        "-n",
        "30",
        "--jobs",
        "2",
        "--json",
        "--report",
        str(tmp_path / "a.html"),
    )
    assert audited.returncode == 0, audited.stderr[-2000:]
    assert [r["env"] for r in json.loads(audited.stdout)] == ["side-world", "retail"]
    rolled = run(
        "rollout",
        "--envs",
        str(file),
        "--policy",
        "oracle",
        "--n-tasks",
        "3",
        "--group-size",
        "1",
        "--out",
        str(tmp_path / "store"),
        "--json",
    )
    assert rolled.returncode == 0, rolled.stderr[-2000:]
    records = [json.loads(x) for x in (tmp_path / "store/episodes.jsonl").read_text().splitlines()]
    assert records and {r["env_id"] for r in records} == {"side-world"}
    assert all(r["reward"] == 1.0 for r in records)


def packed(*args: str) -> Path:
    """Where ``envfactory pack ARGS`` wrote the package."""
    done = run("pack", *args, "--json")
    assert done.returncode == 0, done.stderr
    return Path(json.loads(done.stdout)["path"])


def test_pack_makes_a_wheel_that_install_registers(domain_folder: Path, tmp_path: Path) -> None:
    file = domain_folder / "side-world.yaml"
    wheel = packed(str(file), "--name", "side-pack", "--out", str(tmp_path / "dist"))
    assert wheel.suffix == ".whl" and wheel.name.startswith("side_pack-0.1.0")
    site = tmp_path / "site"
    done = run("install", str(wheel), "--target", str(site), "--no-deps", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["worlds"] == ["side-world"]
    project = packed(
        str(domain_folder), "--name", "side-folder", "--folder", "--out", str(tmp_path / "src")
    )
    worlds = project / "src/side_folder/worlds"
    assert {p.name for p in worlds.iterdir()} == {"side-world.yaml", "side_handlers.py"}


def test_a_broken_package_does_not_hide_the_other_worlds(tmp_path: Path) -> None:
    site = tmp_path / "site"
    for name in ("broken-world", "fine-world"):
        assert run("init", name, "--dir", str(tmp_path / name)).returncode == 0
    init = tmp_path / "broken-world/src/broken_world/__init__.py"
    init.write_text(init.read_text() + "\nraise RuntimeError('this package is broken')\n")
    for name in ("broken-world", "fine-world"):
        pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
        pip += ["--target", str(site), str(tmp_path / name)]
        subprocess.run(pip, check=True, capture_output=True, timeout=300)
    listed = run("envs", "--json", env={"PYTHONPATH": str(site)})
    assert listed.returncode == 0, listed.stderr
    ids = {i["id"] for i in json.loads(listed.stdout)}
    assert "fine-world" in ids and "retail" in ids and "broken-world" not in ids
    assert "this package is broken" in folded(listed.stderr)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("init", "My Shop"), "is not a package name"),
        (("check", "/no/such/world.yaml"), "no such file or folder"),
        (("pack", "/no/such/world.yaml", "--name", "x"), "no such file"),
        (("install", "/no/such/folder"), "no such file or folder"),
    ],
)
def test_bad_sources_get_a_clear_error(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    done = run(*args, cwd=tmp_path)
    assert done.returncode == 2 and message in folded(done.stderr), done.stderr


def test_a_file_cannot_take_a_built_in_id(domain_folder: Path, tmp_path: Path) -> None:
    text = (domain_folder / "side-world.yaml").read_text().replace("id: side-world", "id: retail")
    (tmp_path / "retail.yaml").write_text(text)
    (tmp_path / "side_handlers.py").write_text((domain_folder / "side_handlers.py").read_text())
    done = run("check", str(tmp_path / "retail.yaml"))
    assert done.returncode == 2 and "give the domain another id" in folded(done.stderr)
