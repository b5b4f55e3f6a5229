"""A campaign episode as the viewer shows it: its requests in order, each with its task, when
it opened and closed, its deadline, the events that fired before it, its steps and its reward.

A record keeps the campaign's conversation and the verdict's per-request lines, not the
requests' structure, so the view replays the record's actions (messages too: they take time on
the clock) on a fresh episode of the campaign, trusting the replay only while every step's
state hash is the recorded one.
"""

from __future__ import annotations

from typing import Any

from envfactory.campaign.clock import time_of_day
from envfactory.campaign.environment import CampaignEnvironment
from envfactory.campaign.episode import Request
from envfactory.contract.actions import parse_action
from envfactory.contract.config import EpisodeConfig
from envfactory.registry import make
from envfactory.rollout.types import TaskRef
from envfactory.trajectory.record import EpisodeRecord


def _answer(status: str, reason: str) -> dict[str, Any]:
    return {"status": status, "reason": reason, "requests": [], "events": []}


def campaign_view(record: EpisodeRecord) -> dict[str, Any]:
    """``status`` ``ok`` with ``requests`` (in order) and ``events`` (every event that fired,
    with its time); else ``not_applicable`` (not a campaign), ``unavailable`` (the world or
    task cannot be made here) or ``not_replayable`` (``reason`` says at which step the replay
    left the record)."""
    try:
        ref = TaskRef.parse(record.task_id)
        env = make(record.env_id)
    except Exception as exc:  # an unreadable id, or a world not registered in this process
        return _answer("unavailable", f"{record.task_id}: {type(exc).__name__}: {exc}")
    if not isinstance(env, CampaignEnvironment):
        return _answer("not_applicable", f"{record.env_id} is not a campaign world")
    episode = env.episode(EpisodeConfig(max_steps=10**9))
    try:
        episode.reset(env.task(ref.split, ref.difficulty, ref.index))
        for i, step in enumerate(record.steps):
            episode.step(parse_action(step.action))
            if episode.state_hash() != step.state_hash:
                return _answer("not_replayable", f"the replay leaves the record at step {i}")
        return {
            "status": "ok",
            "reason": "",
            "clock": time_of_day(episode.clock),
            "requests": [_request(r) for r in episode.requests],
            "events": [{"time": time_of_day(m), "what": w} for m, w in episode.fired],
            "tasks": env.level(ref.difficulty).tasks,
        }
    finally:
        episode.close()


def _request(r: Request) -> dict[str, Any]:
    verdict = r.verdict or r.episode.evaluate()
    return {
        "number": r.number,
        "task_id": r.task.task_id,
        "instruction": r.task.public.instruction,
        "opened": time_of_day(r.opened),
        "closed": None if r.closed is None else time_of_day(r.closed),
        "due": None if r.due is None else time_of_day(r.due),
        "late": r.late(),
        "events": r.events,
        "steps": [r.first_step, r.last_step],
        "reward": 0.0 if r.late() else verdict.reward,
        "rubric": [i.model_dump(mode="json") for i in verdict.items],
    }
