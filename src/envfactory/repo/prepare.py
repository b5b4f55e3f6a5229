"""``python -m envfactory.repo.prepare``: unpack the downloaded projects and record baselines.

For each pinned project (its sdist already in ``.cache/repo/sdist``, checked against its
sha256): unpack it, run its whole test suite twice in a sandbox (once recording, per test,
the source lines it executes), and keep the tests that pass both times and the lines they
run. ``make setup`` runs it after downloading; it skips projects already prepared.
"""

from __future__ import annotations

import json
import sys
import time

from envfactory.repo import projects
from envfactory.repo.projects import PROJECTS, Project
from envfactory.repo.runner import drive, store, test_files

BASELINE_VERSION = 1


def prepare(p: Project, force: bool = False) -> dict[str, object]:
    out = projects.baseline_path(p)
    if out.is_file() and not force:
        return dict(json.loads(out.read_text()))
    projects.unpack(p)
    s = store(p)
    tests = [t for t in p.tests]
    files = [f"/work/{f}" for f in s.sources]
    _, traced = drive(s, {}, {"mode": "trace", "files": files, "files_to_collect": tests})
    assert isinstance(traced, dict)
    passed = sorted(t for t, v in traced.items() if v["outcome"][0] == "passed")
    line, _found = drive(
        s, {}, {"mode": "run", "select": passed, "files_to_collect": test_files(passed)}
    )
    again = json.loads(line)
    flaky = set(again["not_passed"])
    if again["failed"] > len(flaky):
        raise RuntimeError(f"{p.key}: the untraced run failed {again['failed']} tests")
    passed = [t for t in passed if t not in flaky]
    index = {t: i for i, t in enumerate(passed)}
    lines: dict[str, dict[int, list[int]]] = {}
    touched: dict[str, set[str]] = {}
    for t in passed:
        for f, nums in traced[t]["lines"].items():
            rel = f.removeprefix("/work/")
            by_line = lines.setdefault(rel, {})
            for n in nums:
                by_line.setdefault(n, []).append(index[t])
            touched.setdefault(t.split("::", 1)[0], set()).add(rel)
    doc = {
        "version": BASELINE_VERSION,
        "project": p.key,
        "tests": passed,
        "failing_at_baseline": sorted(set(traced) - set(passed)),
        "lines": lines,
        "modules": {m: sorted(v) for m, v in touched.items()},
    }
    out.write_text(json.dumps(doc))
    return doc


def main(argv: list[str]) -> int:
    force = "--force" in argv
    wanted = [a for a in argv if not a.startswith("-")]
    for p in PROJECTS:
        if wanted and p.name not in wanted:
            continue
        started = time.perf_counter()
        doc = prepare(p, force=force)
        tests = doc["tests"]
        assert isinstance(tests, list)
        print(f"{p.key}: {len(tests)} passing tests ({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
