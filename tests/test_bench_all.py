"""``envfactory bench --all --json``: one document, every section with its status and the
load average beside it; a missing runtime is a skipped section with its reason, never a failed
run. Sizes are ``--quick`` and sections few, to keep this cheap: the figures are the
benchmark's, not the test's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from envfactory.bench.all import ALL
from envfactory.bench.sections import SECTIONS


def _bench_all(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "envfactory", "bench", "--all", "--json", *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})}
    )


def test_all_is_every_section_but_the_model_runs_each_with_quick_sizes() -> None:
    # hours of a real model, minutes a GRPO step: their own commands
    apart = {"calibration", "grpo-step"}
    assert apart <= set(SECTIONS)
    assert list(ALL) == [name for name in SECTIONS if name not in apart]
    assert all(SECTIONS[name].quick for name in ALL)


def test_the_document_and_a_skipped_section() -> None:
    missing = {"ENVFACTORY_TAU2_DATA": "/nonexistent/tau2-bench"}
    out = _bench_all("--quick", "--only", "tau2,world", env=missing)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    assert doc["quick"] is True and doc["date"] and doc["machine"]["cpus"]
    assert len(doc["load_avg_start"]) == 3 and len(doc["load_avg_end"]) == 3
    assert list(doc["sections"]) == ["world", "tau2"]  # the usual order
    for section in doc["sections"].values():
        assert len(section["load_avg_before"]) == 3 and len(section["load_avg_after"]) == 3
        assert section["seconds"] >= 0
    world, tau2 = doc["sections"]["world"], doc["sections"]["tau2"]
    assert world["status"] == "ok" and world["result"]["step_us_p50"] > 0
    assert tau2["status"] == "skipped" and "/nonexistent/tau2-bench" in tau2["reason"]


def test_an_unknown_section_is_refused() -> None:
    out = _bench_all("--only", "world,nope")
    assert out.returncode != 0 and "nope" in out.stderr
