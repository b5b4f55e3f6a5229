"""Repository worlds with the real sandbox and real pytest runs of the pinned projects."""

from __future__ import annotations

import pytest

import envfactory
from envfactory.episode.runner import run_episode
from envfactory.episode.types import ToolCall
from envfactory.policies.scripted import NoOp, Oracle
from envfactory.quality.adversary import play
from envfactory.repo import projects
from envfactory.repo.environment import RepoEnvironment, RepoHidden
from envfactory.repo.episode import tamper_names
from envfactory.repo.exploits import repo_exploits
from envfactory.repo.mutate import candidates, check_valid
from envfactory.repo.runner import store

WHY = projects.unavailable_reason()
pytestmark = pytest.mark.skipif(WHY is not None, reason=WHY or "")


@pytest.fixture(scope="module")
def env() -> RepoEnvironment:
    made = envfactory.make("repo-python")
    assert isinstance(made, RepoEnvironment)
    return made


def test_listed_with_kind_repo(env: RepoEnvironment) -> None:
    assert "repo-python" in envfactory.list_envs()
    assert env.info().kind == "repo"
    assert {t["function"]["name"] for t in env.tools()} == {
        "run_command", "read_file", "write_file", "edit_file"
    }  # fmt: skip


def test_every_candidate_of_a_file_gives_its_intended_tree() -> None:
    p = projects.PROJECTS[0]
    data = (projects.tree_path(p) / "inflection/__init__.py").read_bytes()
    found = candidates("inflection/__init__.py", data)
    assert len(found) > 50
    assert all(check_valid(m, data) for m in found)
    assert {m.op for m in found} >= {"compare", "operator", "off_by_one", "swap_args"}


def test_gold_fixes_and_doing_nothing_scores_zero(env: RepoEnvironment) -> None:
    task = env.task("train", 1, 0)
    assert isinstance(task.hidden, RepoHidden)
    text = task.public.instruction
    assert all(b.old not in text for b in task.hidden.bugs)  # never the fix or its line
    episode = env.episode()
    try:
        assert run_episode(env, task, Oracle(), episode).reward == 1.0
        assert run_episode(env, task, NoOp(), episode).reward == 0.0
        # A real run: the fix with a harmless extra blank line is not the pristine text.
        episode.reset(task)
        for b in task.hidden.bugs:
            edit = {"path": b.file, "old": b.old, "new": b.new + "\n"}
            assert episode.step(ToolCall(tool="edit_file", arguments=edit)).kind == "tool_result"
        env.run_cache.clear()
        verdict = episode.evaluate()
        assert verdict.reward == 1.0, verdict.items
    finally:
        episode.close()


def test_the_starter_level_shows_one_tool_and_spells_the_edit_out(env: RepoEnvironment) -> None:
    task = env.task("train", 0, 0)
    assert task.public.tools == ["edit_file"]
    assert len(task.hidden.gold_plan) == 1
    episode = env.episode()
    try:
        assert run_episode(env, task, Oracle(), episode).reward == 1.0
    finally:
        episode.close()


def test_no_exploit_earns_anything(env: RepoEnvironment) -> None:
    task = env.task("train", 1, 0)
    episode = env.episode()
    try:
        for policy in repo_exploits():
            reward = play(env, task, policy, episode)
            assert reward == 0.0, policy.name
    finally:
        episode.close()


def test_writing_a_linked_test_file_leaves_the_store_alone(env: RepoEnvironment) -> None:
    task = env.task("train", 1, 0)
    assert isinstance(task.hidden, RepoHidden)
    p = env.project(task.hidden.project)
    s = store(p)
    test_file = next(f for f in s.files if p.is_test(f) and f.endswith(".py"))
    before = s.read(test_file)
    episode = env.episode()
    try:
        episode.reset(task)
        call = ToolCall(tool="write_file", arguments={"path": test_file, "content": "x = 1\n"})
        assert episode.step(call).kind == "tool_result"
        shell = f"echo 'y = 2' >> {test_file}; echo $?"
        out = episode.step(ToolCall(tool="run_command", arguments={"command": shell}))
        assert "Read-only" in out.content or "1" in out.content
    finally:
        episode.close()
    assert s.read(test_file) == before


def test_splits_are_disjoint_by_project_file(env: RepoEnvironment) -> None:
    files = {
        split: {(p.key, m.file) for p, m in env.catalog[split]}
        for split in ("train", "validation", "test")
    }
    assert all(files.values())
    assert not files["train"] & files["test"]
    assert not files["train"] & files["validation"]
    assert not files["validation"] & files["test"]


def test_the_gate_refuses_source_that_reaches_for_the_runner() -> None:
    original = b"def f(x):\n    return x + 1\n"
    assert tamper_names(original, b"def f(x):\n    return x - 1\n") == []
    hacked = original + b"import sys\nsys.exit(0)\n"
    assert "sys" in tamper_names(original, hacked)
