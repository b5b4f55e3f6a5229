"""The difficulty ladder, measured: how many calls a gold plan takes at each level.

    python -m envfactory.bench.ladder --composed 10 --tasks 10

For the world grammar's first N worlds (composed on the spot, library 0) and for the
hand-written database worlds, the mean, least and most gold-plan calls over ``--tasks``
validation tasks per level of each world (a cell a world cannot fill counts the tasks it has);
prints JSON with the load average. A ladder whose neighbouring levels are far apart leaves a
learner no rung to climb to.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable
from statistics import fmean
from typing import Any

from envfactory.contract.environment import Environment
from envfactory.contract.errors import SynthesisError
from envfactory.db.environment import DatabaseEnvironment
from envfactory.domain.loader import builtin_domain_files, load_domain, parse_domain
from envfactory.synth.compose import synthesize
from envfactory.synth.environment import SynthEnvironment


def plan_calls(envs: Iterable[Environment], tasks: int) -> dict[int, dict[str, float]]:
    """Per level: the mean, least and most gold-plan calls over ``tasks`` validation tasks
    of each world, and how many tasks were measured."""
    calls: dict[int, list[int]] = {}
    for env in envs:
        for level in env.difficulties:
            for i in range(tasks):
                try:
                    task = env.task("validation", level, i)
                except SynthesisError:
                    break  # the cell holds fewer tasks
                calls.setdefault(level, []).append(len(task.hidden.gold_plan))
    return {
        level: {"mean": round(fmean(c), 2), "min": min(c), "max": max(c), "tasks": len(c)}
        for level, c in sorted(calls.items())
    }


def composed(n: int, seed: int = 0) -> list[Environment]:
    """The world grammar's worlds 0 .. n-1 of library ``seed``, built."""
    out: list[Environment] = []
    for i in range(n):
        domain = synthesize(i, seed).domain
        out.append(SynthEnvironment(parse_domain(domain, domain["id"])))
    return out


def hand_written() -> list[Environment]:
    """The built-in database worlds, built from their domain files."""
    return [DatabaseEnvironment(load_domain(path)) for path in builtin_domain_files()]


def measure(n: int, tasks: int) -> dict[str, Any]:
    return {
        "composed": {"worlds": n, "levels": plan_calls(composed(n), tasks)},
        "hand_written": {
            "worlds": len(builtin_domain_files()),
            "levels": plan_calls(hand_written(), tasks),
        },
        "tasks_per_level": tasks,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--composed", type=int, default=10, help="the grammar's first N worlds")
    parser.add_argument("--tasks", type=int, default=10, help="validation tasks per level")
    args = parser.parse_args()
    print(json.dumps(measure(args.composed, args.tasks), indent=1))


if __name__ == "__main__":
    main()
