"""Colonel Blotto, played simultaneously: both seats split their soldiers over the fields at once,
and only then are the allocations revealed. Three rounds; each round every field has a seeded
value (1 to 4), the seat with more soldiers on a field takes its value (a tie takes nothing),
and the higher total over the rounds wins. Fields grow with difficulty (4 to 7; eight soldiers a
field to split). A seat's allocation is private until both are in. Scripted seats, weakest
first: 0 puts everything on one field, 1 splits evenly, 2 splits in proportion to the fields'
values, 3 splits by value first, then plays whichever of a few plans (split by value or evenly,
beat either by a soldier where it pays most, beat the other's last allocation) would have scored
best so far. The result is confirmed by re-scoring every round from the revealed allocations.
"""

from __future__ import annotations

import random
from typing import Any

from envfactory.contract.actions import Observation, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.results import ToolFailure
from envfactory.contract.tasks import Task
from envfactory.episode.seats import SeatPolicy
from envfactory.multiagent.environment import MultiAgentEnvironment
from envfactory.multiagent.episode import Action
from envfactory.multiagent.families.games.base import PLAYERS, TwoPlayerGame, other, seat_rng
from envfactory.multiagent.tools import SeatTool

ROUNDS = 3
PER_FIELD = 8
ALLOCATE = SeatTool(
    name="allocate",
    description="Split all your soldiers over the fields: one whole number per field, in order, "
    "adding up to your soldiers. The other seat decides at the same time.",
    properties={
        "troops": {
            "type": "array",
            "items": {"type": "integer", "minimum": 0, "maximum": 1000},
            "maxItems": 16,
        }
    },
    required=("troops",),
)


def score(values: list[int], mine: list[int], theirs: list[int]) -> int:
    return sum(v for v, a, b in zip(values, mine, theirs, strict=True) if a > b)


class BlottoEpisode(TwoPlayerGame):
    def setup(self, task: Task) -> None:
        game = Blotto.game(task)
        self.values: list[list[int]] = game["values"]
        self.soldiers = int(game["soldiers"])
        self.round = 0
        self.pending: dict[str, list[int]] = {}
        self.rounds: list[dict[str, Any]] = []
        self.points = dict.fromkeys(self.agents, 0)

    def fields(self) -> int:
        return len(self.values[0])

    def actors(self) -> list[str]:
        return [s for s in self.agents if s not in self.pending]

    def apply(self, seat: str, action: Action) -> str:
        _, args = self.tool_args(seat, action)
        troops = [int(t) for t in args["troops"]]
        if len(troops) != self.fields():
            raise ToolFailure(
                "rule_violation", f"give one number for each of the {self.fields()} fields"
            )
        if sum(troops) != self.soldiers:
            raise ToolFailure(
                "rule_violation", f"your numbers add up to {sum(troops)}, not {self.soldiers}"
            )
        self.pending[seat] = troops
        self.emit(f"{seat} has committed its allocation.", to=[other(seat)], by=seat)
        if len(self.pending) == len(self.agents):
            self._resolve()
        return f"You allocated {troops}."

    def _resolve(self) -> None:
        values = self.values[self.round]
        a, b = self.pending["player_0"], self.pending["player_1"]
        got = {"player_0": score(values, a, b), "player_1": score(values, b, a)}
        for seat, points in got.items():
            self.points[seat] += points
        self.rounds.append({"values": values, "troops": dict(self.pending), "points": got})
        self.emit(
            f"Round {self.round + 1}: player_0 sent {a}, player_1 sent {b}; values {values}. "
            f"Points: player_0 {got['player_0']}, player_1 {got['player_1']}.",
            kind="reveal",
        )
        self.pending = {}
        self.round += 1
        if self.round == ROUNDS:
            if self.points["player_0"] != self.points["player_1"]:
                self.winner = max(self.agents, key=lambda s: self.points[s])
            self.end()

    def briefing(self, seat: str) -> str:
        assert self.task is not None
        return f"{self.task.public.instruction}\nYou are {seat}."

    def private(self, seat: str) -> dict[str, Any]:
        mine = self.pending.get(seat)
        return {} if mine is None else {"round": self.round, "allocation": mine}

    def view(self, seat: str) -> dict[str, Any]:
        return {
            "round": self.round,
            "values": self.values[min(self.round, ROUNDS - 1)],
            "soldiers": self.soldiers,
            "points": dict(self.points),
            "history": self.rounds,
        }

    def prompt(self, seat: str) -> str:
        return (
            f"Round {self.round + 1} of {ROUNDS}. Field values: {self.values[self.round]}. "
            f"Points so far: you {self.points[seat]}, your opponent "
            f"{self.points[other(seat)]}. Split your {self.soldiers} soldiers over the "
            f"{self.fields()} fields: call allocate with troops, one number per field."
        )

    def outcome(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds,
            "points": dict(self.points),
            "winner": self.winner,
            "forfeit": self.forfeited,
            "summary": self.result_text(),
        }

    def state(self) -> Any:
        return {"round": self.round, "pending": self.pending, "points": self.points}

    def confirm(self) -> list[str]:
        problems = []
        points = dict.fromkeys(PLAYERS, 0)
        for r, record in enumerate(self.rounds):
            a, b = record["troops"]["player_0"], record["troops"]["player_1"]
            if sum(a) != self.soldiers or sum(b) != self.soldiers:
                problems.append(f"round {r}: an allocation does not use every soldier")
            points["player_0"] += score(self.values[r], a, b)
            points["player_1"] += score(self.values[r], b, a)
        if points != self.points:
            problems.append(f"the rounds add up to {points}, play counted {self.points}")
        if self.forfeited is None and self.status == "completed":
            best = max(points.values())
            leaders = [s for s, p in points.items() if p == best]
            winner = leaders[0] if len(leaders) == 1 else None
            if winner != self.winner:
                problems.append(f"the points make {winner} the winner, play said {self.winner}")
        return problems


