"""A campaign task: the campaign played once by the oracle, recorded as one gold plan (each
request's plan, then ``close_request`` with its reply; the last request's reply is the final
message), with the requests' targets joined and the last request's answers."""

from __future__ import annotations

from typing import Any

from envfactory.campaign.episode import DEFAULT_CONFIG, CampaignEpisode
from envfactory.campaign.setting import CampaignWorld
from envfactory.campaign.tool import CLOSE
from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import (
    Ask,
    HiddenTask,
    PlanStep,
    PublicTask,
    Split,
    TargetChange,
    Task,
)
from envfactory.policies.scripted import Oracle, answer_text
from envfactory.tasks.seeds import stable_hash
from envfactory.world.state import hex_hash

PREAMBLE = (
    "You will handle {k} requests, one after another, in one system; earlier work and the "
    "passing of time change what later requests find. Each action takes time on the clock; "
    "a request due by a time must be closed by then. Close each request with close_request "
    "(your reply to it); after the last one, end with your final message as the reply."
)


def record(env: CampaignWorld, split: Split, difficulty: int, index: int) -> Task:
    """The campaign task at (split, difficulty, index)."""
    episode = CampaignEpisode(env, DEFAULT_CONFIG)
    try:
        return _record(env, episode, split, difficulty, index)
    finally:
        episode.close()


def _record(
    env: CampaignWorld, episode: CampaignEpisode, split: Split, difficulty: int, index: int
) -> Task:
    task_id = f"{env.id}/{split}/{difficulty}/{index}"
    first = episode.begin(split, difficulty, index)
    if first is None:
        raise SynthesisError(f"{env.id}: no first request at {split}/{difficulty}/{index}")
    episode.task = first.task  # stands in for the campaign task being recorded
    plan: list[PlanStep] = []
    asks: list[Ask] = []
    while (request := episode.current) is not None:
        sub = request.task.hidden
        asks += [Ask(before_step=a.before_step + len(plan), facts=a.facts) for a in sub.asks]
        plan += sub.gold_plan
        _play(episode, request.task)
        if episode.done or episode.current is None:
            break
        reply = answer_text(sub.answers)
        plan.append(PlanStep(tool=CLOSE, arguments={"reply": reply}))
        episode.step(ToolCall(tool=CLOSE, arguments={"reply": reply}))
    if not episode.done and episode.requests[-1].closed is None:
        episode.step(Message(content=answer_text(episode.requests[-1].task.hidden.answers)))
    failed = [
        r.task.task_id
        for r, v in zip(episode.requests, episode.verdicts(), strict=True)
        if not v.success or r.late()
    ]
    if failed:
        raise SynthesisError(f"{task_id}: the oracle did not solve {', '.join(failed)}")
    return _task(env, episode, task_id, split, difficulty, plan, asks)


def _play(episode: CampaignEpisode, task: Task) -> None:
    """The oracle's steps of one request, up to (not including) its reply."""
    oracle = Oracle()
    oracle.start(task, [])
    obs = Observation(kind="task", content=task.public.instruction)
    while True:
        action = oracle.act(obs)
        if isinstance(action, Message) and action.final:
            return
        obs = episode.step(action)
        if episode.done:
            return


def _task(
    env: CampaignWorld,
    episode: CampaignEpisode,
    task_id: str,
    split: Split,
    difficulty: int,
    plan: list[PlanStep],
    asks: list[Ask],
) -> Task:
    subs = [r.task for r in episode.requests]
    last = subs[-1].hidden
    preamble = PREAMBLE.format(k=env.level(difficulty).tasks)
    instruction = f"{preamble}\n\n{episode.announce(episode.requests[0])}"
    public = PublicTask(
        task_id=task_id,
        env_id=env.id,
        split=split,
        difficulty=difficulty,
        instruction=instruction,
        persona=subs[0].public.persona,
        rules=subs[0].public.rules,
        tools=_shown(env, subs),
    )
    profile: dict[str, Any] = {}
    for sub in subs:
        profile |= sub.hidden.profile
    level = env.level(difficulty)
    hidden = HiddenTask(
        task_id=task_id,
        goals=[g for sub in subs for g in sub.hidden.goals],
        gold_plan=plan,
        target=_joined([c for sub in subs for c in sub.hidden.target]),
        answers=last.answers,
        answer_goals=last.answer_goals,
        questions=last.questions,
        answer_key=last.answer_key,
        profile=profile,
        asks=asks,
        knobs={
            "tasks": len(subs),
            "events": len(episode.fired),
            "deadline_slack_pct": 0 if level.slack is None else round(level.slack * 100),
            "task_level": level.task_level,
            "width": sum(s.hidden.knobs.get("width", 1) for s in subs),
            "indirection": max(s.hidden.knobs.get("indirection", 0) for s in subs),
            "distractors": max(s.hidden.knobs.get("distractors", 0) for s in subs),
            "max_level": max(s.hidden.knobs.get("max_level", 0) for s in subs),
        },
        fingerprint=hex_hash(
            stable_hash("campaign", *(s.hidden.fingerprint for s in subs)) % 2**128
        ),
    )
    return Task(
        public=public, hidden=hidden, initial_hash=_initial_hash(env, split, difficulty, task_id)
    )


def _shown(env: CampaignWorld, subs: list[Task]) -> list[str]:
    """The tools a campaign shows: its requests' (all but at the starter level, which shows
    only each request's call) and ``close_request``."""
    shown = {CLOSE}.union(*(s.public.tools for s in subs))
    return [str(t["name"]) for t in env.tools("mcp") if t["name"] in shown]


def _initial_hash(env: CampaignWorld, split: Split, difficulty: int, task_id: str) -> str:
    fresh = CampaignEpisode(env, DEFAULT_CONFIG)
    try:
        index = int(task_id.rsplit("/", 1)[1])
        fresh.begin(split, difficulty, index)
        return fresh.state_hash()
    finally:
        fresh.close()


def _joined(changes: list[TargetChange]) -> list[TargetChange]:
    """Per row, its value before the first request that changed it and after the last."""
    out: dict[tuple[str, str], TargetChange] = {}
    for c in changes:
        first = out.get((c.table, c.id))
        before = c.before if first is None else first.before
        out[(c.table, c.id)] = TargetChange(table=c.table, id=c.id, before=before, after=c.after)
    return [c for c in out.values() if c.before != c.after]
