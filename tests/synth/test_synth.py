"""``envfactory synth`` as a user runs it: the JSON contract, worlds that are the same on every
run, and a library that ``envs``, ``make`` and episodes see like any other world."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envfactory.episode.runner import run_episode
from envfactory.openapi.library import register_library
from envfactory.policies.scripted import NoOp, Oracle
from envfactory.registry import make
from envfactory.registry.worldfile import FORMAT, load_world
from envfactory.synth.compose import synthesize
from envfactory.synth.pipeline import SynthSettings, synth_one

N = 5


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "envfactory", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("synth")
    done = cli("synth", "--n", str(N), "--out", str(out), "--json", "--jobs", "2")
    return out, json.loads(done.stdout)


def test_synth_json_contract(library: tuple[Path, dict[str, Any]]) -> None:
    out, summary = library
    assert {"generated", "passed_audit", "seconds"} <= set(summary)
    assert N <= summary["generated"] <= 2 * N and summary["seconds"] > 0
    assert summary["passed_audit"] == N, summary["audit_failures"]
    assert summary["yield_rate"] >= 0.5 and summary["seconds_per_world"] > 0
    tags = summary["patterns"]  # what the kept worlds are made of, counted
    assert {t.split(":")[0] for t in tags} >= {"graph", "lifecycle", "constraint"}
    assert sum(tags.values()) >= 3 * N
    report = json.loads((out / "report.json").read_text())
    for r in report["results"][:N]:
        if not r["passed"]:
            assert r["reason"] and r["detail"]  # counted with its reason, not kept
            continue
        audit = r["audit"]
        assert r["passed"] and audit["oracle_success_rate"] == 1.0 and audit["deterministic"]
        assert all(audit[f"{b}_reward_mean"] <= 0.05 for b in ("noop", "random", "spam", "guess"))
        assert not any(e["refused"] for e in audit["exploits"].values())  # by the 1% test


def _digest(index: int) -> str:
    code = (
        "import hashlib, json; from envfactory.synth.compose import synthesize;"
        f"print(hashlib.sha256(json.dumps(synthesize({index}).domain, sort_keys=True)"
        ".encode()).hexdigest())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_the_same_index_is_the_same_world_in_any_process() -> None:
    here = hashlib.sha256(json.dumps(synthesize(3).domain, sort_keys=True).encode()).hexdigest()
    assert _digest(3) == here
    ids = {synthesize(i).domain["id"] for i in range(40)}
    assert len(ids) == 40  # every index its own world
    assert synthesize(3, seed=1).domain != synthesize(3).domain  # another seed, another library


def test_the_library_is_listed_and_played(library: tuple[Path, dict[str, Any]]) -> None:
    out, _ = library
    items = json.loads(cli("envs", "--json", "--library", str(out)).stdout)
    kinds = {i["id"]: i["kind"] for i in items}
    saved = sorted(p.stem for p in out.glob("synth-*.json"))
    assert len(saved) == N and all(kinds[s] == "synth" for s in saved)
    assert kinds.get("hotel") == "db"
    register_library(out)
    for path in out.glob("synth-*.json"):
        data = json.loads(path.read_text())
        assert data["format"] == FORMAT and data["kind"] == "synth"
        env = make(load_world(path).id)
        assert env.kind == "synth"
        for d in env.difficulties:
            task = env.task("test", d, 0)
            episode = env.episode()
            assert run_episode(env, task, Oracle(), episode).reward == 1.0
            assert run_episode(env, task, NoOp(), episode).reward == 0.0
            episode.close()


def test_a_library_world_is_made_from_the_environment(
    library: tuple[Path, dict[str, Any]],
) -> None:
    out, _ = library
    world = sorted(out.glob("synth-*.json"))[0].stem
    done = cli("check", world, "-n", "30", "--json", env={"ENVFACTORY_LIBRARY": str(out)})
    report = json.loads(done.stdout)
    assert report["oracle_success_rate"] == 1.0 and report["passed"]


def test_a_broken_candidate_is_a_reason_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """A synthesiser bug that yields invalid domain data is reported as compile_error."""
    from envfactory.synth import pipeline

    def broken(index: int, seed: int = 0) -> Any:
        made = synthesize(index, seed)
        made.domain["actions"][0]["load"] = {"x": "no_such_table[1]"}
        return made

    monkeypatch.setattr(pipeline, "synthesize", broken)
    result = synth_one(0, SynthSettings())
    assert not result.passed and result.reason == "compile_error"
    assert "no_such_table" in result.detail
