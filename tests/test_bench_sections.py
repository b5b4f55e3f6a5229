"""``envfactory bench SECTION``: the benchmarks as named sections of one registry, run as a
user runs them (tiny sizes: the figures are the benchmark's, never the test's), and the older
flags that stay as aliases of sections."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from envfactory.bench.sections import SECTIONS, Option
from envfactory.bench.world import WorldBench


def bench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envfactory", "bench", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def record(*args: str) -> Any:
    done = bench(*args)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", list(SECTIONS))
def test_a_sections_options_and_quick_sizes_are_keywords_of_its_run_function(name: str) -> None:
    section = SECTIONS[name]
    keywords = set(inspect.signature(_run(name)).parameters)
    assert {o.name for o in section.options} <= keywords
    assert set(section.quick) <= keywords
    assert section.description.endswith(".") and "\n" not in section.description


def _run(name: str) -> Any:
    module, _, function = SECTIONS[name].run.partition(":")
    return getattr(__import__(module, fromlist=[function]), function)


def test_listing_the_sections_imports_none_of_them() -> None:
    code = (
        "import sys, envfactory.cli.bench; "
        "print(sorted(m for m in sys.modules if m.startswith('envfactory.bench.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.replace("'", '"')) == ["envfactory.bench.sections"]
    listed = record("--list", "--json")
    assert [s["section"] for s in listed] == list(SECTIONS)
    assert {s["section"] for s in listed if not s["in_all"]} == {"calibration", "grpo-step"}


def test_a_section_prints_the_record_its_alias_prints() -> None:
    """``bench world`` is ``bench --json`` (tests/test_cli.py checks the alias at full size)."""
    got = record("world", "--env", "hotel", "--episodes", "5", "--live", "5")
    assert set(got) == set(WorldBench.model_fields)
    assert got["env"] == "hotel" and got["episodes_measured"] == 5


def test_list_options_are_comma_separated() -> None:
    assert Option("sizes", "ints", "").parse("200, 300,") == (200, 300)
    got = record(
        "research", "--envs", "research-wiki", "--episodes", "3", "--sizes", "200,300",
        "--queries", "5",
    )  # fmt: skip
    assert [w["env"] for w in got["worlds"]] == ["research-wiki"]
    assert [s["documents"] for s in got["search"]] == [200, 300]


def test_the_multiagent_section_keeps_its_rows() -> None:
    rows = record("multiagent", "--envs", "kuhn_poker", "--episodes", "2")
    (row,) = rows
    assert row["env"] == "kuhn_poker" and row["episodes"] == 2
    for key in ("step_us_p50", "observe_us_p50", "episodes_per_s", "engine_trajectories_per_s"):
        assert row[key] > 0


def test_a_section_that_cannot_run_here_says_why() -> None:
    missing = {"ENVFACTORY_TAU2_DATA": "/nonexistent/tau2-bench"}
    for args in (("tau2",), ("--tau2", "--json")):  # the section and its alias
        done = bench(*args, env=missing)
        assert done.returncode == 2 and "/nonexistent/tau2-bench" in done.stderr, done.stderr
        assert not done.stdout


def test_unknown_sections_and_options_are_refused() -> None:
    assert "No such command 'nope'" in bench("nope").stderr
    done = bench("world", "--no-such-option", "1")
    assert done.returncode == 2 and "--no-such-option" in done.stderr
    done = bench("--web", "--decode")
    assert done.returncode == 2 and "one section at a time" in done.stderr


def test_a_section_given_a_world_of_another_kind_says_so() -> None:
    for args in (("sandbox", "--env", "retail"), ("research", "--envs", "retail")):
        done = bench(*args)
        assert done.returncode == 2 and "retail is a db world" in done.stderr, done.stderr
        assert not done.stdout
