"""Completion tests: data that says what the finished working directory must hold.

Each test is judged on the host from a snapshot (nothing the agent wrote is executed on the
host); ``exec`` tests run a command in a fresh sandbox over a copy of the final files. A
check's own program never lives in that copy: :func:`python_check` passes it inline to an
isolated system interpreter (no script directory, working directory, ``site`` or ``PYTHON*``
variables on its path), so no file the agent planted can stand in for a module it imports. A
test is a rubric item: a score, or a gate (something that must stay true); a test that
``requires`` others passes only when they pass too (a source emptied counts only once its
files arrived). Every test fails when what it inspects is absent (a file, a folder, a
repository): no test can pass on a tree the agent emptied.
"""

from __future__ import annotations

import configparser
import io
import json
import math
import shlex
import tarfile
import tomllib
import zipfile
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envfactory.contract.verdict import RubricItem
from envfactory.terminal.fs import Tree, files_under, sha
from envfactory.terminal.sandbox import RunResult

TestKind = Literal["files", "dir_files", "modes", "json", "csv", "archive", "config", "exec"]
ExecRunner = Callable[[str, dict[str, str]], RunResult]
Outcome = tuple[bool, str]


class CompletionTest(BaseModel):
    """One check of the final files. ``gate`` tests must hold for any reward at all."""

    model_config = ConfigDict(frozen=True)

    name: str
    kind: TestKind
    args: dict[str, Any] = Field(default_factory=dict)
    gate: bool = False
    requires: list[str] = Field(default_factory=list)


def _data(tree: Tree, path: str) -> bytes | None:
    """The bytes of a regular file of the tree (None when absent, not a file, or too big)."""
    e = tree.get(path)
    return e.data if e is not None and e.kind == "file" else None


def _lookup(doc: Any, dotted: str) -> Any:
    for k in dotted.split("."):
        doc = doc.get(k) if isinstance(doc, dict) else None
    return doc


PYTHON = "/usr/bin/python3 -I -S"
"""The checks' interpreter: the system's, isolated from the working tree and environment."""


def python_check(script: str, *args: str) -> str:
    """A shell command that runs ``script`` (given inline, never as a file in the agent's
    tree) with :data:`PYTHON` and ``args``."""
    return " ".join([PYTHON, "-c", shlex.quote(script), *map(shlex.quote, args)])


def exec_json(
    name: str, command: str, files: dict[str, str], key: str, value: Any, gate: bool = False
) -> CompletionTest:
    """A test on one key of the ``RESULT {json}`` line a check command prints."""
    args = {"command": command, "files": files, "expect": "json", "key": key, "value": value}
    return CompletionTest(name=name, kind="exec", args=args, gate=gate)


def _same(a: Any, b: Any, tol: float = 1e-6) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=0, abs_tol=tol)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, tol) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], tol) for k in a)
    return bool(a == b)


def _files(tree: Tree, args: dict[str, Any]) -> Outcome:
    for path, want in args["files"].items():
        data = _data(tree, path)
        if data is None:
            return False, f"{path} is missing"
        got = data.decode("utf-8", "replace")
        if got.rstrip("\n") != want.rstrip("\n"):
            return False, f"{path} does not hold what it should"
    return True, f"{len(args['files'])} file(s) as required"


def _dir_files(tree: Tree, args: dict[str, Any]) -> Outcome:
    folder = tree.get(args["dir"])
    if folder is None or folder.kind != "dir":
        return False, f"{args['dir']}/ is missing"
    want: dict[str, str] = args["files"]
    got = {p: e for p, e in files_under(tree, args["dir"])}
    if set(got) != set(want):
        missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
        what = f"missing {missing[:3]}" if missing else f"unexpected {extra[:3]}"
        return False, f"{args['dir']}/ is not as required: {what}"
    for p, digest in want.items():
        data = got[p].data
        if data is None or sha(data) != digest:
            return False, f"{args['dir']}/{p} has the wrong content"
    return True, f"{args['dir']}/ holds exactly the {len(want)} expected files"


def _modes(tree: Tree, args: dict[str, Any]) -> Outcome:
    for path, mode in args["modes"].items():
        e = tree.get(path)
        if e is None:
            return False, f"{path} is missing"
        if e.mode != mode:
            return False, f"{path} has mode {e.mode:o}, not {mode:o}"
    return True, f"{len(args['modes'])} mode(s) as required"


def _load_json(tree: Tree, path: str) -> Any:
    data = _data(tree, path)
    if data is None:
        raise ValueError(f"{path} is missing")
    return json.loads(data)


def _json(tree: Tree, args: dict[str, Any]) -> Outcome:
    try:
        doc = _load_json(tree, args["path"])
    except ValueError as exc:
        return False, f"{args['path']} is not valid JSON: {str(exc)[:80]}"
    for k in args.get("key", []):
        if not isinstance(doc, dict) or k not in doc:
            return False, f"{args['path']} has no {k!r}"
        doc = doc[k]
    ok = _same(doc, args["value"], args.get("tol", 1e-6))
    where = ".".join(args.get("key", [])) or "the document"
    return ok, f"{where} is {'right' if ok else 'wrong'}"


def _cell(v: str) -> Any:
    try:
        return round(float(v), 6)
    except ValueError:
        return v.strip()


