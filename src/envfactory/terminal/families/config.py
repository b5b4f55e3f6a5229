"""A config file edit with validation: change, add and remove settings in INI, JSON or TOML."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from envfactory.contract.tasks import PlanStep
from envfactory.terminal.checks import CompletionTest, python_check
from envfactory.terminal.family import WORDS, Draft, Family, python, read, run, write
from envfactory.terminal.fs import file

Doc = dict[str, dict[str, Any]]
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
VALIDATOR = '''"""Checks a config file: it parses, and known settings have valid values."""
import configparser, json, sys, tomllib

path = sys.argv[1]
text = open(path).read()
if path.endswith(".json"):
    doc = json.loads(text)
elif path.endswith(".toml"):
    doc = tomllib.loads(text)
else:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    doc = {s: dict(parser[s]) for s in parser.sections()}
errors = []
for sec, key, lo, hi in [("server", "port", 1, 65535), ("server", "workers", 1, 64),
                         ("database", "pool_size", 1, 100)]:
    v = doc.get(sec, {}).get(key)
    if v is None:
        continue
    try:
        ok = not isinstance(v, bool) and lo <= int(v) <= hi
    except (TypeError, ValueError):
        ok = False
    if not ok:
        errors.append(f"{sec}.{key} must be an integer from {lo} to {hi}")
level = doc.get("logging", {}).get("level")
if level is not None and str(level) not in ("DEBUG", "INFO", "WARNING", "ERROR"):
    errors.append("logging.level must be DEBUG, INFO, WARNING or ERROR")
print("\\n".join(errors) or "ok")
sys.exit(1 if errors else 0)
'''


def _base(rng: random.Random) -> Doc:
    return {
        "server": {
            "host": rng.choice(["0.0.0.0", "127.0.0.1", "localhost"]),
            "port": rng.choice([8000, 8080, 5000, 3000]),
            "workers": rng.randint(2, 8),
        },
        "database": {
            "url": f"postgres://db.internal/{rng.choice(WORDS)}",
            "pool_size": rng.randint(5, 20),
            "legacy_mode": rng.choice([True, False]),
        },
        "logging": {"level": rng.choice(LEVELS[:2]), "file": f"/var/log/{rng.choice(WORDS)}.log"},
        "features": {f"{w}_enabled": rng.choice([True, False]) for w in rng.sample(WORDS, 2)},
    }


def _ini_value(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def render(doc: Doc, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(doc, indent=2) + "\n"
    out = []
    for sec, values in doc.items():
        out.append(f"[{sec}]")
        for k, v in values.items():
            if fmt == "ini":
                out.append(f"{k} = {_ini_value(v)}")
            else:
                out.append(f"{k} = {json.dumps(v)}")
        out.append("")
    return "\n".join(out)


def _expect(v: Any, fmt: str) -> Any:
    return _ini_value(v) if fmt == "ini" else v


class Editor:
    """Gold edit steps, one per change: sed for INI and TOML lines, Python for JSON."""

    def __init__(self, path: str, fmt: str) -> None:
        self.path, self.fmt = path, fmt

    def _value(self, v: Any) -> str:
        return _ini_value(v) if self.fmt == "ini" else json.dumps(v)

    def _json(self, change: str) -> PlanStep:
        return python(
            f"import json\nd = json.load(open({self.path!r}))\n{change}\n"
            f"json.dump(d, open({self.path!r}, 'w'), indent=2)"
        )

    def set(self, sec: str, key: str, v: Any) -> PlanStep:
        if self.fmt == "json":
            return self._json(f"d[{sec!r}][{key!r}] = {v!r}")
        return run(f"sed -i 's/^{key} = .*/{key} = {self._value(v)}/' {self.path}")

    def add(self, sec: str, values: dict[str, Any]) -> PlanStep:
        if self.fmt == "json":
            return self._json(f"d[{sec!r}] = {values!r}")
        lines = "".join(f"{k} = {self._value(v)}\\n" for k, v in values.items())
        return run(f"printf '\\n[{sec}]\\n{lines}' >> {self.path}")

    def remove(self, sec: str, key: str) -> PlanStep:
        if self.fmt == "json":
            return self._json(f"del d[{sec!r}][{key!r}]")
        return run(f"sed -i '/^{key} = /d' {self.path}")


class ConfigEdit(Family):
    id = "term-config-edit"
    name = "A config file edit with validation"
    description = "Change, add and remove settings in an INI, JSON or TOML file; keep it valid."

    def generate(self, rng: random.Random, difficulty: int) -> Draft:
        fmt = rng.choice(["ini", "json", "toml"])
        folder = rng.choice(["config", "etc", "conf", "settings"])
        path = f"{folder}/{rng.choice(['app', 'server', 'service', 'worker', 'api'])}.{fmt}"
        edit = Editor(path, fmt)
        edits: list[PlanStep] = []
        doc = _base(rng)
        new: Doc = {s: dict(v) for s, v in doc.items()}
        asks: list[str] = []
        changed: dict[str, Any] = {}
        removed: list[str] = []
        settable: list[tuple[str, str, Callable[[], Any]]] = [
            ("server", "port", lambda: rng.choice([8443, 9000, 9090, 7070])),
            ("server", "workers", lambda: rng.randint(9, 32)),
            ("database", "pool_size", lambda: rng.randint(25, 60)),
            ("logging", "level", lambda: rng.choice(LEVELS[2:])),
            ("server", "host", lambda: f"10.0.{rng.randint(0, 9)}.{rng.randint(1, 254)}"),
        ]
        for sec, key, value in rng.sample(settable, min(difficulty, 3)):
            v = value()
            new[sec][key] = v
            changed[f"{sec}.{key}"] = v
            asks.append(f"set {key} in [{sec}] to {json.dumps(v)}")
            edits.append(edit.set(sec, key, v))
            if len(edits) == 1:  # the gold writes the file with this change, then edits it
                edits[0] = write(path, render(new, fmt))
        if difficulty >= 3:
            w = rng.choice(WORDS)
            new["cache"] = {"backend": f"redis-{w}", "ttl": rng.randint(60, 900)}
            changed["cache.backend"] = new["cache"]["backend"]
            changed["cache.ttl"] = new["cache"]["ttl"]
            asks.append(
                f'add a section [cache] with backend = "{new["cache"]["backend"]}" and '
                f"ttl = {new['cache']['ttl']} (an integer)"
            )
            edits.append(edit.add("cache", new["cache"]))
        if difficulty >= 4:
            del new["database"]["legacy_mode"]
            removed.append("database.legacy_mode")
            asks.append("remove the deprecated setting legacy_mode from [database]")
            edits.append(edit.remove("database", "legacy_mode"))
        if difficulty >= 5:
            flag = sorted(doc["features"])[0]
            new["features"][flag] = not doc["features"][flag]
            changed[f"features.{flag}"] = new["features"][flag]
            asks.append(f"turn {flag} in [features] {'on' if new['features'][flag] else 'off'}")
            edits.append(edit.set("features", flag, new["features"][flag]))
        instruction = (
            f"Edit /work/{path}: " + "; ".join(asks) + ". Keep every other setting as it is, and "
            f"keep the file valid {fmt.upper()}: `python3 tools/validate.py {path}` must pass."
        )
        kept = {
            f"{s}.{k}": _expect(v, fmt)
            for s, vals in doc.items()
            for k, v in vals.items()
            if f"{s}.{k}" not in changed and f"{s}.{k}" not in removed
        }
        tests = [
            CompletionTest(
                name=f"{dotted} set",
                kind="config",
                args={"path": path, "format": fmt, "values": {dotted: _expect(v, fmt)}},
            )
            for dotted, v in changed.items()
        ]
        if removed:
            tests.append(
                CompletionTest(
                    name="deprecated setting removed",
                    kind="config",
                    args={"path": path, "format": fmt, "absent": removed},
                )
            )
        tests.append(
            CompletionTest(
                name="other settings kept",
                kind="config",
                args={"path": path, "format": fmt, "values": kept},
                gate=True,
            )
        )
        tests.append(
            CompletionTest(
                name="validator passes",
                kind="exec",
                args={
                    "command": python_check(VALIDATOR, path),
                    "files": {},
                    "expect": "exit0",
                },
                gate=True,
            )
        )
        return Draft(
            instruction=instruction,
            files=[file(path, render(doc, fmt)), file("tools/validate.py", VALIDATOR)],
            gold=[
                read(path),
                run(f"python3 tools/validate.py {path}"),
                *edits,
                run(f"python3 tools/validate.py {path}"),
            ],
            shape=[fmt, *changed, *removed],
            tests=tests,
            knobs={"changes": len(asks)},
            goals=[fmt],
        )
