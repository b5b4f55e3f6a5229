"""Fix a failing Python module so that its tests pass.

Each function comes from a template with a correct body, a few buggy ones, and a reference
implementation here that gives the expected values. The agent sees unit tests; the verifier
calls the functions on further inputs in a check sandbox and compares with the reference.
"""

from __future__ import annotations

import inspect
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from envfactory.terminal.checks import exec_json, python_check
from envfactory.terminal.family import WORDS, Draft, Family, python, read, run, write
from envfactory.terminal.fs import FileSpec, file

Gen = Callable[[random.Random], list[Any]]


@dataclass(frozen=True)
class Template:
    name: str
    params: str
    body: str
    bugs: tuple[str, ...]
    ref: Callable[..., Any]
    args: Gen
    probes: tuple[tuple[Any, ...], ...]  # inputs on which every bug shows


def _ints(rng: random.Random) -> list[Any]:
    return [[rng.randint(-20, 50) for _ in range(rng.randint(2, 7))]]


def _text(rng: random.Random) -> list[Any]:
    words = [rng.choice(WORDS) for _ in range(rng.randint(2, 5))]
    return [" ".join(w.upper() if rng.random() < 0.3 else w.title() for w in words)]


def _median(xs: list[int]) -> float:
    s = sorted(xs)
    mid = len(s) // 2
    return float(s[mid]) if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


TEMPLATES = (
    Template(
        "mean",
        "xs",
        "return sum(xs) / len(xs)",
        ("return sum(xs) / (len(xs) - 1)", "return sum(xs) // len(xs)"),
        lambda xs: sum(xs) / len(xs),
        _ints,
        (([1, 2, 4],),),
    ),
    Template(
        "clamp",
        "x, lo, hi",
        "return max(lo, min(x, hi))",
        ("return min(lo, max(x, hi))", "return max(lo, min(x, lo))"),
        lambda x, lo, hi: max(lo, min(x, hi)),
        lambda r: [r.randint(-30, 30), r.randint(-10, 0), r.randint(1, 10)],
        ((15, -5, 10),),
    ),
    Template(
        "count_vowels",
        "text",
        "return sum(1 for c in text.lower() if c in 'aeiou')",
        (
            "return sum(1 for c in text if c in 'aeiou')",
            "return sum(1 for c in text.lower() if c in 'aeio')",
        ),
        lambda t: sum(1 for c in t.lower() if c in "aeiou"),
        _text,
        (("Ouija Tube",),),
    ),
    Template(
        "is_leap",
        "year",
        "return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)",
        ("return year % 4 == 0", "return year % 4 == 0 and year % 100 != 0"),
        lambda y: y % 4 == 0 and (y % 100 != 0 or y % 400 == 0),
        lambda r: [r.choice([1900, 2000, 2023, 2024, 2100, 2400, r.randint(1800, 2400)])],
        ((1900,), (2000,)),
    ),
    Template(
        "median",
        "xs",
        "s = sorted(xs)\n    m = len(s) // 2\n"
        "    return float(s[m]) if len(s) % 2 else (s[m - 1] + s[m]) / 2",
        (
            "s = xs\n    m = len(s) // 2\n"
            "    return float(s[m]) if len(s) % 2 else (s[m - 1] + s[m]) / 2",
            "s = sorted(xs)\n    m = len(s) // 2\n    return float(s[m])",
        ),
        _median,
        _ints,
        (([5, 1, 3, 2],),),
    ),
    Template(
        "running_total",
        "xs",
        "out, t = [], 0\n    for x in xs:\n        t += x\n        out.append(t)\n    return out",
        (
            "out, t = [], 0\n    for x in xs[1:]:\n"
            "        t += x\n        out.append(t)\n    return out",
            "out, t = [], 0\n    for x in xs:\n"
            "        out.append(t)\n        t += x\n    return out",
        ),
        lambda xs: [sum(xs[: i + 1]) for i in range(len(xs))],
        _ints,
        (([1, 2, 3],),),
    ),
    Template(
        "slugify",
        "text",
        "return '-'.join(text.lower().split())",
        ("return '-'.join(text.split())", "return '_'.join(text.lower().split())"),
        lambda t: "-".join(t.lower().split()),
        _text,
        (("Hello Big World",),),
    ),
    Template(
        "word_count",
        "text",
        "counts = {}\n    for w in text.lower().split():\n"
        "        counts[w] = counts.get(w, 0) + 1\n    return counts",
        (
            "counts = {}\n    for w in text.split():\n        counts[w] = counts.get(w, 0) + 1\n"
            "    return counts",
            "counts = {}\n    for w in text.lower().split():\n"
            "        counts[w] = 1\n    return counts",
        ),
        lambda t: {w: t.lower().split().count(w) for w in t.lower().split()},
        lambda r: [
            " ".join(
                r.choice(WORDS[:6]).title() if r.random() < 0.5 else r.choice(WORDS[:6])
                for _ in range(r.randint(3, 7))
            )
        ],
        (("the The cat",),),
    ),
)


