"""A training run beside the rollout runs, read while it trains.

``envfactory train --save DIR`` writes ``DIR/run.json`` once the model was judged before
training (the settings and ``before``), a checkpoint ``DIR/checkpoints/checkpoint-N`` every
``--checkpoint-every`` steps (TRL's ``trainer_state.json`` in it logs every step), and, when the
run ends, its result ``OUT/NAME.json`` (``before`` and ``after``, per world, the reward curve).
The dashboard takes a training run as its save folder (the result is found in it or in the
folder above it, where ``--out`` puts it beside ``--save``, by the save folder the result
names) or as the result file itself. Every read looks again at what changed: a new checkpoint
moves the step and the curve, the result adds ``after``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from envfactory.contract.errors import EnvFactoryError
from envfactory.integrations.embedded import EMBEDDED_NAME
from envfactory.training.drawn import checkpoint_step
from envfactory.training.grpo_cpu import CHECKPOINTS, REWARD_LOG, RUN_FILE
from envfactory.training.judge import Held, Judged

REWARD, REWARD_STD = f"{REWARD_LOG}/mean", f"{REWARD_LOG}/std"  # grpo_cpu's curve is the mean
STATE = "trainer_state.json"  # in each checkpoint: TRL's log of every step
RESULT_KEYS = frozenset({"curve", "before", "after", "settings"})
RESULT_MAX = 4 << 20  # bytes: a result is far smaller (a tokenizer.json beside it is not)


class NotARun(EnvFactoryError):
    """A path given to the dashboard is neither a trajectory store nor a training run."""


def _json(path: Path) -> Any:
    """The parsed file; None when it is missing or not (yet) whole JSON."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def is_result(value: Any) -> bool:
    """A training result, as ``envfactory train`` writes ``OUT/NAME.json``."""
    return isinstance(value, dict) and value.keys() >= RESULT_KEYS


def is_save_folder(folder: Path) -> bool:
    """A training's save folder: its checkpoints, or a ``run.json`` with settings and
    ``before`` (a rollout store's ``run.json`` names groups and a policy)."""
    if (folder / CHECKPOINTS).is_dir():
        return True
    start = _json(folder / RUN_FILE)
    return isinstance(start, dict) and {"settings", "before"} <= start.keys()


def is_training(path: Path) -> bool:
    """Whether ``path`` is a training run (else a trajectory store); :class:`NotARun` for a
    JSON file that is not a training result."""
    if path.is_dir():
        return is_save_folder(path)
    if path.suffix == ".json":
        if is_result(_json(path)):
            return True
        raise NotARun(
            f"{path}: neither a trajectory store nor a training run (a training run is "
            "train's --save folder or its result OUT/NAME.json)"
        )
    return False


def model_of(start: Any) -> str | None:
    """The model a run started from, by its ``run.json``: a folder or file it was given, or the
    embedded model (no path)."""
    if not isinstance(start, dict):
        return None
    return start.get("model_path") or EMBEDDED_NAME


def names_folder(saved: Any, folder: Path) -> bool:
    """Whether ``saved`` (a result's save folder, as given to ``train``, maybe relative to
    where it ran) is ``folder``."""
    if not isinstance(saved, str) or not saved:
        return False
    given, real = Path(saved), folder.resolve()
    return given.resolve() == real or (
        not given.is_absolute() and real.parts[-len(given.parts) :] == given.parts
    )


def _stamp(path: Path) -> tuple[int, int] | None:
    """When ``path`` last changed and its size; None when it is gone."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _held(value: Any) -> dict[str, Any]:
    """One held-out figure of a result, checked against the contract's type."""
    return Held.model_validate(value).model_dump(mode="json")


