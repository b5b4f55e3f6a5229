"""Research worlds: a real corpus, real SQLite FTS5 search, the real episode API."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from itertools import pairwise
from typing import Any

import pytest
from research_support import commit, hidden

import envfactory
from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.tasks import SPLITS, Task
from envfactory.episode.runner import run_episode
from envfactory.policies.scripted import NoisyOracle, NoOp, Oracle, RandomPolicy
from envfactory.policies.wrap import ScriptedPolicy
from envfactory.quality.check import check
from envfactory.research import answers
from envfactory.research.corpus import Corpus
from envfactory.research.environment import DIFFICULTIES, ResearchEnvironment
from envfactory.research.episode import ResearchEpisode
from envfactory.research.index import SearchIndex
from envfactory.rollout.engine import RolloutEngine
from envfactory.rollout.types import TaskRef

SIZE = 2000
PER_CELL = 4


@pytest.fixture(scope="module")
def env() -> ResearchEnvironment:
    return ResearchEnvironment(size=SIZE)


@pytest.fixture(scope="module")
def tasks(env: ResearchEnvironment) -> list[Task]:
    return [env.task(s, d, i) for s in SPLITS for d in DIFFICULTIES for i in range(PER_CELL)]


def test_oracle_solves_every_level_and_split(env: ResearchEnvironment, tasks: list[Task]) -> None:
    episode = env.episode()
    for task in tasks:
        verdict = run_episode(env, task, Oracle(), episode)
        assert verdict.reward == 1.0, (task.task_id, task.public.instruction)
        assert verdict.status == "completed"
        assert task.hidden.gold_plan[-1].tool == "answer"


def test_gold_searches_find_the_documents_the_plan_reads(
    env: ResearchEnvironment, tasks: list[Task]
) -> None:
    corpus = env.corpus
    for task in tasks:
        plan = task.hidden.gold_plan
        for step, after in pairwise(plan):
            if step.tool == "search" and after.tool in ("open", "find"):
                hits = corpus.index.search(step.arguments["query"], step.arguments["k"])
                assert after.arguments["doc_id"] in [corpus.docs[h].doc_id for h in hits]


def test_levels_add_hops_and_kinds(env: ResearchEnvironment, tasks: list[Task]) -> None:
    steps = {
        d: [len(t.hidden.gold_plan) for t in tasks if t.public.difficulty == d]
        for d in DIFFICULTIES
    }
    means = [sum(v) / len(v) for v in steps.values()]
    assert means == sorted(means) and means[0] == 2  # level 0: one search, one answer
    kinds = {hidden(t).kind for t in tasks}
    assert {"lead", "chain", "as_of"} <= kinds
    counts = [env.task("train", 3, i) for i in range(20)]  # few values: thinned, still asked
    assert "count" in {hidden(t).kind for t in counts}
    assert any(s.tool == "find" for t in tasks for s in t.hidden.gold_plan)
    many = [env.task("train", 5, i) for i in range(30)]
    assert "compare" in {hidden(t).kind for t in many}
    assert max(t.hidden.knobs["hops"] for t in many) >= 5


def test_doing_nothing_or_answering_outside_the_tool_scores_zero(
    env: ResearchEnvironment, tasks: list[Task]
) -> None:
    episode = env.episode()
    for task in tasks[::5]:
        assert run_episode(env, task, NoOp(), episode).reward == 0.0
        episode.reset(task)
        episode.step(Message(content=f"The answer is {task.hidden.answers[0]}."))
        assert episode.evaluate().reward == 0.0
        assert run_episode(env, task, RandomPolicy(seed=1), episode).reward == 0.0


def test_only_the_first_answer_counts(env: ResearchEnvironment, tasks: list[Task]) -> None:
    task = tasks[7]
    right = task.hidden.answers[0]
    assert commit(env, task, right) == 1.0
    assert commit(env, task, "nobody", right) == 0.0
    episode = env.episode()
    episode.reset(task)
    episode.step(ToolCall(tool="answer", arguments={"value": "nobody"}))
    obs = episode.step(ToolCall(tool="answer", arguments={"value": right}))
    assert obs.error is not None and obs.error.code == "episode_over"
    assert "right" not in obs.content and "wrong" not in obs.content


def test_the_most_frequent_train_answer_does_not_pay(
    env: ResearchEnvironment, tasks: list[Task]
) -> None:
    train = [env.task("train", d, i) for d in DIFFICULTIES for i in range(20)]
    counts = Counter(answers.normalise(t.hidden.answers[0]) for t in train)
    assert counts.most_common(1)[0][1] <= 0.05 * len(train)  # answers spread over many values
    top = [a for a, _ in counts.most_common(3)]
    held = [t for t in tasks if t.public.split != "train"]
    for guess in top:
        assert sum(commit(env, t, guess) for t in held) == 0.0


def test_names_in_the_question_are_never_the_answer(
    env: ResearchEnvironment, tasks: list[Task]
) -> None:
    for task in tasks:
        text = task.public.instruction
        names = re.findall(r"[A-Z][a-z]+(?: [A-Z][a-z]+)+", text) + re.findall(r"\d+", text)
        for name in names:
            assert commit(env, task, name) == 0.0, (task.task_id, name)


def test_trusting_the_fan_wiki_fails(env: ResearchEnvironment) -> None:
    fooled = [
        t for d in (3, 4, 5) for i in range(25) if hidden(t := env.task("train", d, i)).unreliable
    ]
    assert len(fooled) >= 5
    for task in fooled:
        assert commit(env, task, hidden(task).unreliable) == 0.0


def test_near_duplicate_names_are_wrong_answers(env: ResearchEnvironment) -> None:
    graph = env.corpus.graph
    twins = {
        graph.entities[e.twin_of].name: e.name for e in graph.entities if e.twin_of is not None
    }
    twins |= {v: k for k, v in twins.items()}
    tried = 0
    for d in DIFFICULTIES[1:]:
        for i in range(30):
            task = env.task("train", d, i)
            twin = twins.get(task.hidden.answers[0])
            if twin:
                tried += 1
                assert commit(env, task, twin) == 0.0
    assert tried >= 1


def test_answer_formats_and_aliases(env: ResearchEnvironment) -> None:
    assert answers.matches("date", "14 March 1987", ["1987-03-14"])
    assert answers.matches("date", "March 14th, 1987", ["1987-03-14"])
    assert answers.matches("date", "1987/03/14", ["1987-03-14"])
    assert not answers.matches("date", "1987", ["1987-03-14"])
    assert answers.matches("number", "12,400", ["12400"])
    assert answers.matches("number", "about 12400 people", ["12400"])
    assert answers.matches("number", "seven", ["7"])
    assert not answers.matches("number", "12400 or 12500", ["12400"])
    forms = answers.accepted("name", "The Quiet Harbor Society", ["Red Harbor"])
    assert answers.matches("name", "quiet harbor society.", forms)
    assert answers.matches("name", "  RED   harbor ", forms)
    assert not answers.matches("name", "Quiet Harbor Society or Red Harbor", forms)
    person = next(t for i in range(200) if len(hidden(t := env.task("train", 1, i)).accepted) > 1)
    right = answers.normalise(person.hidden.answers[0])
    alias = next(a for a in hidden(person).accepted if a != right)
    assert commit(env, person, alias.upper()) == 1.0


def test_malformed_arguments_are_structured_errors(
    env: ResearchEnvironment, tasks: list[Task]
) -> None:
    episode: ResearchEpisode = env.episode()
    episode.reset(tasks[0])
    doc = env.corpus.docs[0].doc_id
    bad: list[tuple[Any, str]] = [
        (ToolCall(tool="search", arguments={}), "invalid_arguments"),
        (ToolCall(tool="search", arguments={"query": "x", "k": "many"}), "invalid_arguments"),
        (ToolCall(tool="search", arguments={"query": "x", "k": 10_000}), "invalid_arguments"),
        (ToolCall(tool="search", arguments='{"query": '), "invalid_arguments"),
        (ToolCall(tool="open", arguments={"doc_id": "doc-999999"}), "not_found"),
        (ToolCall(tool="open", arguments={"doc_id": doc, "page": 999}), "not_found"),
        (ToolCall(tool="open", arguments={"doc_id": doc, "extra": 1}), "invalid_arguments"),
        (ToolCall(tool="find", arguments={"doc_id": doc, "pattern": "   "}), "invalid_arguments"),
        (ToolCall(tool="answer", arguments={"value": ["a", "b"]}), "invalid_arguments"),
        (ToolCall(tool="delete", arguments={}), "unknown_tool"),
        ("not json", "malformed_action"),
    ]
    for action, code in bad:
        obs = episode.step(action)
        assert obs.kind == "tool_error" and obs.error is not None and obs.error.code == code
        assert not obs.done
    # odd text is searched for, never run as FTS5 syntax or a regular expression
    for text in ['" OR *', "NEAR(a b)", "(.*)+$", "title:x AND -y", "\x00", "名前"]:
        assert episode.step(ToolCall(tool="search", arguments={"query": text})).kind in (
            "tool_result",
            "tool_error",
        )
        obs = episode.step(ToolCall(tool="find", arguments={"doc_id": doc, "pattern": text}))
        assert obs.kind in ("tool_result", "tool_error")
    assert episode.evaluate().reward == 0.0


def test_tools_read_pages_and_find_lines(env: ResearchEnvironment) -> None:
    corpus = env.corpus
    org = corpus.reliable[corpus.graph.by_kind["org"][0]]
    doc = corpus.docs[org]
    episode = env.episode()
    episode.reset(env.task("train", 1, 0))
    found = episode.step(ToolCall(tool="search", arguments={"query": doc.title, "k": 3}))
    assert doc.doc_id in [r["doc_id"] for r in found.data["results"]]
    page = episode.step(ToolCall(tool="open", arguments={"doc_id": doc.doc_id}))
    assert page.data["page"] == 1 and page.data["pages"] >= 1 and doc.title in page.data["text"]
    lines = episode.step(
        ToolCall(tool="find", arguments={"doc_id": doc.doc_id, "pattern": "SERVED AS DIRECTOR"})
    )
    assert lines.data["total"] >= 1 and all("director" in m["line"] for m in lines.data["matches"])
    assert episode.step(ToolCall(tool="answer", arguments={"value": 1999})).done  # numbers too


def test_same_seed_same_corpus_and_tasks() -> None:
    def digest(c: Corpus) -> str:
        h = hashlib.sha256()
        for i, d in enumerate(c.docs):
            h.update(f"{d.doc_id}{d.title}{d.reliable}{c.text(i)}".encode())
        return h.hexdigest()

    a, b, other = Corpus(3, 600), Corpus(3, 600), Corpus(4, 600)
    assert digest(a) == digest(b) != digest(other)
    names = [e.name.lower() for e in a.graph.entities]
    assert len(names) == len(set(names))  # unique names
    one, two = ResearchEnvironment(size=SIZE), ResearchEnvironment(size=SIZE)
    for d in DIFFICULTIES:
        x, y = one.task("test", d, 2), two.task("test", d, 2)
        assert x.public == y.public and x.hidden == y.hidden


def test_splits_share_no_question_or_solution(env: ResearchEnvironment) -> None:
    """A question and its gold plan decide the split, not its answer: no held-out question or
    plan is a train one, and answers common in train are as common in held-out tasks."""
    by_split = {
        s: [env.task(s, d, i) for d in DIFFICULTIES for i in range(8 if s == "train" else 4)]
        for s in SPLITS
    }
    train = by_split["train"]
    seen = {t.public.instruction for t in train}
    plans = {repr(t.hidden.gold_plan) for t in train}
    for split in ("validation", "test"):
        for task in by_split[split]:
            assert task.public.split == split
            assert task.public.instruction not in seen
            assert repr(task.hidden.gold_plan) not in plans
    assert not {t.public.instruction for t in by_split["validation"]} & {
        t.public.instruction for t in by_split["test"]
    }


def test_unreliable_pages_contradict_and_are_marked(env: ResearchEnvironment) -> None:
    corpus = env.corpus
    assert corpus.unreliable
    for eid, pos in list(corpus.unreliable.items())[:20]:
        fan, true = corpus.docs[pos], corpus.docs[corpus.reliable[eid]]
        assert fan.title == true.title and fan.source == "unverified fan wiki"
        assert "unverified fan wiki" in corpus.text(pos) and fan.lead != true.lead


def test_fts5_index_ranks_by_bm25() -> None:
    index = SearchIndex([("Amber Lantern", "a work"), ("Other", "mentions amber lantern once")])
    assert index.search("amber lantern", 2) == [0, 1]
    assert index.search("the of", 5) == []


def test_check_passes(env: ResearchEnvironment) -> None:
    report = check(env, n=60)
    assert report.passed, report
    assert report.oracle_success_rate == 1.0 and report.noop_reward_mean == 0.0


def test_registered_and_runs_in_the_rollout_engine() -> None:
    env = envfactory.make("research-wiki")
    assert env.kind == "research" and env.info().tools == 4
    refs = [TaskRef("research-wiki", "train", d, 0) for d in (0, 2, 4)]
    engine = RolloutEngine(ScriptedPolicy("oracle"))
    summary = engine.run_sync(refs)
    assert not summary.errors
    assert [r.reward for r in engine.records] == [1.0, 1.0, 1.0]


def test_a_slip_on_a_hop_loses_the_answer_so_levels_are_graded(env: ResearchEnvironment) -> None:
    for d in DIFFICULTIES:
        task = env.task("train", d, 0)
        needs = task.hidden.needs
        assert len(needs) == len(task.hidden.gold_plan)
        assert all(all(j < i for j in n) for i, n in enumerate(needs))
        reached, todo = set(), [len(needs) - 1]  # the answer reaches back to the first search
        while todo:
            i = todo.pop()
            reached.add(i)
            todo += needs[i]
        assert 0 in reached and task.hidden.gold_plan[0].tool == "search"
    success = []
    for d in DIFFICULTIES:
        runs = [
            run_episode(env, env.task("train", d, i), NoisyOracle(seed=s), env.episode()).reward
            for i in range(12)
            for s in range(3)
        ]
        success.append(sum(r == 1.0 for r in runs) / len(runs))
    assert success[-1] < 0.3 < success[0], success
    assert all(b <= a + 0.1 for a, b in pairwise(success)), success
