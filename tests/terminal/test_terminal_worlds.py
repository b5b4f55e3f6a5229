"""Every terminal family: honest rewards, solvable tasks, disjoint splits, hidden answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import envfactory
from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.tasks import SPLITS
from envfactory.episode.runner import run_episode
from envfactory.policies.scripted import Oracle
from envfactory.quality.check import check
from envfactory.terminal import fs
from envfactory.terminal.builtin import FAMILIES
from envfactory.terminal.checks import rubric
from envfactory.terminal.environment import TerminalEnvironment
from envfactory.terminal.episode import TerminalEpisode
from envfactory.terminal.family import TerminalHidden
from envfactory.terminal.sandbox import RunResult, Sandbox

TERMINAL = [family.id for family in FAMILIES]


def test_at_least_ten_families() -> None:
    assert len(TERMINAL) >= 10
    infos = [envfactory.make(e).info() for e in TERMINAL]
    assert all(
        i.kind == "terminal" and i.tool_names == ["run_command", "read_file", "write_file"]
        for i in infos
    )


@pytest.mark.parametrize("env_id", TERMINAL)
def test_check_passes(env_id: str) -> None:
    report = check(envfactory.make(env_id), n=10)
    assert report.oracle_success_rate == 1.0, report
    assert report.noop_reward_mean == 0.0 and report.random_reward_mean == 0.0
    assert report.unsolvable == report.duplicate_tasks == report.split_overlap == 0
    assert report.passed


@pytest.mark.parametrize("env_id", TERMINAL)
def test_every_score_test_fails_at_the_start(env_id: str) -> None:
    """Run every test, the command-running ones included, on each level's initial files."""
    env = envfactory.make(env_id)
    for d in env.difficulties:
        task = env.task("validation", d, 3)
        hidden = task.hidden
        assert isinstance(hidden, TerminalHidden)
        tree = fs.tree_of(hidden.files)

        def runner(command: str, files: dict[str, str], tree: fs.Tree = tree) -> RunResult:
            with Sandbox() as box:
                fs.materialize(
                    {**tree, **fs.tree_of([fs.file(p, t) for p, t in files.items()])},
                    box.path,
                    box.owner,
                )
                return box.run(command)

        items = rubric(hidden.tests, tree, runner)
        scores = [i for i in items if i.kind == "score"]
        assert scores and all(i.score == 0.0 for i in scores), (task.task_id, items)


@pytest.mark.parametrize("env_id", TERMINAL)
def test_public_view_holds_nothing_hidden(env_id: str) -> None:
    env = envfactory.make(env_id)
    for split in SPLITS:
        task = env.task(split, 5, 1)
        public = task.public.model_dump_json()
        assert task.task_id == f"{env_id}/{split}/5/1"
        hidden = task.hidden
        assert isinstance(hidden, TerminalHidden)
        for step in hidden.gold_plan:  # what the gold solution writes is not given away
            content = step.arguments.get("content", "")
            if step.tool == "write_file" and len(content) > 40:
                assert content not in public
        for t in hidden.tests:
            digests = t.args.get("files", {})
            for v in digests.values() if isinstance(digests, dict) else []:
                assert v not in public or len(v) < 20


def test_same_task_same_content_and_splits_differ() -> None:
    env = envfactory.make("term-log-report")
    a, b = env.task("train", 3, 5), env.task("train", 3, 5)
    assert a is b or a.hidden == b.hidden
    fresh = TerminalEnvironment(env.family)  # type: ignore[attr-defined]
    assert fresh.task("train", 3, 5).hidden == a.hidden
    assert env.task("test", 3, 5).hidden.fingerprint != a.hidden.fingerprint


