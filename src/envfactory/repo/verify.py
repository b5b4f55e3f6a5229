"""Verdicts on mutations: run the tests a mutation can change, in a sandbox, once.

A batch of mutations of one project runs in one sandbox: the driver collects the tests
once, then forks a child per mutation that patches the mutated function's code into the
imported modules and runs only the tests that execute the mutated line (the project's
baseline says which). A mutation is kept when some of those tests fail and it breaks
nothing else (tests that never run the line cannot change). Verdicts are cached on disk
(``.cache/repo/verdicts``), so a task is verified once per machine.

Verdicts also ship with envfactory (``verdicts/<project>.jsonl.gz`` beside this module: those
a fresh checkout's tests and examples draw, as a fresh checkout recorded them), and they take
precedence over a machine's own. A verdict is not the same on every machine: a mutation that
slows the tests down times out on a loaded one, and some projects' tests are sensitive to
timing, so the failing tests, and with them the tasks kept, could differ. With the shipped
verdicts the same tasks are drawn everywhere, and a fresh checkout does not spend its first
quarter of an hour verifying them again. ``tests/repo`` re-runs a sample of them for real.
"""

from __future__ import annotations

import gzip
import json
import os
import threading
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from envfactory.repo import projects
from envfactory.repo.mutate import Mutation, check_valid
from envfactory.repo.projects import Project
from envfactory.repo.runner import DriverFailed, drive, store, test_files

MAX_TESTS = 400  # a mutation whose line runs in more tests is checked against the first ones


@dataclass
class Baseline:
    project: Project
    doc: dict[str, Any]

    @cached_property
    def tests(self) -> list[str]:
        return list(self.doc["tests"])

    def covering(self, rel: str, line: int) -> list[str]:
        ids = self.doc["lines"].get(rel, {}).get(str(line), [])
        return [self.tests[i] for i in ids]

    def modules_touching(self, rels: set[str]) -> list[str]:
        return sorted(m for m, fs in self.doc["modules"].items() if rels.intersection(fs))


_BASELINES: dict[str, Baseline] = {}


def baseline(p: Project) -> Baseline:
    found = _BASELINES.get(p.key)
    if found is None:
        doc = json.loads(projects.baseline_path(p).read_text())
        found = _BASELINES[p.key] = Baseline(p, doc)
    return found


SHIPPED = Path(__file__).with_name("verdicts")


def shipped_path(p: Project) -> Path:
    return SHIPPED / f"{p.key}.jsonl.gz"


class Verdicts:
    """Cached verdicts of one project: ``{"ok": bool, "failing": {test: message}}``, this
    machine's and those shipped (which take precedence)."""

    def __init__(self, p: Project) -> None:
        self.project = p
        self.path = projects.verdicts_path(p)
        self.known: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        if self.path.is_file():
            self._read(self.path.read_text())
        shipped = shipped_path(p)
        if shipped.is_file():  # read last: a shipped verdict wins
            self._read(gzip.decompress(shipped.read_bytes()).decode())

    def _read(self, text: str) -> None:
        for line in text.splitlines():
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            self.known[doc["key"]] = doc["verdict"]

    def record(self, key: str, verdict: dict[str, Any]) -> None:
        with self.lock:
            self.known[key] = verdict
            self.path.parent.mkdir(parents=True, exist_ok=True)
            line = json.dumps({"key": key, "verdict": verdict}) + "\n"
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)


_VERDICTS: dict[str, Verdicts] = {}
_VLOCK = threading.Lock()


def verdicts(p: Project) -> Verdicts:
    with _VLOCK:
        found = _VERDICTS.get(p.key)
        if found is None:
            found = _VERDICTS[p.key] = Verdicts(p)
        return found


def key_of(ms: list[Mutation]) -> str:
    return "+".join(sorted(m.id for m in ms))


def verify(p: Project, groups: list[list[Mutation]], cached: bool = True) -> list[dict[str, Any]]:
    """The verdict on each group of mutations (applied together), from the cache or a run
    (always a run when not ``cached``; the cache then holds its verdicts)."""
    cache = verdicts(p)
    out: list[dict[str, Any] | None] = [
        cache.known.get(key_of(g)) if cached else None for g in groups
    ]
    todo = [i for i, v in enumerate(out) if v is None]
    if todo:
        jobs, pending = [], {}
        s = store(p)
        base = baseline(p)
        for i in todo:
            g = groups[i]
            job = _job(s, base, g)
            if isinstance(job, str):
                verdict = {"ok": False, "why": job}
                cache.record(key_of(g), verdict)
                out[i] = verdict
            else:
                job["id"] = str(i)
                jobs.append(job)
                pending[str(i)] = g
        if jobs:
            tests = sorted({t for j in jobs for t in j["tests"]})
            spec = {"mode": "verify", "jobs": jobs, "files_to_collect": test_files(tests)}
            try:
                _, results = drive(s, {}, spec)
            except DriverFailed as exc:
                results = {j["id"]: {"error": f"driver: {exc.limit}"} for j in jobs}
            for jid, g in pending.items():
                verdict = _judge((results or {}).get(jid, {"error": "no result"}))
                cache.record(key_of(g), verdict)
                out[int(jid)] = verdict
    return [v or {"ok": False} for v in out]


def _job(s: Any, base: Baseline, group: list[Mutation]) -> dict[str, Any] | str:
    by_file: dict[str, list[Mutation]] = {}
    for m in group:
        by_file.setdefault(m.file, []).append(m)
    patches = []
    tests: set[str] = set()
    for rel, ms in by_file.items():
        data = s.read(rel)
        for m in ms:
            if not check_valid(m, data):
                return "the mutation does not give the intended tree"
        new = data
        for m in sorted(ms, key=lambda m: -m.start):
            new = m.apply(new)
        for m in ms:
            patch: dict[str, Any] = {
                "module": s.project.module(rel),
                "qualname": m.qualname,
                "source": new.decode("utf-8"),
            }
            if m.op == "default":
                patch["default"] = m.default
            patches.append(patch)
            tests.update(base.covering(rel, m.probe)[:MAX_TESTS])
    if not tests:
        return "no passing test runs the mutated line"
    return {"tests": sorted(tests), "patches": patches, "timeout": 20}


def _judge(res: dict[str, Any]) -> dict[str, Any]:
    if res.get("error"):
        return {"ok": False, "why": str(res["error"])[:200]}
    if res.get("missing"):
        return {"ok": False, "why": "tests not found"}
    results = res.get("results", {})
    failing = {t: v[1] for t, v in results.items() if v[0] != "passed"}
    failed = {t: m for t, m in failing.items() if m}
    if not failed:
        return {"ok": False, "why": "no test fails"}
    return {"ok": True, "failing": failing}