def _csv(tree: Tree, args: dict[str, Any]) -> Outcome:
    import csv

    data = _data(tree, args["path"])
    if data is None:
        return False, f"{args['path']} is missing"
    rows = [r for r in csv.reader(io.StringIO(data.decode("utf-8", "replace"))) if r]
    if not rows or [c.strip() for c in rows[0]] != args["header"]:
        return False, f"{args['path']} does not have the header {','.join(args['header'])}"
    got = [[_cell(c) for c in r] for r in rows[1:]]
    want = [[_cell(str(c)) for c in r] for r in args["rows"]]
    if not args.get("ordered", True):
        got, want = sorted(got, key=repr), sorted(want, key=repr)
    ok = got == want
    return ok, f"{len(got)} rows, {'as' if ok else 'not as'} required ({len(want)} expected)"


def _members(data: bytes, fmt: str, limit: int = 1 << 22) -> dict[str, str]:
    out = {}
    if fmt == "zip":
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for info in z.infolist():
                if not info.is_dir():
                    with z.open(info) as f:
                        out[info.filename.removeprefix("./")] = sha(f.read(limit))
        return out
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as t:
        for m in t.getmembers():
            if m.isfile():
                member = t.extractfile(m)
                if member is not None:
                    out[m.name.removeprefix("./")] = sha(member.read(limit))
    return out


def _archive(tree: Tree, args: dict[str, Any]) -> Outcome:
    data = _data(tree, args["path"])
    if data is None:
        return False, f"{args['path']} is missing"
    try:
        got = _members(data, args["format"])
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        return False, f"{args['path']} is not a valid {args['format']} archive ({exc})"[:200]
    want: dict[str, str] = args["files"]
    if set(got) != set(want):
        diff = sorted(set(want) ^ set(got))
        return False, f"{args['path']} members differ: {diff[:3]}"
    bad = [n for n in want if got[n] != want[n]]
    if bad:
        return False, f"{args['path']}: {bad[0]} has the wrong content"
    return True, f"{args['path']} holds exactly the {len(want)} expected files"


def parse_config(data: bytes, fmt: str) -> dict[str, Any]:
    """A config document as nested dicts (ini values stay strings)."""
    text = data.decode("utf-8", "replace")
    if fmt == "json":
        doc = json.loads(text)
        if not isinstance(doc, dict):
            raise ValueError("not an object")
        return doc
    if fmt == "toml":
        return tomllib.loads(text)
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    return {s: dict(parser[s]) for s in parser.sections()}


def _config(tree: Tree, args: dict[str, Any]) -> Outcome:
    data = _data(tree, args["path"])
    if data is None:
        return False, f"{args['path']} is missing"
    try:
        doc = parse_config(data, args["format"])
    except (ValueError, configparser.Error, tomllib.TOMLDecodeError) as exc:
        return False, f"{args['path']} does not parse: {str(exc)[:100]}"
    for dotted, want in args.get("values", {}).items():
        node = _lookup(doc, dotted)
        if node is None or not _same(node, want):
            return False, f"{dotted} is not as required"
    for dotted in args.get("absent", []):
        if _lookup(doc, dotted) is not None:
            return False, f"{dotted} is still set"
    return True, "settings as required"


def _exec(result: RunResult, args: dict[str, Any]) -> Outcome:
    if result.limit:
        return False, f"the check command hit its {result.limit} limit"
    expect = args.get("expect", "exit0")
    if expect == "exit0":
        return result.exit_code == 0, f"exit code {result.exit_code}"
    if expect == "stdout":
        ok = result.output.strip() == str(args["stdout"]).strip()
        return ok, "output as required" if ok else "output is not as required"
    marker = args.get("marker", "RESULT ")
    lines = [ln for ln in result.output.splitlines() if ln.startswith(marker)]
    try:
        doc = json.loads(lines[-1][len(marker) :])
    except (IndexError, ValueError):
        return False, "the check produced no result (it crashed or was stopped)"
    got = doc.get(args["key"]) if isinstance(doc, dict) else None
    ok = _same(got, args["value"])
    return ok, f"{args['key']}: {'right' if ok else 'wrong'} results"


_STATIC: dict[str, Callable[[Tree, dict[str, Any]], Outcome]] = {
    "files": _files,
    "dir_files": _dir_files,
    "modes": _modes,
    "json": _json,
    "csv": _csv,
    "archive": _archive,
    "config": _config,
}


def judge(test: CompletionTest, tree: Tree, runner: ExecRunner | None) -> Outcome:
    """(passed, why). ``exec`` tests need a runner: without one (nothing changed since the
    start, where every score test is known to fail) they are not run and do not pass."""
    if test.kind == "exec":
        if runner is None:
            return False, "not run: the files are as they were at the start"
        return _exec(runner(test.args["command"], test.args.get("files", {})), test.args)
    return _STATIC[test.kind](tree, test.args)


def static_passes(tests: list[CompletionTest], tree: Tree) -> list[str]:
    """Names of score tests (not exec ones) that already pass on ``tree``."""
    return [
        item.name
        for item, t in zip(rubric(tests, tree, None), tests, strict=True)
        if item.kind == "score" and t.kind != "exec" and item.score == 1.0
    ]


def rubric(tests: list[CompletionTest], tree: Tree, runner: ExecRunner | None) -> list[RubricItem]:
    """One rubric item per test."""
    items = []
    passed: dict[str, bool] = {}
    for t in tests:
        ok, why = judge(t, tree, runner)
        missing = [name for name in t.requires if not passed.get(name, False)]
        if ok and missing:
            ok, why = False, f"{why}, but {missing[0]} does not hold"
        passed[t.name] = ok
        items.append(
            RubricItem(
                name=t.name,
                kind="gate" if t.gate else "score",
                weight=0.0 if t.gate else 1.0,
                score=1.0 if ok else 0.0,
                reason=why,
            )
        )
    return items