def test_episode_api_tools_and_verdict() -> None:
    env = envfactory.make("term-organize-files")
    task = env.task("train", 2, 0)
    ep = env.episode()
    assert isinstance(ep, TerminalEpisode)
    obs = ep.reset(task)
    assert obs.kind == "task" and obs.content == task.public.instruction
    obs = ep.step({"type": "tool_call", "tool": "run_command", "arguments": '{"command": "ls"}'})
    top = task.hidden.files[0].path.split("/")[0]  # type: ignore[attr-defined]
    assert obs.kind == "tool_result" and top in obs.content and obs.data["exit_code"] == 0
    obs = ep.step(ToolCall(tool="write_file", arguments={"path": "notes/a.txt", "content": "hi"}))
    assert obs.kind == "tool_result"
    obs = ep.step(ToolCall(tool="read_file", arguments={"path": "/work/notes/a.txt"}))
    assert obs.content == "hi"
    for bad in (
        ToolCall(tool="rm_rf", arguments={}),
        ToolCall(tool="read_file", arguments={"path": "../../etc/passwd"}),
        ToolCall(tool="read_file", arguments={"nope": 1}),
        ToolCall(tool="run_command", arguments="{not json"),
        "garbage",
    ):
        assert ep.step(bad).kind == "tool_error"
    assert ep.evaluate().reward == 0.0
    ep.step(Message(content="done"))
    v = ep.evaluate()
    assert v.status == "completed" and v.reward == 0.0 and v.items
    verdict = run_episode(env, task, Oracle(), ep)
    assert verdict.reward == 1.0 and verdict.status == "completed"
    assert {i.name for i in verdict.items} >= {f"{top} emptied", "disk_quota"}
    ep.close()


def test_long_output_is_cut_in_the_middle() -> None:
    env = envfactory.make("term-organize-files")
    ep = env.episode()
    ep.reset(env.task("train", 1, 0))
    obs = ep.step(ToolCall(tool="run_command", arguments={"command": "seq 1 200000"}))
    assert obs.content.startswith("1\n2\n") and "200000" in obs.content
    assert "omitted" in obs.content and len(obs.content) < 20_000
    ep.close()


def test_a_sandbox_that_cannot_start_is_an_infra_error() -> None:
    env = envfactory.make("term-permissions")
    ep = env.episode()
    ep.reset(env.task("train", 1, 0))
    assert ep.sandbox is not None
    ep.sandbox.runtime = _Broken(ep.sandbox.runtime)  # type: ignore[assignment]
    obs = ep.step(ToolCall(tool="run_command", arguments={"command": "ls"}))
    assert obs.done and ep.status == "infra_error"
    v = ep.evaluate()
    assert v.reward is None and v.status == "infra_error"
    ep.close()


class _Broken:
    """A runtime whose bubblewrap binary is gone: the real failure path, not a stub result."""

    def __init__(self, real: object) -> None:
        self.real = real

    def run(self, workdir: object, command: str, limits: object) -> RunResult:
        rt = self.real
        saved = rt.bwrap  # type: ignore[attr-defined]
        rt.bwrap = "/nonexistent/bwrap"  # type: ignore[attr-defined]
        rt.base_args[0] = rt.bwrap  # type: ignore[attr-defined]
        try:
            return rt.run(workdir, command, limits)  # type: ignore[attr-defined,no-any-return]
        finally:
            rt.bwrap = saved  # type: ignore[attr-defined]
            rt.base_args[0] = saved  # type: ignore[attr-defined]


def test_envs_json_kinds() -> None:
    from typer.testing import CliRunner

    from envfactory.cli.main import app

    out = CliRunner().invoke(app, ["envs", "--json"])
    kinds = {i["id"]: i["kind"] for i in json.loads(out.stdout)}
    assert kinds["retail"] == "db" and all(kinds[e] == "terminal" for e in TERMINAL)


def test_check_files_are_not_written_through_planted_links(tmp_path: Path) -> None:
    env = envfactory.make("term-python-fix")
    task = env.task("train", 1, 0)
    ep = env.episode()
    ep.reset(task)
    ep.step(ToolCall(tool="run_command", arguments={"command": f"ln -s {tmp_path} .check"}))
    ep.step(
        ToolCall(tool="run_command", arguments={"command": f"rm -rf tests; ln -s {tmp_path} tests"})
    )
    verdict = ep.evaluate()
    assert verdict.reward == 0.0 and list(tmp_path.iterdir()) == []
    ep.close()


def test_sandbox_benchmark_reports_its_contract_keys() -> None:
    from envfactory.bench.sandbox import bench_sandbox

    result = bench_sandbox(starts=5, episodes=10).model_dump()
    for key in ("sandbox_start_ms_p50", "subprocess_start_ms_p50", "episodes_1000_s"):
        assert result[key] > 0
    assert result["sandbox_start_ms_p50"] > result["subprocess_start_ms_p50"]
