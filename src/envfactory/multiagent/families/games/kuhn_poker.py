"""Kuhn poker: a match of six hands with a three-card deck (J < Q < K), one card each.

Both seats ante one chip a hand; the first to act checks or bets one; facing a bet, a seat
calls or folds. The deals are seeded per task (and decide its split); the first to act
alternates. A seat's card is private until a showdown reveals both. The reward is the share
of the chips at stake won: 0.5 + net / (4 x hands). Scripted seats, weakest first: 0 plays at
random, 1 always checks or calls, 2 bets and calls with a king only, 3 plays the game's
equilibrium (alpha = 1/3). The result is confirmed by re-scoring every hand from the deals.
"""

from __future__ import annotations

import itertools
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

CARDS = ("J", "Q", "K")
HANDS = 6
MOVE = SeatTool(
    name="act",
    description="Your poker move: check or bet (nobody has bet yet), call or fold (facing a bet).",
    properties={"move": {"type": "string", "enum": ["check", "bet", "call", "fold"]}},
    required=("move",),
)
TERMINAL = {"cc", "bc", "bf", "cbc", "cbf"}  # check/bet/call/fold sequences that end a hand


def legal(line: str) -> list[str]:
    """The moves open after ``line`` (a string of c(heck)/b(et)/c(all)/f(old) letters)."""
    return ["call", "fold"] if line.endswith("b") else ["check", "bet"]


def settle(line: str, first_card: str, second_card: str) -> int:
    """Chips the first actor wins (negative: loses) in a finished hand."""
    if line in ("bf", "cbf"):
        return 1 if line == "bf" else -1
    stake = 2 if "b" in line else 1
    return stake if CARDS.index(first_card) > CARDS.index(second_card) else -stake


class KuhnEpisode(TwoPlayerGame):
    def setup(self, task: Task) -> None:
        self.deals: list[str] = KuhnPoker.game(task)["deals"]
        self.hand = 0
        self.line = ""  # moves of the current hand
        self.hands: list[dict[str, Any]] = []
        self.net = dict.fromkeys(self.agents, 0)
        self.emit(f"Hand 1 of {HANDS}.")

    def first(self, hand: int) -> str:
        return PLAYERS[hand % 2]

    def card(self, seat: str) -> str:
        return self.deals[self.hand][PLAYERS.index(seat)]

    def actors(self) -> list[str]:
        first = self.first(self.hand)
        return [first if len(self.line) % 2 == 0 else other(first)]

    def apply(self, seat: str, action: Action) -> str:
        _, args = self.tool_args(seat, action)
        move = str(args["move"])
        if move not in legal(self.line):
            raise ToolFailure(
                "rule_violation", f"{move} is not open now; you may {' or '.join(legal(self.line))}"
            )
        self.line += move[0]
        self.emit(f"{seat} {move}s.", to=[other(seat)], by=seat)
        if self.line in TERMINAL:
            self._settle()
        return f"You {move}."

    def _settle(self) -> None:
        first = self.first(self.hand)
        second = other(first)
        won = settle(self.line, self.card(first), self.card(second))
        self.net[first] += won
        self.net[second] -= won
        winner = first if won > 0 else second
        record: dict[str, Any] = {"first": first, "moves": self.line, "won": abs(won)}
        if self.line.endswith("f"):
            text = f"{other(winner)} folds; {winner} wins {abs(won)} chip(s)."
        else:
            cards = {s: self.card(s) for s in PLAYERS}
            record["cards"] = cards
            text = (
                f"Showdown: player_0 shows {cards['player_0']}, player_1 shows "
                f"{cards['player_1']}; {winner} wins {abs(won)} chip(s)."
            )
        record["winner"] = winner
        self.hands.append(record)
        self.emit(text, kind="reveal")
        self.hand += 1
        self.line = ""
        if self.hand == HANDS:
            self.end()
        else:
            self.emit(f"Hand {self.hand + 1} of {HANDS}.")

    def forfeit(self, seat: str) -> None:
        self.forfeited = seat
        self.end()

    def rewards(self) -> dict[str, float]:
        if self.forfeited:
            return {s: 0.0 if s == self.forfeited else 1.0 for s in self.agents}
        return {s: 0.5 + self.net[s] / (4 * HANDS) for s in self.agents}

    def briefing(self, seat: str) -> str:
        assert self.task is not None
        return f"{self.task.public.instruction}\nYou are {seat}."

    def private(self, seat: str) -> dict[str, Any]:
        return {} if self.done else {"hand": self.hand, "card": self.card(seat)}

    def view(self, seat: str) -> dict[str, Any]:
        return {
            "hand": min(self.hand, HANDS - 1),
            "moves": self.line,
            "legal": [] if self.done else legal(self.line),
            "chips": dict(self.net),
            "first": self.first(min(self.hand, HANDS - 1)),
        }

    def prompt(self, seat: str) -> str:
        moves = " ".join(m for m in self.line) or "none yet"
        return (
            f"Hand {self.hand + 1} of {HANDS}. Your card: {self.card(seat)}. Moves so far this "
            f"hand: {moves}. Chips won so far: {self.net[seat]:+d}. Your move: call act with "
            f"{' or '.join(legal(self.line))}."
        )

    def outcome(self) -> dict[str, Any]:
        net = dict(self.net)
        if self.forfeited:
            summary = f"{self.forfeited} forfeits the match."
        else:
            summary = (
                f"The match is over: player_0 {net['player_0']:+d}, player_1 {net['player_1']:+d}."
            )
        return {"hands": self.hands, "net": net, "forfeit": self.forfeited, "summary": summary}

    def state(self) -> Any:
        return {"hand": self.hand, "moves": self.line, "net": self.net, "done": self.done}

    def confirm(self) -> list[str]:
        problems = []
        net = dict.fromkeys(PLAYERS, 0)
        for h, record in enumerate(self.hands):
            moves, first = record["moves"], record["first"]
            if moves not in TERMINAL or first != self.first(h):
                problems.append(f"hand {h} has an unfinished or out-of-turn history {moves!r}")
                continue
            a, b = self.deals[h][PLAYERS.index(first)], self.deals[h][PLAYERS.index(other(first))]
            won = settle(moves, a, b)
            net[first] += won
            net[other(first)] -= won
        if net != self.net:
            problems.append(f"the hands add up to {net}, play counted {self.net}")
        if self.status == "completed" and not self.forfeited and len(self.hands) != HANDS:
            problems.append(f"the match ended after {len(self.hands)} of {HANDS} hands")
        return problems