class BlottoSeat:
    """A scripted player at ``strength`` 0 to 3 (see the module docstring)."""

    def __init__(self, strength: int, seed: int = 0) -> None:
        self.strength = strength
        self.seed = seed
        self.name = f"blotto:{strength}"
        self.rng = random.Random(seed)

    def start(self, task: Task, seat: str) -> None:
        self.rng = seat_rng(self.name, self.seed, task, seat)
        self.seat = seat

    def act(self, observation: Observation) -> ToolCall:
        state = observation.data["state"]
        troops = self.choose(state["values"], state["soldiers"], state["history"])
        return ToolCall(tool="allocate", arguments={"troops": troops})

    def choose(self, values: list[int], soldiers: int, history: list[dict[str, Any]]) -> list[int]:
        n = len(values)
        if self.strength == 0:
            out = [0] * n
            out[self.rng.randrange(n)] = soldiers
            return out
        if self.strength == 1:
            return split(soldiers, [1] * n)
        if self.strength == 3 and history:
            return self._best_reply(values, soldiers, history)
        return split(soldiers, values)

    def _best_reply(
        self, values: list[int], soldiers: int, history: list[dict[str, Any]]
    ) -> list[int]:
        """The plan of a small menu that would have scored best against the other seat so
        far (fictitious play): split by value or evenly, or beat either, or beat its last."""

        def menu(vals: list[int], past: list[dict[str, Any]]) -> dict[str, list[int]]:
            even = split(soldiers, [1] * len(vals))
            plans = {
                "value": split(soldiers, vals),
                "even": even,
                "beat_value": answer(vals, soldiers, split(soldiers, vals), self.rng),
                "beat_even": answer(vals, soldiers, even, self.rng),
            }
            if past:
                plans["beat_last"] = answer(
                    vals, soldiers, past[-1]["troops"][other(self.seat)], self.rng
                )
            return plans

        won: dict[str, int] = {}
        for r, record in enumerate(history):
            theirs = record["troops"][other(self.seat)]
            for name, plan in menu(record["values"], history[:r]).items():
                won[name] = won.get(name, 0) + score(record["values"], plan, theirs)
        plans = menu(values, history)
        return plans[max(plans, key=lambda name: (won.get(name, 0), name == "beat_last"))]


def split(soldiers: int, weights: list[int]) -> list[int]:
    """Soldiers in proportion to ``weights`` (largest remainders first)."""
    total = sum(weights)
    raw = [soldiers * w / total for w in weights]
    out = [int(r) for r in raw]
    order = sorted(range(len(raw)), key=lambda i: raw[i] - out[i], reverse=True)
    for i in order[: soldiers - sum(out)]:
        out[i] += 1
    return out


def answer(values: list[int], soldiers: int, theirs: list[int], rng: random.Random) -> list[int]:
    """Beat ``theirs`` by one soldier on the fields that pay most per soldier; the rest spread."""
    out = [0] * len(values)
    left = soldiers
    order = sorted(range(len(values)), key=lambda i: (-values[i] / (theirs[i] + 1), rng.random()))
    for i in order:
        need = theirs[i] + 1
        if need <= left:
            out[i], left = need, left - need
    for i in range(left):
        out[order[i % len(order)]] += 1
    return out


class Blotto(MultiAgentEnvironment):
    id = "blotto"
    agents = PLAYERS
    name = "Colonel Blotto"
    description = "Simultaneous-move Colonel Blotto over three rounds; scripted opponents 0-3."
    rules = (
        "Both seats allocate at the same time; allocations are revealed once both are in.",
        "On each field the seat with more soldiers takes the field's value; ties take nothing.",
        "After three rounds the higher total wins. Eight invalid moves in a row forfeit.",
    )

    def draw(self, rng: random.Random, difficulty: int) -> dict[str, Any]:
        fields = difficulty + 3
        values = [[rng.randint(1, 4) for _ in range(fields)] for _ in range(ROUNDS)]
        return {"values": values, "soldiers": PER_FIELD * fields}

    def instruction(self, game: dict[str, Any], difficulty: int) -> str:
        fields = len(game["values"][0])
        return (
            f"Colonel Blotto between player_0 and player_1: {ROUNDS} rounds, {fields} fields, "
            f"{game['soldiers']} soldiers each per round. Both decide at once each round."
        )

    def knobs(self, game: dict[str, Any], difficulty: int) -> dict[str, int]:
        return {"opponent": self.opponent(difficulty), "fields": len(game["values"][0])}

    def seat_tools(self, seat: str) -> list[SeatTool]:
        return [ALLOCATE]

    def scripted(self, seat: str, strength: int, seed: int = 0) -> SeatPolicy:
        return BlottoSeat(strength, seed)

    def episode(self, config: EpisodeConfig | None = None) -> BlottoEpisode:
        return BlottoEpisode(self, config)
