"""The registry reads the kinds' tables of entry points: listing worlds imports none of them."""

from __future__ import annotations

import json
import subprocess
import sys

from envfactory import registry
from envfactory.registry.table import BUILTIN_TABLES, EntryPoint
from envfactory.terminal.builtin import FAMILIES
from envfactory.terminal.register import WORLDS as TERMINAL_WORLDS

LIST_AND_REPORT = """
import json, sys
from envfactory import registry
ids = registry.list_envs()
print(json.dumps({"ids": ids, "modules": sorted(sys.modules)}))
"""


def test_listing_worlds_imports_no_world_module() -> None:
    out = subprocess.run(
        [sys.executable, "-c", LIST_AND_REPORT], capture_output=True, text=True, check=True
    ).stdout
    report = json.loads(out)
    assert {"retail", "term-git", "research-wiki", "negotiation", "web-retail"} <= set(
        report["ids"]
    )
    kinds = ("db", "terminal", "research", "repo", "multiagent", "web", "peers.tau2")
    loaded = [
        m
        for m in report["modules"]
        if any(m.startswith(f"envfactory.{k}.") for k in kinds) and not m.endswith(".register")
    ]
    # availability checks only (which data or sandbox is missing), no environment or episode
    assert not [m for m in loaded if m.endswith((".environment", ".episode", ".tools"))], loaded


def test_every_table_entry_names_a_world_that_is_made() -> None:
    for table in BUILTIN_TABLES:
        module = __import__(table, fromlist=["WORLDS"])
        for env_id, entry in module.WORLDS.items():
            assert isinstance(entry, EntryPoint)
            if entry.why_unavailable() is None:
                assert registry.make(env_id).id == env_id


def test_the_terminal_table_lists_every_family() -> None:
    assert sorted(TERMINAL_WORLDS) == sorted(f.id for f in FAMILIES)
