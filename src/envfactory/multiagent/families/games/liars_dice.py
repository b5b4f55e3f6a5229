"""Liar's dice for two seats: secret dice, rising bids, one challenge per round.

Each seat starts with ``dice`` dice (2 to 5 by difficulty), rolled anew each round from the
task's seeded rolls and seen only by their owner. A bid claims that at least ``quantity``
dice on the table show ``face``; each bid must raise the last (more dice, or as many showing a
higher face). Instead of raising, a seat may challenge: every die is revealed, and whoever was
wrong (the bidder if fewer dice show the face, else the challenger) loses a die and opens the
next round. A seat without dice loses. Scripted seats, weakest first: 0 bids and challenges at
random; 1 weighs the odds of each bid from its own dice; 2 bids its most common face and
challenges bids above half the dice; 3 weighs the odds and reads a bid as a sign that the
bidder holds that face. The result is confirmed by re-counting every challenge from the
seeded rolls.
"""

from __future__ import annotations

import math
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

FACES = 6
BID = SeatTool(
    name="bid",
    description="Claim that at least `quantity` dice on the table (yours and your opponent's) "
    "show `face`. It must raise the last bid: more dice, or as many with a higher face.",
    properties={
        "quantity": {"type": "integer", "minimum": 1, "maximum": 10},
        "face": {"type": "integer", "minimum": 1, "maximum": FACES},
    },
    required=("quantity", "face"),
)
CHALLENGE = SeatTool(
    name="challenge",
    description="Call the last bid a lie: all dice are shown and whoever was wrong loses a die.",
)


def raises(bid: tuple[int, int], last: tuple[int, int] | None) -> bool:
    return last is None or bid[0] > last[0] or (bid[0] == last[0] and bid[1] > last[1])


def at_least(k: int, n: int, p: float = 1 / FACES) -> float:
    """P(at least ``k`` of ``n`` unseen dice show a given face)."""
    if k <= 0:
        return 1.0
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


class LiarsDiceEpisode(TwoPlayerGame):
    def setup(self, task: Task) -> None:
        game = LiarsDice.game(task)
        self.rolls: list[list[list[int]]] = game["rolls"]
        self.start = int(game["dice"])
        self.count = dict.fromkeys(self.agents, self.start)
        self.round = 0
        self.bids: list[tuple[str, int, int]] = []
        self.to_move = PLAYERS[0]
        self.rounds: list[dict[str, Any]] = []

    def dice(self, seat: str, round_: int | None = None) -> list[int]:
        r = self.round if round_ is None else round_
        return sorted(self.rolls[r][PLAYERS.index(seat)][: self.count_at(seat, r)])

    def count_at(self, seat: str, round_: int) -> int:
        if round_ == self.round:
            return self.count[seat]
        return int(self.rounds[round_]["dice"][seat])

    def last(self) -> tuple[int, int] | None:
        return (self.bids[-1][1], self.bids[-1][2]) if self.bids else None

    def actors(self) -> list[str]:
        return [self.to_move]

    def apply(self, seat: str, action: Action) -> str:
        name, args = self.tool_args(seat, action)
        total = sum(self.count.values())
        if name == "challenge":
            if not self.bids:
                raise ToolFailure("rule_violation", "there is no bid to challenge yet; bid first")
            return self._challenge(seat)
        bid = (int(args["quantity"]), int(args["face"]))
        if bid[0] > total:
            raise ToolFailure("rule_violation", f"there are only {total} dice on the table")
        if not raises(bid, self.last()):
            raise ToolFailure("rule_violation", f"{bid[0]} x {bid[1]} does not raise {self.last()}")
        self.bids.append((seat, *bid))
        self.emit(f"{seat} bids {bid[0]} x {bid[1]}.", to=[other(seat)], by=seat)
        self.to_move = other(seat)
        return f"You bid {bid[0]} x {bid[1]}."

    def _challenge(self, seat: str) -> str:
        bidder, quantity, face = self.bids[-1]
        shown = {s: self.dice(s) for s in PLAYERS}
        real = sum(d == face for ds in shown.values() for d in ds)
        loser = seat if real >= quantity else bidder
        self.rounds.append(
            {
                "bids": [list(b) for b in self.bids],
                "challenger": seat,
                "dice": dict(self.count),
                "shown": shown,
                "loser": loser,
            }
        )
        self.count[loser] -= 1
        self.emit(
            f"{seat} challenges {bidder}'s {quantity} x {face}. player_0 showed "
            f"{shown['player_0']}, player_1 showed {shown['player_1']}: {real} x {face}. "
            f"{loser} loses a die.",
            kind="reveal",
            by=seat,
        )
        if self.count[loser] == 0:
            self.winner = other(loser)
            self.end()
        else:
            self.round += 1
            self.bids = []
            self.to_move = loser
            self.emit(f"Round {self.round + 1}: new dice are rolled; {loser} bids first.")
        return "You challenge."

    def briefing(self, seat: str) -> str:
        assert self.task is not None
        return f"{self.task.public.instruction}\nYou are {seat}."

    def private(self, seat: str) -> dict[str, Any]:
        return {} if self.done else {"round": self.round, "dice": self.dice(seat)}

    def view(self, seat: str) -> dict[str, Any]:
        return {
            "round": self.round,
            "dice_count": dict(self.count),
            "bids": [list(b) for b in self.bids],
            "to_move": None if self.done else self.to_move,
        }

    def prompt(self, seat: str) -> str:
        last = self.last()
        bid = f"The last bid is {last[0]} x {last[1]}." if last else "No bid yet this round."
        total = sum(self.count.values())
        can = "bid higher or challenge" if last else "bid"
        return (
            f"Round {self.round + 1}. Your dice: {' '.join(map(str, self.dice(seat)))}. "
            f"Dice on the table: {total} (you {self.count[seat]}, your opponent "
            f"{self.count[other(seat)]}). {bid} Your move: {can}."
        )

    def outcome(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds,
            "winner": self.winner,
            "forfeit": self.forfeited,
            "summary": self.result_text(),
        }

    def state(self) -> Any:
        return {"round": self.round, "bids": self.bids, "count": self.count, "done": self.done}

    def confirm(self) -> list[str]:
        problems = []
        count = dict.fromkeys(PLAYERS, self.start)
        for r, record in enumerate(self.rounds):
            if record["dice"] != count:
                problems.append(f"round {r} started with {record['dice']}, expected {count}")
            bidder, quantity, face = record["bids"][-1]
            dice = [sorted(self.rolls[r][PLAYERS.index(s)][: count[s]]) for s in PLAYERS]
            real = sum(d == face for ds in dice for d in ds)
            loser = record["challenger"] if real >= quantity else bidder
            if loser != record["loser"]:
                problems.append(f"round {r}: {real} x {face} makes {loser} the loser")
            count = {**count, loser: count[loser] - 1}
        winner = next((other(s) for s, n in count.items() if n == 0), None)
        if self.forfeited is None and winner != self.winner:
            problems.append(f"the rounds make {winner} the winner, play said {self.winner}")
        return problems


