"""Hand-built episode records for the credit tests: states and rewards to compute by hand."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from envfactory.trajectory.record import CallRecord, EpisodeRecord, ModelInfo, StepRecord

TASK = "handmade/train/1/0"


def build(
    i: int,
    path: list[str],
    reward: float | None,
    status: str = "completed",
    actors: list[str] | None = None,
    env_id: str = "handmade",
    group: str = TASK,
) -> EpisodeRecord:
    """Episode ``i`` whose k-th call (one step each) reached ``path[k]``."""
    actors = actors or ["agent"] * len(path)
    calls = [
        CallRecord(
            index=k,
            actor=actors[k],
            n_messages=2 * k + 1,
            message_index=2 * k + 1,
            prompt_ids=list(range(3 + k)),
            output_ids=[100 + k, 200 + k],
        )
        for k in range(len(path))
    ]
    steps = [
        StepRecord(call_index=k, actor=actors[k], action={"k": k}, kind="tool_result", state_hash=h)
        for k, h in enumerate(path)
    ]
    return EpisodeRecord(
        episode_id=f"{group}#{i}",
        group_id=group,
        task_id=TASK,
        env_id=env_id,
        split="train",
        difficulty=1,
        sample_index=i,
        status=status,  # type: ignore[arg-type]
        reward=reward,
        model=ModelInfo(name="hand", provider="scripted"),
        calls=calls,
        steps=steps,
        step_rewards=[None] * len(path),
        messages=[{"role": "user", "content": "x"}] * (2 * len(path) + 1),
    )


@pytest.fixture(name="record")
def record_builder() -> Callable[..., EpisodeRecord]:
    """``record(i, path, reward, ...)``: see :func:`build`."""
    return build
