"""Groups from one shared prefix (``EngineConfig.prefix_steps``): played once, forked G times."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import envfactory
from envfactory.contract.config import EpisodeConfig
from envfactory.harness import HarnessConfig
from envfactory.policies.wrap import ScriptedPolicy
from envfactory.rollout import EngineConfig, RolloutEngine, TaskRef
from envfactory.rollout.prefix import play_prefix
from envfactory.trajectory import EpisodeRecord

REFS = [TaskRef("retail", "train", 3, i) for i in range(3)]


def run(
    policy: str, refs: list[TaskRef], **kw: object
) -> tuple[RolloutEngine, list[EpisodeRecord]]:
    harness = kw.pop("harness", None)
    assert harness is None or isinstance(harness, HarnessConfig)
    engine = RolloutEngine(ScriptedPolicy(policy), harness=harness, config=EngineConfig(**kw))
    engine.run_sync(refs)
    return engine, engine.records


@pytest.mark.parametrize("tool_format", ["native", "text"])
def test_the_oracle_continues_every_fork_to_the_same_end(tool_format: str) -> None:
    harness = HarnessConfig(tool_format=tool_format)
    _, fresh = run("oracle", REFS, group_size=1, harness=harness)
    engine, forked = run("oracle", REFS, group_size=3, prefix_steps=2, harness=harness)
    assert len(forked) == 9 and not engine.stats.errors
    ends = {r.task_id: (r.state_hash, len(r.calls)) for r in fresh}
    for r in forked:
        assert r.reward == 1.0 and r.metrics["prefix_steps"] == 2.0
        state, calls = ends[r.task_id]
        assert r.state_hash == state and len(r.calls) == calls - 2  # the prefix is not a call
        # the prefix opens the transcript as context: two actions and what they returned
        assert [m["role"] for m in r.messages[:2]] == ["system", "user"]
        assert r.messages[2]["role"] == "assistant" and r.messages[4]["role"] == "assistant"
        assert r.steps and r.steps[0].call_index == 0


def test_forks_start_from_the_prefix_state() -> None:
    """A policy that writes nothing ends where the shared prefix left the state."""
    ref = REFS[0]
    env = envfactory.make(ref.env_id)
    task = env.task(ref.split, ref.difficulty, ref.index)
    steps = len(task.hidden.gold_plan) - 1
    root = play_prefix(env, EpisodeConfig(), task, steps)
    at_prefix = root.episode.state_hash()
    untouched = env.episode()
    untouched.reset(task)
    assert at_prefix != untouched.state_hash()  # the prefix wrote
    root.close()
    untouched.close()
    _, records = run("noop", [ref], group_size=3, prefix_steps=steps)
    assert len(records) == 3 and {r.state_hash for r in records} == {at_prefix}
    assert all(r.reward is not None and r.reward < 1.0 for r in records)


def test_a_world_that_cannot_fork_is_refused_once_per_group() -> None:
    engine, records = run(
        "oracle",
        [TaskRef("term-git", "train", 1, 0), TaskRef("kuhn_poker", "train", 1, 0)],
        group_size=2,
        prefix_steps=1,
    )
    assert records == [] and engine.stats.groups["incomplete"] == 2
    errors = " ".join(engine.stats.errors)
    assert "ForkUnsupported" in errors and "TerminalEpisode cannot be forked" in errors
    assert "single-agent world that can fork" in errors


def test_the_rollout_command_takes_prefix_steps(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "envfactory", "rollout", "--envs", "retail", "--policy", "oracle",
         "--n-tasks", "2", "--difficulties", "3", "--group-size", "2", "--prefix-steps", "2",
         "--out", str(out), "--json"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["episodes"] == 4 and summary["reward_mean"] == 1.0
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert [r["metrics"]["prefix_steps"] for r in records] == [2.0] * 4
