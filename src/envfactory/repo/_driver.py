# mypy: ignore-errors
"""The test driver of repository worlds: run inline, never from the agent's tree.

Its source text is passed to ``/usr/bin/python3 -I -S -c`` (isolated: no script directory,
working directory, ``site`` or ``PYTHON*`` variables on the path) with three arguments: the
path of a JSON spec, a nonce and the folder compiled modules are read from (or, for the run
that makes them, written to; empty: beside their sources, as usual). The test runner comes
from ``/opt/runner`` (read-only), first on the path; the project's import root comes last,
so nothing in the project shadows the runner or the standard library. Modes:

- ``run``: run the selected tests once, print ``RESULT-<nonce> {json}``: the count of tests
  that passed and the ids (with short messages) of those that did not, or were not found;
- ``trace``: run every test once, recording which lines of the project's source each test
  executes, and write outcomes and lines to ``spec["out"]``;
- ``verify``: collect once, then for each job fork, patch one or more functions' code (a
  mutation) into the imported modules, run the job's tests, and report to ``spec["out"]``.
"""

import sys

sys.pycache_prefix = sys.argv[3] or None  # before any import it serves
sys.path[:0] = ["/opt/runner"]
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402

import pytest  # noqa: E402
from _pytest.runner import runtestprotocol  # noqa: E402

SPEC = json.load(open(sys.argv[1]))  # noqa: SIM115
NONCE = sys.argv[2]
sys.path.append(SPEC["path"])
_ADDR = re.compile(r"0x[0-9a-fA-F]{4,}")
_WHERE = re.compile(r"(/work/)?[\w./-]+\.py:\d+")


def _message(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()][:4]
    text = _WHERE.sub("<file>", _ADDR.sub("0x...", "\n".join(lines)))
    return text[:400]


def _outcome(reports):
    """'passed', 'skipped' or 'failed' and a message, over a test's phases."""
    out, why = "passed", ""
    for rep in reports:
        if rep.failed:
            return "failed", _message(rep)
        if rep.skipped:
            out = "skipped"
    return out, why


def _run(items):
    results = {}
    for i, item in enumerate(items):
        nxt = items[i + 1] if i + 1 < len(items) else None
        results[item.nodeid] = _outcome(runtestprotocol(item, log=False, nextitem=nxt))
    return results


def _resolve(module, qualname):
    obj = module
    for part in qualname.split("."):
        found = obj.__dict__.get(part) if hasattr(obj, "__dict__") else None
        if found is None:
            found = getattr(obj, part, None)
        if found is None:
            return None
        obj = found
    for attr in ("__func__", "fget"):
        obj = getattr(obj, attr, obj)
    while getattr(obj, "__code__", None) is None and hasattr(obj, "__wrapped__"):
        obj = obj.__wrapped__
    code = getattr(obj, "__code__", None)
    if code is None:
        return None
    while code.co_qualname != qualname and hasattr(obj, "__wrapped__"):
        obj = obj.__wrapped__
        code = getattr(obj, "__code__", None)
        if code is None:
            return None
    return obj if code.co_qualname == qualname else None


def _find_code(code, qualname):
    for const in code.co_consts:
        if hasattr(const, "co_qualname"):
            if const.co_qualname == qualname:
                return const
            found = _find_code(const, qualname)
            if found is not None:
                return found
    return None


def _patch(patch):
    import importlib

    module = sys.modules.get(patch["module"]) or importlib.import_module(patch["module"])
    func = _resolve(module, patch["qualname"])
    if func is None:
        return f"cannot find {patch['qualname']}"
    code = _find_code(
        compile(patch["source"], func.__code__.co_filename, "exec"), patch["qualname"]
    )
    if code is None or len(code.co_freevars) != len(func.__code__.co_freevars):
        return f"cannot patch {patch['qualname']}"
    func.__code__ = code
    default = patch.get("default")
    if default and "index" in default:
        values = list(func.__defaults__ or ())
        values[default["index"]] = default["value"]
        func.__defaults__ = tuple(values)
    elif default and "kw" in default:
        func.__kwdefaults__ = {**(func.__kwdefaults__ or {}), default["kw"]: default["value"]}
    return None


class Plugin:
    def __init__(self):
        self.items = []
        self.results = {}

    def pytest_collection_modifyitems(self, session, config, items):
        self.items = list(items)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        if SPEC["mode"] == "run":
            want = set(SPEC["select"])
            self.results = _run([i for i in self.items if i.nodeid in want])
        elif SPEC["mode"] == "trace":
            self.results = self._trace()
        else:
            self.results = self._verify()
        return True

    def _trace(self):
        files = set(SPEC["files"])
        out = {}
        for i, item in enumerate(self.items):
            lines = set()

            def local(frame, event, arg, lines=lines):
                if event == "line":
                    lines.add((frame.f_code.co_filename, frame.f_lineno))
                return local

            def glob(frame, event, arg, lines=lines):
                if frame.f_code.co_filename in files:
                    lines.add((frame.f_code.co_filename, frame.f_lineno))
                    return local
                return None

            nxt = self.items[i + 1] if i + 1 < len(self.items) else None
            sys.settrace(glob)
            try:
                reports = runtestprotocol(item, log=False, nextitem=nxt)
            finally:
                sys.settrace(None)
            by_file = {}
            for f, n in lines:
                by_file.setdefault(f, []).append(n)
            out[item.nodeid] = {"outcome": _outcome(reports), "lines": by_file}
        return out

    def _verify(self):
        by_id = {i.nodeid: i for i in self.items}
        out = {}
        for job in SPEC["jobs"]:
            items = [by_id[t] for t in job["tests"] if t in by_id]
            missing = [t for t in job["tests"] if t not in by_id]
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                try:
                    why = None
                    for p in job["patches"]:
                        why = why or _patch(p)
                    res = {"error": why} if why else {"results": _run(items)}
                except BaseException as exc:
                    res = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                os.write(w, json.dumps(res).encode())
                os._exit(0)
            os.close(w)
            data, deadline = b"", job.get("timeout", 20)
            while True:
                ready, _, _ = select.select([r], [], [], deadline)
                if not ready:
                    os.kill(pid, signal.SIGKILL)
                    data = json.dumps({"error": "timeout"}).encode()
                    break
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    break
                data += chunk
            os.close(r)
            os.waitpid(pid, 0)
            try:
                res = json.loads(data or b'{"error": "crashed"}')
            except ValueError:
                res = {"error": "crashed"}
            res["missing"] = missing
            out[job["id"]] = res
        return out


plugin = Plugin()
args = ["-qq", "-p", "no:cacheprovider", "-o", "addopts=", "--rootdir", "/work"]
args += ["-W", "ignore::DeprecationWarning", *SPEC["files_to_collect"]]
code = pytest.main(args, plugins=[plugin])
if SPEC["mode"] == "run":
    found = plugin.results
    bad = {t: found.get(t, ("missing", "")) for t in SPEC["select"]}
    bad = sorted(t for t, v in bad.items() if v[0] != "passed")
    doc = {"passed": len(SPEC["select"]) - len(bad), "not_passed": bad[:300], "failed": len(bad)}
    print(f"RESULT-{NONCE} " + json.dumps(doc), flush=True)
else:
    with open(SPEC["out"], "w") as f:
        json.dump(plugin.results, f)
    print(f"RESULT-{NONCE} done", flush=True)
