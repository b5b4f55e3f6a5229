"""``envfactory openapi import`` and the library, run as a user runs them: the JSON contract,
the failure reasons, and worlds that ``envs``, ``make`` and episodes see."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from openapi_worlds import SPECS

from envfactory.episode.runner import run_episode
from envfactory.openapi.library import register_library
from envfactory.openapi.pipeline import Settings, import_one
from envfactory.policies.scripted import Oracle
from envfactory.registry import make
from envfactory.registry.worldfile import FORMAT, load_world

PASSING = {"clinic-oas3.yaml", "shop-swagger2.json", "queues-rpc.json", "notes-google.json"}
PASSING |= {"vaults-azure.json", "accounts-rpc-post.json", "airlines-read-only.yaml"}
PASSING |= {"permits-reference.yaml", "payments-modifications.yaml"}
SKIPPED = {
    "malformed.yaml": "malformed",
    "not-an-api.json": "malformed",
    "swagger-1.json": "unsupported_construct",
    "external-ref.yaml": "unsupported_construct",
    "read-only.yaml": "no_writable_resource",
    "create-only.yaml": "no_tasks",
    "names-only.yaml": "no_tasks",
    "webhooks-only.yaml": "no_resources",
}


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
    out = tmp_path_factory.mktemp("worlds")
    done = cli(
        "openapi", "import", str(SPECS), "--out", str(out), "--json", "--jobs", "2",
        "--summary", str(out / "compact" / "summary.json"),
    )  # fmt: skip
    return out, json.loads(done.stdout)


def test_import_json_contract(library: tuple[Path, dict[str, Any]]) -> None:
    out, summary = library
    assert summary["specs"] == len(PASSING) + len(SKIPPED)
    assert summary["compiled"] == len(PASSING)
    assert summary["passed_audit"] == len(PASSING)
    assert summary["failures"] == {"malformed": 2, "unsupported_construct": 2} | {
        "no_writable_resource": 1,
        "no_tasks": 2,
        "no_resources": 1,
    }
    assert summary["seconds"] > 0 and "median_seconds" in summary
    report = json.loads((out / "report.json").read_text())
    by_source = {r["source"]: r for r in report["results"]}
    for name, reason in SKIPPED.items():
        assert by_source[name]["reason"] == reason and by_source[name]["detail"]
    for name in PASSING:
        audit = by_source[name]["audit"]
        assert by_source[name]["passed"] and audit["oracle_success_rate"] == 1.0
        assert audit["deterministic"] and audit["tool_coverage"] >= 0.8
        for baseline in ("noop", "random", "spam", "guess"):
            assert audit[f"{baseline}_reward_mean"] <= 0.05


def test_compact_summary(library: tuple[Path, dict[str, Any]]) -> None:
    out, summary = library
    compact = json.loads((out / "compact" / "summary.json").read_text())
    assert compact["passed_audit"] == summary["passed_audit"]
    rows = {source: outcome for source, outcome, _ in compact["documents"]}
    assert rows["clinic-oas3.yaml"] == "passed" and rows["malformed.yaml"] == "malformed"
    assert sum(p["passed"] for p in compact["providers"].values()) == len(PASSING)


def test_library_is_listed_with_kind_openapi(library: tuple[Path, dict[str, Any]]) -> None:
    out, _ = library
    items = json.loads(cli("envs", "--json", "--library", str(out)).stdout)
    kinds = {i["id"]: i["kind"] for i in items}
    saved = sorted(p.stem for p in out.glob("*.json") if p.name != "report.json")
    assert len(saved) == len(PASSING)
    assert all(kinds[s] == "openapi" for s in saved)
    assert kinds.get("retail") == "db"  # the built-in worlds are still there


def test_a_run_started_again_goes_on_from_its_journal(
    library: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    out, summary = library
    again = tmp_path / "again"
    shutil.copytree(out, again)
    lines = (again / "openapi-journal.jsonl").read_text().splitlines()
    assert len(lines) == 1 + summary["specs"]  # the header, then one outcome per document
    # A run killed mid-write: the last outcome half written, another not written at all.
    (again / "openapi-journal.jsonl").write_text("\n".join(lines[:-2]) + "\n" + lines[-2][:9])
    resumed = json.loads(cli("openapi", "import", str(SPECS), "--out", str(again), "--json").stdout)
    assert resumed["journaled"] == summary["specs"] - 2
    for key in ("specs", "compiled", "passed_audit", "failures"):
        assert resumed[key] == summary[key], key
    first, then = (json.loads((d / "report.json").read_text())["results"] for d in (out, again))
    assert [r["source"] for r in then] == [r["source"] for r in first]
    assert len((again / "openapi-journal.jsonl").read_text().splitlines()) == 1 + summary["specs"]


def test_a_journal_of_other_settings_is_refused_or_started_fresh(
    library: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    out, _ = library
    again = tmp_path / "again"
    shutil.copytree(out, again)
    args = ("openapi", "import", str(SPECS / "malformed.yaml"), "--out", str(again), "-n", "50")
    refused = subprocess.run(
        [sys.executable, "-m", "envfactory", *args], capture_output=True, text=True, timeout=300
    )
    assert refused.returncode != 0 and "--fresh" in refused.stderr
    assert len(list(again.glob("*.json"))) == len(PASSING) + 1  # the worlds and report.json
    fresh = json.loads(cli(*args, "--fresh", "--json").stdout)
    assert fresh["journaled"] == 0 and fresh["failures"] == {"malformed": 1}
    assert [p.name for p in again.glob("*.json")] == ["report.json"]


def test_library_from_the_environment(library: tuple[Path, dict[str, Any]]) -> None:
    out, _ = library
    code = (
        "import envfactory, json; e = envfactory.make('clinic-oas3'); t = e.task('test', 3, 0);"
        "print(json.dumps([e.kind, t.public.task_id]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "ENVFACTORY_LIBRARY": str(out)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == ["openapi", "clinic-oas3/test/3/0"]


def test_saved_worlds_reload_and_solve(library: tuple[Path, dict[str, Any]]) -> None:
    out, _ = library
    register_library(out)
    for path in sorted(out.glob("*.json")):
        if path.name == "report.json":
            continue
        data = json.loads(path.read_text())
        assert data["format"] == FORMAT and data["audit"]["oracle_success_rate"] == 1.0
        spec = load_world(path)
        env = make(spec.id)
        assert env.kind == "openapi"
        for d in env.difficulties:
            task = env.task("validation", d, 1)
            episode = env.episode()
            assert run_episode(env, task, Oracle(), episode).reward == 1.0
            episode.close()


def test_a_bad_document_never_crashes(tmp_path: Path) -> None:
    weird = tmp_path / "weird.json"
    weird.write_text(json.dumps({"openapi": "3.0.0", "paths": {"/x": {"get": "nope"}}}))
    result = import_one(weird, "weird.json", Settings())
    assert result.reason == "malformed" and not result.passed
    deep = tmp_path / "deep.json"
    deep.write_text('{"openapi": "3.0.0", "paths": {}, "x": ' + "[" * 5000 + "]" * 5000 + "}")
    assert import_one(deep, "deep.json", Settings()).reason == "malformed"
    slow = import_one(SPECS / "clinic-oas3.yaml", "clinic-oas3.yaml", Settings(timeout=0.05))
    assert slow.reason == "timeout"


def test_the_limit_counts_a_document_s_cpu_time_not_its_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A document that waits (as one does on a busy machine) past the limit is not timed out;
    one that computes past it is. The document's work is stood in for by a sleep and a loop."""
    import time

    from envfactory.openapi import pipeline

    def waits(*_: Any) -> None:
        time.sleep(0.6)

    def computes(*_: Any) -> None:
        end = time.process_time() + 0.6
        while time.process_time() < end:
            pass

    monkeypatch.setattr(pipeline, "_run", waits)
    waited = import_one(SPECS / "clinic-oas3.yaml", "clinic-oas3.yaml", Settings(timeout=0.2))
    assert waited.reason is None and waited.seconds >= 0.6
    monkeypatch.setattr(pipeline, "_run", computes)
    computed = import_one(SPECS / "clinic-oas3.yaml", "clinic-oas3.yaml", Settings(timeout=0.2))
    assert computed.reason == "timeout" and computed.cpu_seconds < 0.6
