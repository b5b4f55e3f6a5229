"""research-pydocs: documentation rendered from this interpreter's standard library, real
SQLite FTS5 search, the real episode API."""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import re
import subprocess
import sys
from collections import Counter
from itertools import pairwise

import pytest
from research_support import commit, hidden

import envfactory
from envfactory.bench.research import bench_research
from envfactory.contract.actions import ToolCall
from envfactory.contract.tasks import SPLITS, Task
from envfactory.episode.runner import run_episode
from envfactory.policies.scripted import NoisyOracle, NoOp, Oracle, RandomPolicy
from envfactory.quality.check import check
from envfactory.research import answers
from envfactory.research.pydocs.world import PyDocsEnvironment
from envfactory.research.tasks import ANSWER_SHARE
from envfactory.research.world import DIFFICULTIES
from envfactory.tasks.answer_balance import cell, constant_reward, measure

PER_CELL = 4
DIGEST = (
    "from envfactory.research.pydocs.corpus import PyDocs; import hashlib; lib = PyDocs(); "
    "h = hashlib.sha256(lib.version.encode()); "
    "[h.update(f'{d.doc_id}{d.title}{lib.text(i)}'.encode()) for i, d in enumerate(lib.docs)]; "
    "print(h.hexdigest())"
)


@pytest.fixture(scope="module")
def env() -> PyDocsEnvironment:
    return PyDocsEnvironment(max_tasks=30)


@pytest.fixture(scope="module")
def tasks(env: PyDocsEnvironment) -> list[Task]:
    return [env.task(s, d, i) for s in SPLITS for d in DIFFICULTIES for i in range(PER_CELL)]


def test_oracle_solves_every_level_and_split(env: PyDocsEnvironment, tasks: list[Task]) -> None:
    episode = env.episode()
    for task in tasks:
        assert run_episode(env, task, Oracle(), episode).reward == 1.0, task.public.instruction
        assert run_episode(env, task, NoOp(), episode).reward == 0.0
        assert run_episode(env, task, RandomPolicy(seed=2), episode).reward == 0.0


def test_levels_lengthen_plans_and_a_slip_loses_the_answer(
    env: PyDocsEnvironment, tasks: list[Task]
) -> None:
    steps = [
        sum(len(t.hidden.gold_plan) for t in tasks if t.public.difficulty == d)
        for d in DIFFICULTIES
    ]
    assert steps == sorted(steps) and steps[0] == 2 * PER_CELL * len(SPLITS)  # search, answer
    kinds = {hidden(t).kind for t in tasks}
    assert {"lead", "fact", "name"} <= kinds
    assert {s.tool for t in tasks for s in t.hidden.gold_plan} == {
        "search",
        "open",
        "find",
        "answer",
    }
    success = []
    for d in DIFFICULTIES:
        runs = [
            run_episode(env, env.task("train", d, i), NoisyOracle(seed=s), env.episode()).reward
            for i in range(10)
            for s in range(3)
        ]
        success.append(sum(r == 1.0 for r in runs) / len(runs))
    assert success[-1] < success[0] and all(b <= a + 0.15 for a, b in pairwise(success))


def test_facts_are_the_interpreters(env: PyDocsEnvironment) -> None:
    lib = env.corpus
    assert lib.version == "{}.{}".format(*sys.version_info[:2])
    dumps = lib.objects[lib.by_name["json.dumps"]]
    assert dumps.count["params"] == len(inspect.signature(json.dumps).parameters)
    assert dumps.defaults["skipkeys"] == "False"
    decoder = lib.objects[lib.by_name["json.JSONDecoder"]]
    assert lib.objects[decoder.rel["module_of"]].name == "json"
    assert decoder.count["methods"] == 2  # decode, raw_decode
    text = lib.text(dumps.home)
    assert "Defined in module json." in text and "dumps takes 11 parameters." in text
    for task in (env.task("train", d, i) for d in (1, 2) for i in range(20)):
        if hidden(task).shape[-1] == "default":
            match = re.search(
                r"parameter `(\w+)` of the (?:function|class) `([\w.]+)`", task.public.instruction
            )
            if match:
                o = lib.objects[lib.by_name.get(match[2]) or lib.by_bare[match[2]][0]]
                assert answers.normalise(o.defaults[match[1]]) == answers.normalise(
                    task.hidden.answers[0]
                )