class LiarsDiceSeat:
    """A scripted player at ``strength`` 0 to 3 (see the module docstring)."""

    def __init__(self, strength: int, seed: int = 0) -> None:
        self.strength = strength
        self.seed = seed
        self.name = f"liars_dice:{strength}"
        self.rng = random.Random(seed)

    def start(self, task: Task, seat: str) -> None:
        self.rng = seat_rng(self.name, self.seed, task, seat)
        self.seat = seat

    def act(self, observation: Observation) -> ToolCall:
        state, mine = observation.data["state"], observation.data["private"]["dice"]
        total = sum(state["dice_count"].values())
        last = tuple(state["bids"][-1][1:]) if state["bids"] else None
        choice = self.choose(mine, total, last)
        if choice is None:
            return ToolCall(tool="challenge", arguments={})
        return ToolCall(tool="bid", arguments={"quantity": choice[0], "face": choice[1]})

    def choose(
        self, mine: list[int], total: int, last: tuple[int, int] | None
    ) -> tuple[int, int] | None:
        """A bid, or None to challenge."""
        unseen = total - len(mine)
        bids = [(q, f) for q in range(1, total + 1) for f in range(1, FACES + 1)]
        higher = [b for b in bids if raises(b, last)]
        if self.strength == 0:
            if last is not None and (not higher or self.rng.random() < 0.3):
                return None
            return self.rng.choice(higher[: FACES * 2])
        if self.strength == 2:
            if last is not None and (last[0] > total / 2 or not higher):
                return None
            face = max(range(1, FACES + 1), key=lambda f: (mine.count(f), f))
            ok = [b for b in higher if b[1] == face]
            return ok[0] if ok else None
        odds = {b: at_least(b[0] - mine.count(b[1]), unseen) for b in bids}
        if last is not None:
            # a bidder usually holds the face it bids: the strongest seat reads that in
            held = 1 if self.strength == 3 and unseen else 0
            believed = at_least(last[0] - mine.count(last[1]) - held, unseen - held)
            if believed < 0.5 or not higher:
                return None
        return max(higher, key=lambda b: (odds[b] >= 0.5, mine.count(b[1]), -b[0], odds[b]))


class LiarsDice(MultiAgentEnvironment):
    id = "liars_dice"
    agents = PLAYERS
    name = "Liar's dice"
    description = "Two-seat liar's dice with secret dice and seeded rolls; scripted opponents 0-3."
    rules = (
        "A bid claims at least `quantity` dice on the table show `face` (no wild faces).",
        "Each bid must raise the last: more dice, or as many dice showing a higher face.",
        "Challenging reveals every die; whoever was wrong loses a die and bids first next.",
        "A seat with no dice left loses. Eight invalid moves in a row forfeit the game.",
    )

    def draw(self, rng: random.Random, difficulty: int) -> dict[str, Any]:
        dice = difficulty + 1
        rolls = [
            [[rng.randint(1, FACES) for _ in range(dice)] for _ in PLAYERS]
            for _ in range(2 * dice - 1)
        ]
        return {"dice": dice, "rolls": rolls}

    def instruction(self, game: dict[str, Any], difficulty: int) -> str:
        return (
            f"Liar's dice between player_0 and player_1, {game['dice']} dice each. player_0 "
            "bids first. Keep your dice longer than your opponent keeps theirs."
        )

    def knobs(self, game: dict[str, Any], difficulty: int) -> dict[str, int]:
        return {"opponent": self.opponent(difficulty), "dice": int(game["dice"])}

    def seat_tools(self, seat: str) -> list[SeatTool]:
        return [BID, CHALLENGE]

    def scripted(self, seat: str, strength: int, seed: int = 0) -> SeatPolicy:
        return LiarsDiceSeat(strength, seed)

    def episode(self, config: EpisodeConfig | None = None) -> LiarsDiceEpisode:
        return LiarsDiceEpisode(self, config)
