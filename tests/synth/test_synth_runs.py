"""``envfactory synth`` at scale: Ray gives the library one process gives, byte for byte, and
a stopped run goes on from its journal to the library an uninterrupted run makes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from envfactory.cli.main import app
from envfactory.registry.worldfile import world_files
from envfactory.synth.pipeline import JOURNAL
from envfactory.workers import imap_unordered

N = 2
LIGHT = ("--audit-n", "30")  # the same audit over fewer tasks: candidates pass and fail
TIMINGS = {"seconds", "seconds_per_world", "median_cpu_seconds", "surplus", "settings"}


def command(out: Path, *args: str) -> list[str]:
    return ["synth", "--out", str(out), *LIGHT, "--json", *args]


def cli(out: Path, *args: str) -> dict[str, Any]:
    """The real command in a process of its own; its JSON summary."""
    done = subprocess.run(
        [sys.executable, "-m", "envfactory", *command(out, *args)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


def invoke(out: Path, *args: str) -> tuple[int, str]:
    """The real command in this process: its exit code and output."""
    result = CliRunner().invoke(app, command(out, *args))
    return result.exit_code, result.output


def library(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in world_files(out)}


def report(out: Path) -> dict[str, Any]:
    """OUT/report.json without what depends on the machine and the moment."""
    data = json.loads((out / "report.json").read_text())
    for r in data["results"]:
        del r["seconds"], r["cpu_seconds"]
    return {k: v for k, v in data.items() if k not in TIMINGS}


def journal(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / JOURNAL).read_text().splitlines()[1:]]


def assert_same(out: Path, straight: Path) -> None:
    assert library(out) == library(straight)
    assert report(out) == report(straight)


@pytest.fixture(scope="module")
def straight(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted run in one process."""
    out = tmp_path_factory.mktemp("straight")
    summary = cli(out, "--n", str(N), "--jobs", "1")
    assert summary["passed_audit"] == N
    return out


def copy(straight: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(straight, tmp_path / "lib"))


def test_ray_makes_the_same_library(straight: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    summary = cli(tmp_path, "--n", str(N), "--jobs", "2", "--ray")  # a local Ray, 2 CPUs
    assert summary["passed_audit"] == N
    assert_same(tmp_path, straight)
    assert len(journal(tmp_path)) == summary["generated"] + summary["surplus"]


def test_a_killed_run_goes_on(straight: Path, tmp_path: Path) -> None:
    args = [sys.executable, "-m", "envfactory", *command(tmp_path, "--n", str(N), "--jobs", "1")]
    run = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not ((tmp_path / JOURNAL).exists() and journal(tmp_path)):
        assert run.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    run.kill()
    assert run.wait() == -9  # killed mid-run, not finished
    first = journal(tmp_path)[0]
    code, output = invoke(tmp_path, "--n", str(N), "--jobs", "1")
    assert code == 0, output
    assert_same(tmp_path, straight)
    again = [r for r in journal(tmp_path) if r["index"] == first["index"]]
    assert again == [first]  # journaled, so not composed again


def test_a_journal_cut_mid_line_goes_on(straight: Path, tmp_path: Path) -> None:
    out = copy(straight, tmp_path)
    lines = (out / JOURNAL).read_text().splitlines(keepends=True)
    (out / JOURNAL).write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    code, output = invoke(out, "--n", str(N), "--jobs", "1")
    assert code == 0, output
    assert_same(out, straight)
    assert len(journal(out)) == len(lines) - 1  # the cut candidate, composed again


def test_fewer_then_more_worlds_from_one_journal(straight: Path, tmp_path: Path) -> None:
    out = copy(straight, tmp_path)
    before = journal(out)
    code, output = invoke(out, "--n", "1", "--jobs", "1")
    assert code == 0, output
    first = min(r["index"] for r in before if r["passed"])
    assert report(out)["generated"] == first + 1
    assert list(library(out)) == sorted(library(straight))[:1]  # the second world removed
    code, output = invoke(out, "--n", str(N), "--jobs", "1")
    assert code == 0, output
    assert_same(out, straight)  # the removed world composed again, the same bytes
    assert journal(out) == before  # and nothing audited again


def test_another_setting_is_refused_or_started_fresh(straight: Path, tmp_path: Path) -> None:
    out = copy(straight, tmp_path)
    for args in (("--seed", "1"), ("--diversity", "149")):
        code, output = invoke(out, "--n", str(N), *args)
        assert code == 2 and "other settings" in output and "--fresh" in output, output
    assert library(out) == library(straight)
    code, output = invoke(out, "--n", "1", "--jobs", "1", "--fresh")
    assert code == 0, output
    assert list(library(out)) == sorted(library(straight))[:1]
    assert [r["index"] for r in journal(out)] == list(range(report(out)["generated"]))


def test_ray_flag_takes_an_optional_address() -> None:
    synth = typer.main.get_command(app).get_command(None, "synth")  # type: ignore[attr-defined]
    for args, address in (
        (["--ray"], "local"),
        (["--n", "6", "--ray", "--json"], "local"),
        (["--ray", "10.0.0.1:6379", "--json"], "10.0.0.1:6379"),
        (["--ray=auto"], "auto"),
        ([], None),
    ):
        assert synth.make_context("synth", args).params["ray"] == address, args


@pytest.mark.parametrize("command", [["synth"], ["openapi", "import", "directory"]])
def test_a_diversity_sample_too_small_to_pass_is_refused(command: list[str]) -> None:
    """Fewer sampled tasks than the plan shapes a world must show would refuse every world."""
    refused = CliRunner().invoke(app, [*command, "--diversity", "49", "--json"])
    assert refused.exit_code == 2 and "greater than or equal to 50" in refused.output


def test_without_ray_the_error_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if it were not installed
    code, output = invoke(tmp_path, "--n", "1", "--ray")
    assert code == 2 and "integrations extra" in output, output
    assert not (tmp_path / JOURNAL).exists()


def test_ray_tasks_need_a_connection() -> None:
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()
    with pytest.raises(RuntimeError, match=r"ray\.init"):
        next(imap_unordered(os.getpid, [()], 2, ray=True))