def normalize(value: Any) -> Any:
    """Results as comparable JSON: floats rounded, tuples as lists, keys sorted."""
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    if isinstance(value, dict):
        return {str(k): normalize(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    return value


# Every module the driver needs is imported before the working tree joins the path.
DRIVER = (
    "import io, json, sys, unittest\nsys.path.insert(0, '.')\n"
    + inspect.getsource(normalize).replace("Any", "object")
    + """
cases = json.loads(sys.argv[2])
mod = __import__(sys.argv[1], fromlist=["*"])
out = {}
for name, calls in cases.items():
    got = []
    for args in calls:
        try:
            got.append(normalize(getattr(mod, name)(*args)))
        except Exception as exc:
            got.append("raised " + type(exc).__name__)
    out[name] = got
suite = unittest.defaultTestLoader.discover("tests", top_level_dir=".")
run = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
out["unit_tests"] = run.wasSuccessful() and run.testsRun > 0
print("RESULT " + json.dumps(out))
"""
)


REPLACE = """
import pathlib
p = pathlib.Path({path!r})
p.write_text(p.read_text().replace({old!r}, {new!r}, 1))
"""


def _source(chosen: list[tuple[Template, str]]) -> str:
    parts = ['"""Small helpers used across the app."""\n']
    for t, body in chosen:
        parts.append(f"\ndef {t.name}({t.params}):\n    {body}\n")
    return "\n".join(parts)


def _unit_tests(module: str, cases: dict[str, list[tuple[list[Any], Any]]]) -> str:
    lines = ["import unittest", "", f"from app.{module} import *  # noqa", "", ""]
    lines.append("class HelpersTest(unittest.TestCase):")
    for name, pairs in cases.items():
        lines.append(f"    def test_{name}(self):")
        for args, want in pairs:
            call = f"{name}({', '.join(repr(a) for a in args)})"
            if isinstance(want, float):
                lines.append(f"        self.assertAlmostEqual({call}, {want!r})")
            else:
                lines.append(f"        self.assertEqual({call}, {want!r})")
    lines += ["", "", 'if __name__ == "__main__":', "    unittest.main()", ""]
    return "\n".join(lines)


class PythonFix(Family):
    id = "term-python-fix"
    name = "Fix a failing Python script"
    description = "Find and fix the bugs in a Python module so that its unit tests pass."

    def generate(self, rng: random.Random, difficulty: int) -> Draft:
        n_funcs = (1, 3, 4, 5, 6)[difficulty - 1]
        n_bugs = (1, 2, 3, 4, 5)[difficulty - 1]
        templates = rng.sample(TEMPLATES, n_funcs)
        buggy = set(rng.sample(range(n_funcs), n_bugs))
        module = "_".join(rng.sample(WORDS, 2))
        visible: dict[str, list[tuple[list[Any], Any]]] = {}
        hidden: dict[str, list[list[Any]]] = {}
        expected: dict[str, list[Any]] = {}
        chosen: list[tuple[Template, str]] = []
        for i, t in enumerate(templates):
            probes = [list(p) for p in t.probes]
            calls = probes + [t.args(rng) for _ in range(6)]
            visible[t.name] = [(c, t.ref(*c)) for c in [*probes, *calls[-2:]]]
            hidden[t.name] = calls
            expected[t.name] = [normalize(t.ref(*c)) for c in calls]
            chosen.append((t, rng.choice(t.bugs) if i in buggy else t.body))
        files: list[FileSpec] = [
            file("app/__init__.py", ""),
            file(f"app/{module}.py", _source(chosen)),
            file("tests/__init__.py", ""),
            file(f"tests/test_{module}.py", _unit_tests(module, visible)),
        ]
        instruction = (
            f"The unit tests in /work/tests fail. Fix the code in /work/app/{module}.py so that "
            "`python3 -m unittest` (run in /work) passes. Do not change the tests; the functions "
            "must behave correctly in general, not only for the tested values."
        )
        inject = {f"tests/test_{module}.py": _unit_tests(module, visible)}
        command = python_check(DRIVER, f"app.{module}", json.dumps(hidden))
        checks: list[tuple[str, str, Any, bool]] = [
            (
                f"{t.name} {'fixed' if i in buggy else 'still right'}",
                t.name,
                expected[t.name],
                i not in buggy,
            )
            for i, t in enumerate(templates)
        ]
        checks.append(("unit tests pass", "unit_tests", True, True))
        tests = [exec_json(n, command, inject, key, v, gate) for n, key, v, gate in checks]
        path = f"app/{module}.py"
        gold = [
            run("python3 -m unittest 2>&1 | tail -n 20"),
            read(path),
            read(f"tests/test_{module}.py"),
        ]
        fixes = [(t, body) for i, (t, body) in enumerate(chosen) if i in buggy]
        # The first fix rewrites the module; each other one is an edit of it.
        first = fixes[0][0]
        gold.append(write(path, _source([(t, t.body if t is first else b) for t, b in chosen])))
        for t, body in fixes[1:]:
            wrong = f"def {t.name}({t.params}):\n    {body}\n"
            right = f"def {t.name}({t.params}):\n    {t.body}\n"
            gold.append(python(REPLACE.format(path=path, old=wrong, new=right)))
        gold.append(run("python3 -m unittest"))
        shape = [f"{len(chosen)} functions", *(f"fix:{t.name}" for t, _ in fixes)]
        return Draft(
            instruction=instruction,
            files=files,
            gold=gold,
            shape=shape,
            tests=tests,
            knobs={"functions": n_funcs, "bugs": n_bugs},
            goals=["python-fix"],
        )
