"""Private information never appears in another seat's observation.

Many episodes of every world with private information, seats of every scripted level; at
every step every seat's observation is taken (and each step's own observation), and each is
scanned for what the other seats hold privately at that moment: the structured secret as the
episode keeps it, and the sentences that show it to its owner. What a seat chose to say in a
message is communication, not a leak, and is left out of the scan.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from multiagent_helpers import world

from envfactory.contract.actions import Observation
from envfactory.multiagent.environment import MultiAgentEnvironment
from envfactory.multiagent.episode import MultiAgentEpisode

PRIVATE = ["kuhn_poker", "liars_dice", "blotto", "negotiation", "cooperation", "proposer_solver"]
EPISODES = 60


def secrets(ep: MultiAgentEpisode, seat: str) -> list[str]:
    """What only ``seat`` may see right now, as text that would betray it."""
    private = ep.private(seat)
    if not private:
        return []
    out = [json.dumps(private, sort_keys=True), json.dumps(private)]
    for key, value in private.items():
        if key in ("round", "hand"):  # which round it is: public
            continue
        out.append(json.dumps({key: value})[1:-1])  # '"card": "K"' as it sits in a JSON body
        if key == "card":
            out.append(f"Your card: {value}.")
        if key == "dice":
            out.append(f"Your dice: {' '.join(map(str, value))}.")
        if key == "values":
            out.append(", ".join(f"{k} {v} each" for k, v in value.items()))
        if key == "outside_option":
            out.append(f"Your outside option (what you get without a deal): {value}")
        if key in ("request", "plan"):
            out.append(value if isinstance(value, str) else json.dumps(value))
    return out


def scanned(obs: Observation, owner: str) -> str:
    """The observation's text and data, less the messages ``owner`` sent."""
    data = dict(obs.data or {})
    events = [
        e for e in data.get("events", []) if not (e["kind"] == "message" and e["by"] == owner)
    ]
    sent = [e["text"] for e in data.get("events", []) if e not in events]
    text = obs.content
    for s in sent:
        text = text.replace(s, "")
    data["events"] = events
    return text + "\n" + json.dumps(data)


def views(
    env: MultiAgentEnvironment, index: int
) -> Iterator[tuple[MultiAgentEpisode, dict[str, list[Observation]]]]:
    """Play an episode; after every step, every seat's current observations."""
    task = env.task(env.splits[index % 3], env.difficulties[index % len(env.difficulties)], index)
    levels = env.strengths
    players = {
        s: env.scripted(s, levels[(index + i) % len(levels)], seed=index)
        for i, s in enumerate(env.agents)
    }
    ep = env.episode()
    ep.reset(task)
    for seat, p in players.items():
        p.start(task, seat)
    while not ep.done:
        for seat in ep.current_actors():
            before = {s: [ep.observe(s)] for s in env.agents}
            yield ep, before
            mine = ep.step(players[seat].act(before[seat][0]), seat=seat)
            yield ep, {seat: [mine]}
            if ep.done:
                break
    ep.close()


@pytest.mark.parametrize("env_id", PRIVATE)
def test_no_seat_sees_another_seats_secrets(env_id: str) -> None:
    env = world(env_id)
    scans = 0
    for index in range(EPISODES):
        for ep, seen in views(env, index):
            held = {s: secrets(ep, s) for s in env.agents}
            for viewer, observations in seen.items():
                own = set(held[viewer])
                for obs in observations:
                    for owner in env.agents:
                        if owner == viewer:
                            continue
                        body = scanned(obs, owner)
                        for secret in held[owner]:
                            if secret in own or len(secret) < 6:
                                continue
                            assert secret not in body, (
                                ep.task.task_id if ep.task else "",
                                viewer,
                                secret,
                            )
                            scans += 1
    assert scans > 500  # the scan looked at something


def test_back_tool_results_stay_with_the_back() -> None:
    env = world("cooperation")
    checked = 0
    for index in range(20):
        results: list[str] = []
        for _, seen in views(env, index):
            for viewer, observations in seen.items():
                for obs in observations:
                    if viewer == "back" and obs.kind == "tool_result" and len(obs.content) > 40:
                        results.append(obs.content)
                    if viewer == "front":
                        body = scanned(obs, "back")
                        assert not any(r in body for r in results)
                        checked += len(results)
    assert checked > 50