class KuhnSeat:
    """A scripted player at ``strength`` 0 to 3 (see the module docstring)."""

    ALPHA = 1 / 3

    def __init__(self, strength: int, seed: int = 0) -> None:
        self.strength = strength
        self.seed = seed
        self.name = f"kuhn_poker:{strength}"
        self.rng = random.Random(seed)

    def start(self, task: Task, seat: str) -> None:
        self.rng = seat_rng(self.name, self.seed, task, seat)

    def act(self, observation: Observation) -> ToolCall:
        data = observation.data
        move = self.choose(data["private"]["card"], data["state"]["moves"])
        return ToolCall(tool="act", arguments={"move": move})

    def choose(self, card: str, moves: str) -> str:
        options = legal(moves)
        if self.strength == 0:
            return self.rng.choice(options)
        if self.strength == 1:
            return "call" if "call" in options else "check"
        if self.strength == 2:
            if "bet" in options:
                return "bet" if card == "K" else "check"
            return "call" if card == "K" else "fold"
        return self._equilibrium(card, moves)

    def _equilibrium(self, card: str, moves: str) -> str:
        a, r = self.ALPHA, self.rng.random()
        if moves == "":  # first to act
            bet = {"J": a, "Q": 0.0, "K": 3 * a}[card]
            return "bet" if r < bet else "check"
        if moves == "c":  # second, after a check
            bet = {"J": 1 / 3, "Q": 0.0, "K": 1.0}[card]
            return "bet" if r < bet else "check"
        if moves == "b":  # second, facing a bet
            call = {"J": 0.0, "Q": 1 / 3, "K": 1.0}[card]
            return "call" if r < call else "fold"
        call = {"J": 0.0, "Q": a + 1 / 3, "K": 1.0}[card]  # first, after check-bet
        return "call" if r < call else "fold"


class KuhnPoker(MultiAgentEnvironment):
    id = "kuhn_poker"
    agents = PLAYERS
    name = "Kuhn poker"
    description = (
        "Six-hand Kuhn poker matches for two seats; private cards; scripted opponents 0-3."
    )
    rules = (
        "Each hand both seats ante one chip and get one card of J, Q, K (K is highest).",
        "The first to act checks or bets one chip; facing a bet, call or fold; after a check, "
        "the other may check (showdown) or bet.",
        "At a showdown the higher card takes the pot. The first to act alternates by hand.",
        "Eight invalid moves in a row forfeit the match.",
    )

    def space(self) -> list[dict[str, Any]]:
        deals = ["".join(d) for d in itertools.permutations(CARDS, 2)]  # "QK": Q for player_0
        return [{"deals": list(hands)} for hands in itertools.product(deals, repeat=HANDS)]

    def instruction(self, game: dict[str, Any], difficulty: int) -> str:
        return (
            f"A match of {HANDS} hands of Kuhn poker between player_0 and player_1 (player_0 "
            "acts first in the first hand). Win as many chips as you can."
        )

    def seat_tools(self, seat: str) -> list[SeatTool]:
        return [MOVE]

    def scripted(self, seat: str, strength: int, seed: int = 0) -> SeatPolicy:
        return KuhnSeat(strength, seed)

    def episode(self, config: EpisodeConfig | None = None) -> KuhnEpisode:
        return KuhnEpisode(self, config)
