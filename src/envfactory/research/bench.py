"""Search latency of research corpora: ``python -m envfactory.research.bench --json``.

For each size it builds the corpus (timed), then times ``search`` (k=5) over queries drawn
from the entities' names and aliases (what gold plans search for) and a share of free-text
questions, and reports p50 / p95 in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from statistics import quantiles
from typing import Any

from envfactory.research.corpus import Corpus

SIZES = (10_000, 100_000)
QUERIES = 2000


def bench(size: int, queries: int = QUERIES, seed: int = 0) -> dict[str, Any]:
    started = time.perf_counter()
    corpus = Corpus(seed, size)
    built = time.perf_counter() - started
    rng = random.Random(seed)
    ents = corpus.graph.entities
    texts = [rng.choice(rng.choice(ents).names) for _ in range(queries)]
    for i in range(0, queries, 10):  # a tenth phrased as questions
        texts[i] = f"where was {texts[i]} born and which organisation did they found"
    times = []
    for text in texts:
        t = time.perf_counter()
        corpus.index.search(text, 5)
        times.append((time.perf_counter() - t) * 1000)
    cuts = quantiles(times, n=100)
    return {
        "documents": len(corpus.docs),
        "build_s": round(built, 2),
        "queries": queries,
        "search_p50_ms": round(cuts[49], 3),
        "search_p95_ms": round(cuts[94], 3),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    args = parser.parse_args(argv)
    report = {"load": os.getloadavg(), "sizes": [bench(s) for s in args.sizes]}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for row in report["sizes"]:
            print(row)


if __name__ == "__main__":
    main()
