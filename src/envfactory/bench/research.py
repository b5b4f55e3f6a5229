"""Research worlds' costs: ``envfactory bench research``.

Per world (research-wiki, research-pydocs): the medians of reset, each tool step of the gold
plans (search, open, find) and evaluate (the verdict), in microseconds, over tasks of every
difficulty and split. Then search latency at scale: for each size it builds an encyclopedia
corpus (timed) and times ``search`` (k=5) over queries drawn from the entities' names and
aliases (what gold plans search for), a tenth phrased as questions; p50 / p95 in milliseconds.
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from statistics import median, quantiles

from pydantic import BaseModel, Field

from envfactory.contract.actions import ToolCall
from envfactory.contract.errors import WrongKind
from envfactory.contract.tasks import SPLITS
from envfactory.registry import make
from envfactory.research.corpus import Corpus
from envfactory.research.world import ResearchWorld

ENVS = ("research-wiki", "research-pydocs")
SIZES = (10_000, 100_000)
QUERIES = 2000


class ResearchWorldBench(BaseModel):
    env: str
    documents: int
    corpus_build_s: float = Field(description="building the corpus and its index, once")
    episodes: int
    reset_us_p50: float
    step_us_p50: dict[str, float] = Field(description="per tool of the gold plans")
    evaluate_us_p50: float = Field(description="the verdict")


class SearchLatency(BaseModel):
    documents: int
    build_s: float
    queries: int
    search_p50_ms: float
    search_p95_ms: float


class ResearchBench(BaseModel):
    load: tuple[float, float, float] = Field(description="load average when it started")
    python: str
    worlds: list[ResearchWorldBench]
    search: list[SearchLatency]


def _us(samples: list[float]) -> float:
    return round(median(samples) * 1e6, 2)


def bench_world(env_id: str, episodes: int = 200) -> ResearchWorldBench:
    """Replay gold plans of ``episodes`` tasks (every difficulty and split), timing each
    call of the episode API."""
    env = make(env_id)
    if not isinstance(env, ResearchWorld):
        raise WrongKind(f"{env_id} is a {env.kind} world, not a research world")
    started = time.perf_counter()
    documents = len(env.corpus.docs)
    built = time.perf_counter() - started
    levels = env.difficulties
    tasks = [
        env.task(SPLITS[i % 3], levels[i % len(levels)], i // (3 * len(levels)))
        for i in range(episodes)
    ]
    episode = env.episode()
    resets: list[float] = []
    steps: dict[str, list[float]] = defaultdict(list)
    verdicts: list[float] = []
    for task in tasks:
        t = time.perf_counter()
        episode.reset(task)
        resets.append(time.perf_counter() - t)
        for step in task.hidden.gold_plan:
            call = ToolCall(tool=step.tool, arguments=dict(step.arguments))
            t = time.perf_counter()
            episode.step(call)
            steps[step.tool].append(time.perf_counter() - t)
        t = time.perf_counter()
        episode.evaluate()
        verdicts.append(time.perf_counter() - t)
    return ResearchWorldBench(
        env=env_id,
        documents=documents,
        corpus_build_s=round(built, 2),
        episodes=len(tasks),
        reset_us_p50=_us(resets),
        step_us_p50={tool: _us(v) for tool, v in sorted(steps.items())},
        evaluate_us_p50=_us(verdicts),
    )


def search_latency(size: int, queries: int = QUERIES, seed: int = 0) -> SearchLatency:
    """Build a ``size``-document encyclopedia and time ``queries`` searches on it."""
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
    return SearchLatency(
        documents=len(corpus.docs),
        build_s=round(built, 2),
        queries=queries,
        search_p50_ms=round(cuts[49], 3),
        search_p95_ms=round(cuts[94], 3),
    )


def bench_research(
    envs: Sequence[str] = ENVS,
    episodes: int = 200,
    sizes: Sequence[int] = SIZES,
    queries: int = QUERIES,
) -> ResearchBench:
    """Reset, step and verdict medians of each research world in ``envs`` over ``episodes``
    gold-plan replays, and search p50 / p95 over ``queries`` searches at each corpus size in
    ``sizes`` (the 100,000-document corpus takes about a minute to build)."""
    load = os.getloadavg()
    return ResearchBench(
        load=(round(load[0], 2), round(load[1], 2), round(load[2], 2)),
        python="{}.{}.{}".format(*sys.version_info[:3]),
        worlds=[bench_world(e, episodes) for e in envs],
        search=[search_latency(s, queries) for s in sizes],
    )