def test_same_corpus_in_another_process_with_another_hash_seed(env: PyDocsEnvironment) -> None:
    digests = set()
    for seed in ("1", "2"):
        run = subprocess.run(
            [sys.executable, "-c", DIGEST],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(run.stdout.strip())
    here = env.corpus
    h = hashlib.sha256(here.version.encode())
    for i, d in enumerate(here.docs):
        h.update(f"{d.doc_id}{d.title}{here.text(i)}".encode())
    assert digests == {h.hexdigest()}


def test_splits_are_disjoint_by_module_and_question(env: PyDocsEnvironment) -> None:
    lib = env.corpus
    by_split = {
        s: [env.task(s, d, i) for d in DIFFICULTIES for i in range(env.tasks_up_to(s, d, 12))]
        for s in SPLITS
    }
    modules: dict[str, set[str]] = {}
    for split, ts in by_split.items():
        modules[split] = set()
        for t in ts:
            plan = t.hidden.gold_plan
            docs = set(re.findall(r"py-\d+", json.dumps([s.arguments for s in plan])))
            homes = {lib.objects[lib.docs[lib.by_id[d]].entity].module for d in docs}
            queries = [str(s.arguments["query"]) for s in plan if s.tool == "search"]
            homes |= {lib.objects[lib.by_name[q]].module for q in queries if q in lib.by_name}
            assert homes
            assert {env.module_split(m) for m in homes} == {split}, t.task_id
            modules[split] |= homes
    assert not modules["train"] & (modules["validation"] | modules["test"])
    assert not modules["validation"] & modules["test"]
    train = {t.public.instruction for t in by_split["train"]}
    assert not train & {t.public.instruction for t in by_split["test"] + by_split["validation"]}


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_no_answer_is_concentrated_in_the_test_split(difficulty: int) -> None:
    """The split follows the question, not the answer, and no answer fills more than a small
    share of a template's tasks: a constant "1" earned 0.80 of difficulty 0's test tasks and
    0.19-0.28 of the others' when answers hashed to splits."""
    env = PyDocsEnvironment(max_tasks=150)
    test = cell(env, "test", difficulty, 150)
    assert constant_reward(test, "1") <= max(0.02, 1 / len(test))
    if difficulty == 0:
        assert sum(commit(env, t, "1") for t in test) <= 1
    for b in measure(env, difficulty, 150):
        assert b.held_top_in_held <= max(ANSWER_SHARE * (1 + 1 / b.held), 1 / b.held), b.line()
        assert not b.skewed(), b.line()


def test_guesses_do_not_pay(env: PyDocsEnvironment, tasks: list[Task]) -> None:
    """The most frequent train answers earn about their fair share of held-out tasks (30 a
    cell), no more; names in a question are never its answer."""
    train = [t for d in DIFFICULTIES for t in cell(env, "train", d, 25)]
    counts = Counter(answers.normalise(t.hidden.answers[0]) for t in train)
    held = [t for s in ("validation", "test") for d in DIFFICULTIES for t in cell(env, s, d, 30)]
    for guess, _ in counts.most_common(3):
        assert sum(commit(env, t, guess) for t in held) <= ANSWER_SHARE * len(held), guess
    for task in tasks:
        for name in re.findall(r"`([\w.]+)`", task.public.instruction):
            assert commit(env, task, name) == 0.0, (task.task_id, name)


def test_find_reads_long_pages(env: PyDocsEnvironment) -> None:
    lib = env.corpus
    longest = max(range(len(lib.docs)), key=lambda i: len(lib.pages(i)))
    assert len(lib.pages(longest)) >= 5
    episode = env.episode()
    episode.reset(env.task("train", 1, 0))
    doc = lib.docs[longest].doc_id
    found = episode.step(
        ToolCall(tool="find", arguments={"doc_id": doc, "pattern": "Defined in module"})
    )
    assert found.data["total"] >= 1 and found.data["matches"][0]["page"] == 1
    hits = episode.step(ToolCall(tool="search", arguments={"query": "json.dumps", "k": 3}))
    assert hits.data["results"][0]["title"] == "function json.dumps"
    assert "documentation" in env.tools()[0]["function"]["description"]


def test_check_passes_and_registered(env: PyDocsEnvironment) -> None:
    report = check(env, n=60)
    assert report.passed, report
    made = envfactory.make("research-pydocs")
    assert made.kind == "research" and made.info().rows == len(env.corpus.docs)


def test_bench_reports_reset_step_verdict_and_search() -> None:
    report = bench_research(envs=["research-pydocs"], episodes=12, sizes=[600], queries=40)
    world = report.worlds[0]
    assert world.episodes == 12 and world.reset_us_p50 > 0 and world.evaluate_us_p50 > 0
    assert {"search", "open", "answer"} <= set(world.step_us_p50)
    assert report.search[0].documents >= 600
    assert 0 < report.search[0].search_p50_ms <= report.search[0].search_p95_ms


def test_a_cells_first_tasks_are_counted_without_making_the_whole_cell() -> None:
    env = PyDocsEnvironment(max_tasks=30)
    assert env.tasks_up_to("train", 1, 3) == 3
    assert len(env.supply._cells[("train", 1)].tasks) == 3  # no more made than were asked for
    assert env.tasks_up_to("train", 1, 0) == 0
    assert env.tasks_up_to("train", 1, 10**6) == env.capacity("train", 1) <= 30
