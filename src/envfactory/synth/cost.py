"""CPU per candidate of ``envfactory synth``: compose, build and audit worlds ``first`` ..
``first + count - 1`` of a library in this process (nothing saved), as ``synth_one`` times
them, and print JSON.

    python -m envfactory.synth.cost --first 0 --count 6

CPU time on a machine shared with other work still varies by a fifth or more between runs;
compare two versions of the code by running them side by side, more than once.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

from envfactory.registry import list_envs
from envfactory.synth.pipeline import SynthSettings, synth_one


def measure(first: int, count: int, settings: SynthSettings) -> dict[str, object]:
    """Each candidate's outcome and CPU seconds, their sum and median, and the load."""
    list_envs()  # the built-in worlds, loaded once per process as a worker does
    results = [synth_one(i, settings) for i in range(first, first + count)]
    cpu = [r.cpu_seconds for r in results]
    return {
        "candidates": len(results),
        "passed": sum(r.passed for r in results),
        "cpu_seconds": round(sum(cpu), 2),
        "cpu_per_candidate": round(sum(cpu) / len(cpu), 3) if cpu else 0.0,
        "median_cpu_seconds": round(statistics.median(cpu), 3) if cpu else 0.0,
        "per_candidate": {r.index: r.cpu_seconds for r in results},
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first", type=int, default=0, help="the first world's index")
    parser.add_argument("--count", type=int, default=6, help="how many candidates")
    parser.add_argument("--seed", type=int, default=0, help="which library")
    args = parser.parse_args()
    print(json.dumps(measure(args.first, args.count, SynthSettings(seed=args.seed)), indent=1))


if __name__ == "__main__":
    main()
