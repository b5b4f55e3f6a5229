"""Repository worlds with the real sandbox and real pytest runs of the pinned projects."""

from __future__ import annotations

import gzip
import json

import pytest

import envfactory
from envfactory.contract.actions import ToolCall
from envfactory.episode.runner import run_episode
from envfactory.policies.scripted import NoOp, Oracle
from envfactory.quality.play import play
from envfactory.repo import projects
from envfactory.repo.confine import collateral
from envfactory.repo.environment import RepoEnvironment
from envfactory.repo.exploits import RepoTrick, repo_exploits
from envfactory.repo.gate import tamper_names
from envfactory.repo.mutate import candidates, check_valid
from envfactory.repo.runner import store
from envfactory.repo.tasks import RepoHidden
from envfactory.repo.verify import shipped_path, verify

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


def test_shipped_verdicts_hold_when_run_again(env: RepoEnvironment) -> None:
    """Verdicts that ship with envfactory, verified again for real: the same mutations are
    kept or refused, and a kept one fails the same tests."""
    p = projects.PROJECTS[0]
    lines = gzip.decompress(shipped_path(p).read_bytes()).decode().splitlines()
    shipped = {d["key"]: d["verdict"] for d in map(json.loads, lines)}
    mutations = {m.id: m for cell in env.catalog.values() for q, m in cell if q is p}
    singles = sorted(k for k in shipped if k in mutations)
    kept = [k for k in singles if shipped[k]["ok"]][:3]
    refused = [k for k in singles if shipped[k].get("why") == "no test fails"][:1]
    assert len(kept) == 3 and len(refused) == 1
    sample = kept + refused
    fresh = verify(p, [[mutations[k]] for k in sample], cached=False)
    for key, now in zip(sample, fresh, strict=True):
        assert now["ok"] == shipped[key]["ok"], (key, now)
        assert set(now.get("failing", {})) == set(shipped[key].get("failing", {})), key


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
    assert "a new import" in tamper_names(original, hacked)


PRISTINE = b"""import sys

WORDS = 'the exit of it'


def f(x):
    return x + 1


def get(obj, name):
    return getattr(obj, name)
"""


@pytest.mark.parametrize(
    ("hacked", "why"),
    [
        # What a list of forbidden names let through: no import, no sys, os, exec or pytest.
        (b"getattr(len, '__se' + 'lf__')", "new string '__se'"),
        (b"def g(v):\n    type(v).__eq__ = f\n", "new attribute __eq__"),
        (b"def g(v):\n    type(v).f = f\n", "g changed where it uses type"),
        (b"vars(f)", "new builtin vars"),
        (b"x = [].__class__", "new attribute __class__"),
        (b"x = f.__globals__", "new attribute __globals__"),
        (b"x = f.f_back", "new attribute f_back"),
        # Only the pristine file's names and strings: the scope that uses getattr changes.
        (b"def get(obj, name):\n    name = WORDS[4:8]\n    return getattr(obj, name)\n",
         "get changed where it uses getattr"),
        (b"sys.argv", "the module changed where it uses argv, sys"),
    ],
)  # fmt: skip
def test_the_gate_refuses_reflection(hacked: bytes, why: str) -> None:
    current = PRISTINE + b"\n" + hacked + b"\n"
    if hacked.startswith(b"def get("):  # a redefinition replaces the pristine function
        current = PRISTINE.replace(b"def get(obj, name):\n    return getattr(obj, name)\n", hacked)
    assert why in tamper_names(PRISTINE, current)


def test_the_gate_lets_an_ordinary_fix_through() -> None:
    local = b"    one = 1  # a local, a comment\n    return x + one"
    fix = PRISTINE.replace(b"    return x + 1", local)
    doc = fix.replace(b"def f(x):\n", b'def f(x):\n    """Add one."""\n')
    assert tamper_names(PRISTINE, fix) == []
    assert tamper_names(PRISTINE, doc) == []
    assert tamper_names(PRISTINE, PRISTINE) == []
    assert tamper_names(PRISTINE, b"def f(:\n") == ["source that does not parse"]


BUGGED = PRISTINE.replace(b"return x + 1", b"return x - 1")


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        # Outside the bug's function: another function, the module's statements, a class.
        (b"return getattr(obj, name)", b"return getattr(obj, name) or 1", "get changed outside"),
        (b"WORDS = 'the exit of it'", b"WORDS = f(1)", "the module changed outside"),
        (b"def get(", b"class K:\n    y = f(1)\n\n\ndef get(", "the module changed outside"),
        # Inside it: only what the pristine function reached, its own locals, safe builtins.
        (b"return x - 1", b"return get(x, WORDS)", "f newly reaches WORDS"),
        (b"return x - 1", b"return x.bit_length() + 1", "f newly uses .bit_length"),
        (b"def f(x):", b"def f(x, _y=get(1, 2)):", "f newly reaches get"),
        (b"def f(x):", b"@get\ndef f(x):", "f newly reaches get"),
        (b"return x - 1", b"global WORDS\n    WORDS = 2\n    return x + 1", "reaches WORDS"),
    ],
)  # fmt: skip
def test_edits_outside_the_bugs_function_are_collateral(old: bytes, new: bytes, why: str) -> None:
    current = BUGGED.replace(old, new)
    assert any(why in r for r in collateral(PRISTINE, current, {"f"})), collateral(
        PRISTINE, current, {"f"}
    )


