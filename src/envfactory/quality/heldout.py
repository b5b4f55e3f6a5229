"""``python -m envfactory.quality.heldout ENV... [-n PER_CELL]``: measure the held-out guarantee of
registered worlds or OpenAPI documents (:mod:`envfactory.tasks.heldout` says what is measured).

Per held-out split, it prints how many held-out tasks share a target, a change, or a question and
its answer with a train task; each must be 0.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from envfactory.contract.environment import Environment
from envfactory.domain.loader import parse_domain
from envfactory.openapi.compile import compile_document
from envfactory.openapi.document import read_document
from envfactory.openapi.environment import OpenAPIEnvironment
from envfactory.registry import make
from envfactory.tasks.heldout import measure


def environment(name: str) -> Environment:
    """A registered environment, or the world compiled from an OpenAPI document's path."""
    path = Path(name)
    if not path.is_file():
        return make(name)
    return OpenAPIEnvironment(
        parse_domain(compile_document(read_document(path), path.name), path.name)
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("envs", nargs="+")
    parser.add_argument("-n", "--per-cell", type=int, default=500)
    args = parser.parse_args(argv)
    for name in args.envs:
        start = time.perf_counter()
        env = environment(name)
        report = measure(env, args.per_cell)
        print(f"{name}  ({time.perf_counter() - start:.1f} s)")
        for overlap in report:
            print("  " + overlap.line())


if __name__ == "__main__":
    main()