@dataclass
class TrainingReader:
    """One training run (a save folder and/or its result file), read again when it changes.
    Thread-safe."""

    name: str
    save: Path | None
    result: Path | None = None
    _seen: dict[Path, tuple[tuple[int, int], Any]] = field(default_factory=dict, repr=False)
    _other: dict[Path, tuple[int, int]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def open(cls, path: Path, name: str) -> TrainingReader:
        """A save folder, or a result file (its save folder read too, when it is found)."""
        if path.is_dir():
            return cls(name=name, save=path)
        saved = (_json(path) or {}).get("saved")
        found = [Path(saved), path.parent / Path(saved).name] if isinstance(saved, str) else []
        save = next((p for p in found if p.is_dir() and is_save_folder(p)), None)
        return cls(name=name, save=save, result=path)

    @property
    def path(self) -> Path:
        return self.save or self.result or Path()

    def _read(self, path: Path) -> Any:
        """``path`` parsed, read again only when its size or time changed; a file cut short
        mid-write is read again next time."""
        stamp = _stamp(path)
        if stamp is None:
            self._seen.pop(path, None)  # a checkpoint removed when the next one was saved
            return None
        seen = self._seen.get(path)
        if seen is not None and seen[0] == stamp:
            return seen[1]
        value = _json(path)
        if value is not None:
            self._seen[path] = (stamp, value)
        return value

    def _log(self) -> tuple[dict[str, Any] | None, Path | None]:
        """The newest checkpoint's trainer state that reads whole (a checkpoint being written
        has none yet), and its file."""
        if self.save is None:
            return None, None
        saved = (self.save / CHECKPOINTS).glob("checkpoint-*")
        for folder in sorted(saved, key=checkpoint_step, reverse=True):
            state = self._read(folder / STATE)
            if isinstance(state, dict) and isinstance(state.get("log_history"), list):
                return state, folder / STATE
        return None, None

    def _find_result(self) -> Path | None:
        """The result, once written: in the save folder or the one above, naming the folder."""
        if self.result is None and self.save is not None:
            for p in [*sorted(self.save.glob("*.json")), *sorted(self.save.parent.glob("*.json"))]:
                stamp = _stamp(p)
                if p.name == RUN_FILE or stamp is None or self._other.get(p) == stamp:
                    continue
                value: Any = _json(p) if stamp[1] < RESULT_MAX else None  # not the model's files
                if is_result(value) and names_folder(value.get("saved"), self.save):
                    self.result = p
                    break
                self._other[p] = stamp  # not this run's result: looked at again when it changes
        return self.result

    def view(self) -> dict[str, Any]:
        """What the dashboard shows: state, step of steps, the reward by step, before and
        (once the run ended) after, pooled and per world with 95% intervals."""
        with self._lock:
            start = self._read(self.save / RUN_FILE) if self.save else None
            state, state_file = self._log()
            found = self._find_result()
            result = self._read(found) if found else None
        files = [p for p in (self.save and self.save / RUN_FILE, state_file, found) if p]
        out: dict[str, Any] = {
            "name": self.name,
            "path": str(self.path),
            "save": str(self.save) if self.save else None,
            "result": str(found) if found else None,
            "updated": max((s[0] / 1e9 for p in files if (s := _stamp(p))), default=None),
        }
        try:
            return out | _figures(start, state, result)
        except (ValidationError, TypeError, KeyError, AttributeError, ValueError) as exc:
            what = "result" if is_result(result) else RUN_FILE
            error = f"its {what} does not read: {exc}"
            return out | UNREADABLE | {"error": error}


UNREADABLE: dict[str, Any] = {
    "state": "unreadable",
    "step": 0,
    "steps": 0,
    "train_worlds": [],
    "eval_worlds": [],
    "curve": [],
    **dict.fromkeys(("model", "before", "after", "separated", "minutes")),
}  # the keys of a readable run, so that a script reads every run alike


def _curve(state: dict[str, Any] | None, result: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Reward by step: TRL's log (with the spread, loss and time of each step), or the
    result's curve where there is no log as long (a run trained without a save folder)."""
    log = [h for h in (state or {}).get("log_history", []) if isinstance(h, dict) and REWARD in h]
    points = [
        {
            "step": int(h.get("step", i + 1)),
            "reward": float(h[REWARD]),
            "reward_std": h.get(REWARD_STD),
            "loss": h.get("loss"),
            "step_time": h.get("step_time"),
        }
        for i, h in enumerate(log)
    ]
    curve = (result or {}).get("curve", [])
    if len(curve) > len(points):
        return [{"step": i + 1, "reward": float(r)} for i, r in enumerate(curve)]
    return points


def _figures(
    start: dict[str, Any] | None, state: dict[str, Any] | None, result: dict[str, Any] | None
) -> dict[str, Any]:
    """The run's figures from what it wrote so far: ``before`` from ``run.json`` while it
    trains, both from the result once it ended."""
    settings = (result or start or {}).get("settings") or {}
    steps = int(settings.get("steps", 0))
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    ended: dict[str, Any] = {"separated": None, "minutes": None}
    if result is not None:
        pairs = result["per_world"].items()
        before, after = (
            {"pooled": _held(result[k]), "per_world": {w: _held(p[k]) for w, p in pairs}}
            for k in ("before", "after")
        )
        ended = {"separated": bool(result["separated"]), "minutes": result.get("minutes")}
        step = steps
    else:
        if start is not None:
            before = Judged.model_validate(start["before"]).model_dump(mode="json")
        steps = int((state or {}).get("max_steps") or steps)  # a resumed run may plan more
        step = int((state or {}).get("global_step", 0))
    return {
        "state": "ended" if result else "training" if start else "starting",
        "step": step,
        "steps": steps,
        "model": (result or {}).get("model") or model_of(start),
        "train_worlds": settings.get("worlds", []),
        "eval_worlds": settings.get("eval_worlds") or settings.get("worlds", []),
        "curve": _curve(state, result),
        "before": before,
        "after": after,
        **ended,
        "error": None,
    }
