"""500 sessions with interleaved calls end where a replay of each session's own calls ends;
no response carries a hidden task field."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import httpx
from serving_helpers import TRAINER_TOKEN, assert_no_hidden

from envfactory.contract.tasks import Task
from envfactory.db.environment import DatabaseEnvironment
from envfactory.serving.server import Running

TRAINER = {"X-Trainer-Token": TRAINER_TOKEN}

SESSIONS = 500


def plan(task: Task, rng: random.Random) -> list[dict[str, Any]]:
    """Part of the gold plan, with noise: a bad call, a malformed one, sometimes a reply."""
    steps: list[dict[str, Any]] = [
        {"type": "tool_call", "tool": s.tool, "arguments": dict(s.arguments)}
        for s in task.hidden.gold_plan[: rng.randint(0, len(task.hidden.gold_plan))]
    ]
    steps.insert(
        rng.randint(0, len(steps)),
        {"type": "tool_call", "tool": "get_order", "arguments": {"order_id": "ORD-99999"}},
    )
    steps.insert(
        rng.randint(0, len(steps)),
        {"type": "tool_call", "tool": task.public.tools[0], "arguments": "{not json"},
    )
    if rng.random() < 0.3:
        steps.append({"type": "message", "content": "All done.", "final": True})
    return steps


async def run(
    url: str, tasks: list[Task], plans: list[list[dict[str, Any]]]
) -> tuple[list[str], list[dict[str, Any]], list[str]]:
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as http:
        gate = asyncio.Semaphore(64)
        bodies: list[str] = []

        async def opened(task: Task, k: int) -> str:
            async with gate:
                if k % 2:
                    r = await http.post("/envfactory/sessions", json={"task_id": task.task_id})
                    bodies.append(r.text)
                    return str(r.json()["session_id"])
                sid = (await http.post("/create_session")).json()["sid"]
                spec = {"task_spec": {"task_id": task.task_id}}
                r = await http.post("/create", json=spec, headers={"X-Session-ID": sid})
                r.raise_for_status()
                return str(sid)

        sids = await asyncio.gather(*(opened(t, k) for k, t in enumerate(tasks)))

        async def act(k: int, action: dict[str, Any]) -> None:
            async with gate:
                if k % 2:
                    r = await http.post(f"/envfactory/sessions/{sids[k]}/step", json=action)
                else:
                    if action["type"] == "message":
                        call = {"name": "finish", "input": {"message": action["content"]}}
                    else:
                        args = action["arguments"]
                        call = {"name": action["tool"], "input": args}
                        if isinstance(args, str):  # ORS input is an object: send as given
                            call = {"name": action["tool"], "input": {"raw": args}}
                    r = await http.post(
                        "/retail/call", json=call, headers={"X-Session-ID": sids[k]}
                    )
                assert r.status_code == 200, r.text
                bodies.append(r.text)

        rounds = max(len(p) for p in plans)
        for i in range(rounds):  # every session's i-th call, all at once, in shuffled order
            batch = [(k, p[i]) for k, p in enumerate(plans) if i < len(p)]
            random.Random(i).shuffle(batch)
            await asyncio.gather(*(act(k, a) for k, a in batch))
        states = await asyncio.gather(*(http.get(f"/envfactory/sessions/{s}") for s in sids))
        verdicts = await asyncio.gather(
            *(http.get(f"/envfactory/trainer/sessions/{s}/verdict", headers=TRAINER) for s in sids)
        )
        bodies += [r.text for r in states] + [r.text for r in verdicts]
        await asyncio.gather(*(http.delete(f"/envfactory/sessions/{s}") for s in sids))
        return [r.json()["state_hash"] for r in states], [r.json() for r in verdicts], bodies


def test_interleaved_sessions_equal_their_own_replays(
    server: Running, world: DatabaseEnvironment
) -> None:
    rng = random.Random(5)
    tasks = [world.task("train", 1 + k % 5, k // 5) for k in range(SESSIONS)]
    plans = [plan(t, rng) for t in tasks]
    hashes, verdicts, bodies = asyncio.run(run(server.url, tasks, plans))
    for k, (task, steps) in enumerate(zip(tasks, plans, strict=True)):
        episode = world.episode()
        episode.reset(task)
        for action in steps:
            if (
                k % 2 == 0
                and action["type"] == "tool_call"
                and isinstance(action["arguments"], str)
            ):
                action = {**action, "arguments": {"raw": action["arguments"]}}
            episode.step(action)
        assert hashes[k] == episode.state_hash(), f"session {k} ({task.task_id}) diverged"
        replay = episode.evaluate()
        assert verdicts[k]["reward"] == replay.reward and verdicts[k]["status"] == replay.status
        episode.close()
    text = "\n".join(bodies)
    for key in ("gold_plan", "fingerprint", "knobs", "answers", "profile", "asks"):
        assert f'"{key}"' not in text and f'\\"{key}\\"' not in text
    for task in tasks[:50]:
        assert_no_hidden(text, task)
    assert {v["status"] for v in verdicts} == {"completed", "truncated"}
