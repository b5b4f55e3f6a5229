"""Listing a library: ``python -m envfactory.bench.library --worlds 10000``.

Saves a few synthesised worlds, copies their files under new names up to ``--worlds`` world
files, and times ``envfactory envs --library DIR --json`` as a process, beside ``envfactory envs
--json`` alone (the built-in worlds, which it builds); prints JSON with the load average.
``--saved-before`` drops the listing line from the saved files, as files saved before it existed
lack it, so every world is built to be listed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

from envfactory.registry.worldfile import FORMAT, save_world
from envfactory.synth.compose import synthesize


def make_library(folder: Path, worlds: int, distinct: int, saved_before: bool = False) -> float:
    """``worlds`` world files in ``folder``: ``distinct`` saved ones, then copies of them;
    returns the median seconds ``save_world`` took for one."""
    saved, seconds = [], []
    for i in range(distinct):
        domain = synthesize(i).domain
        started = time.perf_counter()
        saved.append(save_world(folder, domain, {"kind": "synth"}))
        seconds.append(time.perf_counter() - started)
    for path in saved if saved_before else []:
        rest = path.read_text().split("\n", 1)[1]
        path.write_text(f'{{"format":"{FORMAT}",{rest}')
    for i in range(worlds - distinct):
        source = saved[i % distinct]
        shutil.copyfile(source, folder / f"{source.stem}-copy{i:05d}.json")
    return median(seconds)


def timed_envs(*args: str) -> tuple[float, int]:
    """Seconds ``envfactory envs --json ARGS`` took as a process, and how many worlds it listed."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "envfactory", "envs", "--json", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"envfactory envs failed: {done.stderr[-2000:]}")
    return round(seconds, 2), len(json.loads(done.stdout))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", type=int, default=10_000, help="World files in the library.")
    parser.add_argument("--distinct", type=int, default=5, help="Worlds saved; the rest copies.")
    parser.add_argument(
        "--saved-before", action="store_true", help="Files without the listing line."
    )
    args = parser.parse_args(argv)
    if not 1 <= args.distinct <= args.worlds:
        parser.error("--distinct must be between 1 and --worlds")
    with tempfile.TemporaryDirectory(prefix="envfactory-library-") as tmp:
        folder = Path(tmp)
        save_seconds = make_library(folder, args.worlds, args.distinct, args.saved_before)
        builtin_seconds, builtin = timed_envs()
        seconds, listed = timed_envs("--library", str(folder))
    report = {
        "worlds": args.worlds,
        "saved_before": args.saved_before,
        "listed": listed,
        "library_worlds_listed": listed - builtin,
        "seconds": seconds,
        "builtin_seconds": builtin_seconds,
        "save_world_median_seconds": round(save_seconds, 3),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