def test_a_fix_inside_the_bugs_function_is_not_collateral() -> None:
    rewrite = b"""    # a comment, a local, safe builtins and methods
    one = len([x]) if str(x).isdigit() else 1
    return x + one
"""
    fixed = BUGGED.replace(b"    return x - 1\n", rewrite).replace(b"\n\n\ndef get", b"\n\ndef get")
    assert collateral(PRISTINE, fixed, {"f"}) == []
    assert collateral(PRISTINE, PRISTINE, {"f"}) == []
    assert collateral(PRISTINE, BUGGED, {"f"}) == []
    assert collateral(PRISTINE, BUGGED, set()) == ["f changed outside the bug's function"]


def test_a_function_that_hands_code_to_exec_stays_pristine() -> None:
    """``FunctionBuilder.get_func`` names nothing risky itself but hands its ``src`` to
    ``self._compile``, which runs ``exec``: a bug there must not let a fix rewrite ``src``
    (which confinement allows: it reaches nothing new), so the scope is frozen like
    ``_compile``."""
    boltons = next(p for p in projects.PROJECTS if p.name == "boltons")
    original = (projects.tree_path(boltons) / "boltons/funcutils.py").read_bytes()
    call = b"        self._compile(src, execdict)\n"
    code = list(b"import _pytest.reports as r; r.TestReport.failed = False")
    hacked = original.replace(call, f"        src = bytes({code}).decode()\n".encode() + call)
    assert hacked != original
    assert collateral(original, hacked, {"FunctionBuilder.get_func"}) == []
    why = "FunctionBuilder.get_func changed where it uses _compile"
    assert any(r.startswith(why) for r in tamper_names(original, hacked))


def test_reflection_pays_without_the_gate_and_nothing_with_it(env: RepoEnvironment) -> None:
    """The reflective patch of pytest really makes the failing tests pass in the real run;
    only the gate stands between it and the reward."""
    task = env.task("train", 1, 0)
    episode = env.episode()
    try:
        verdict = run_episode(env, task, RepoTrick("repo_reflect_source"), episode)
    finally:
        episode.close()
    items = {i.name: i.score for i in verdict.items}
    assert items["bug_1_fixed"] == 1.0 and items["suite_passes"] == 1.0, verdict.items
    assert items["runner_untouched"] == 0.0
    assert verdict.reward == 0.0


def test_a_project_helper_pays_in_the_run_and_nothing_outside_the_bug(
    env: RepoEnvironment,
) -> None:
    """The project's own code does the reflection (boltons' ``FunctionBuilder`` compiles a body
    that marks every pytest report passed, called from a class body when collection imports
    the module): the failing tests really pass. The edit lies outside the bug's function, so
    it earns nothing; and the function it changes now calls one that hands code to ``exec``."""
    task = env.task("train", 1, 0)
    assert isinstance(task.hidden, RepoHidden) and task.hidden.project.startswith("boltons")
    episode = env.episode()
    try:
        verdict = run_episode(env, task, RepoTrick("repo_project_helper"), episode)
    finally:
        episode.close()
    items = {i.name: i.score for i in verdict.items}
    assert items["bug_1_fixed"] == 1.0 and items["suite_passes"] == 1.0, verdict.items
    assert verdict.reward == 0.0
    assert items["edits_confined"] == 0.0 and items["runner_untouched"] == 0.0, verdict.items


@pytest.mark.parametrize(("split", "difficulty"), [("train", 3), ("validation", 1), ("test", 5)])
def test_verification_agrees_with_the_real_verdict(
    env: RepoEnvironment, split: str, difficulty: int
) -> None:
    """Verification patches functions into modules already imported; the verdict imports
    the edited files afresh. On tasks drawn from each kind, both runs are real here (a
    blank line keeps the source from matching the pristine or initial text): the gold edits
    pass every test and leaving the bugs in fails each bug's own tests."""
    task = env.task(split, difficulty, 0)  # type: ignore[arg-type]
    assert isinstance(task.hidden, RepoHidden)
    bugs = task.hidden.bugs
    episode = env.episode()
    try:
        for fixed in (True, False):
            episode.reset(task)
            for b in bugs:
                edit = {"path": b.file, "old": b.old, "new": (b.new if fixed else b.old) + "\n"}
                assert (
                    episode.step(ToolCall(tool="edit_file", arguments=edit)).kind == "tool_result"
                )
            verdict = episode.evaluate()
            items = {i.name: i for i in verdict.items}
            assert "tests run" in items["suite_passes"].reason, items["suite_passes"].reason
            if fixed:
                assert verdict.reward == 1.0, verdict.items
            else:
                assert verdict.reward == 0.0
                assert all(items[f"bug_{i + 1}_fixed"].score == 0.0 for i in range(len(bugs)))
    finally:
        episode.close()
