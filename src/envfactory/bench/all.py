"""``envfactory bench --all``: every section that runs on this machine
(:data:`envfactory.bench.sections.SECTIONS` with ``in_all``; calibration, hours of a real
model, is not one), in one JSON document, with the load average read before and after each
section and the date.

A section whose runtime is missing here (no sandbox, no browser, no tau2 data, an extra not
installed) is ``skipped`` with the reason; one that raises is ``failed`` with the error; the
others run. Sizes are each section's own defaults, so its figures are those of
``envfactory bench SECTION``; ``quick`` shrinks every section to seconds, to check the
document's shape, not to quote. A full run takes about 10-15 minutes on a quiet 2-core
machine.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from envfactory.bench.sections import SECTIONS, Unavailable
from envfactory.contract.errors import EnvironmentUnavailable

#: The sections of ``--all``, in the order they run.
ALL = tuple(name for name, section in SECTIONS.items() if section.in_all)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def run_section(name: str, quick: bool = False) -> dict[str, Any]:
    """One section: its status (ok, skipped, failed), the load average before and after,
    its seconds, and its result (or the reason, or the error)."""
    section = SECTIONS[name]
    out: dict[str, Any] = {"status": "ok", "started": _now(), "load_avg_before": _load()}
    t0 = time.perf_counter()
    try:
        out["result"] = section(**(section.quick if quick else {}))
    except (Unavailable, EnvironmentUnavailable) as exc:
        out |= {"status": "skipped", "reason": str(exc)}
    except Exception as exc:  # one section's failure is reported, the others still run
        out |= {"status": "failed", "error": f"{type(exc).__name__}: {exc}"[:2000]}
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["load_avg_after"] = _load()
    return out


def run_all(
    only: Iterable[str] | None = None,
    quick: bool = False,
    on_section: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every section of :data:`ALL` (or those in ``only``, in the usual order) as one JSON
    document. ``load_avg_*`` are the 1-, 5- and 15-minute load averages (``os.getloadavg()``)."""
    wanted = list(ALL) if only is None else list(only)
    unknown = [s for s in wanted if s not in SECTIONS]
    if unknown:
        raise ValueError(f"unknown sections {unknown}; sections are {', '.join(SECTIONS)}")
    doc: dict[str, Any] = {
        "date": _now(),
        "quick": quick,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "executable": sys.executable,
        },
        "load_avg_start": _load(),
        "sections": {},
    }
    t0 = time.perf_counter()
    for name in SECTIONS:
        if name in wanted:
            if on_section is not None:
                on_section(name)
            doc["sections"][name] = run_section(name, quick)
    doc["seconds"] = round(time.perf_counter() - t0, 1)
    doc["load_avg_end"] = _load()
    return doc
