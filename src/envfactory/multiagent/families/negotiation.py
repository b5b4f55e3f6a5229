"""Multi-issue negotiation: split a pool of items between two seats with private values.

Each seat values the item types differently (seeded, private) and has a private outside
option: what it gets if there is no deal. Seats take turns; on its turn a seat may propose a
split (what it keeps; the rest goes to the other), accept the other's standing proposal, or
walk away, and may message the other at any time. After ``offers`` proposals without a deal
both take their outside options. The reward is the seat's gain over its outside option as a
share of the most it could gain: max(0, u(deal) - outside) / (u(everything) - outside); no
deal scores 0. A deal is checked exactly: it is the other seat's last proposal, it splits
every item, and the utilities are recomputed from the private values.

Scripted seats, weakest first: 0 proposes and accepts at random; 1 asks for little and takes
any deal above its outside option; 2 asks for 60% of its value and accepts fair deals; 3 asks
for 90% and concedes slowly towards the deadline (Boulware), giving first the items the other
keeps asking for.
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
from envfactory.multiagent.tools import SeatTool, message_tool

ITEMS = ("books", "hats", "balls", "pens", "mugs", "lamps", "maps")
OFFERS = 10
Split_ = dict[str, int]


def propose_tool() -> SeatTool:
    return SeatTool(
        name="propose",
        description="Propose a split: how many of each item you keep; the other seat gets the "
        "rest. Optionally say something with it.",
        properties={
            "keep": {
                "type": "object",
                "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 100},
                "description": "item name -> how many you keep (items left out: you keep none)",
            },
            "message": {"type": "string", "maxLength": 2000},
        },
        required=("keep",),
    )


ACCEPT = SeatTool(name="accept", description="Accept the other seat's standing proposal.")
WALK = SeatTool(
    name="walk_away", description="End the negotiation without a deal: both take outside options."
)


def utility(values: Split_, keep: Split_) -> int:
    return sum(values[k] * n for k, n in keep.items())


class NegotiationEpisode(TwoPlayerGame):
    messaging = True

    def setup(self, task: Task) -> None:
        game = Negotiation.game(task)
        self.counts: Split_ = dict(game["counts"])
        self.values: dict[str, Split_] = {s: dict(game["values"][s]) for s in PLAYERS}
        self.outside: dict[str, int] = dict(game["outside"])
        self.offers = int(game["offers"])
        self.proposals: list[dict[str, Any]] = []
        self.deal: dict[str, Any] | None = None
        self.walked: str | None = None
        self.to_move = PLAYERS[0]

    def total(self, seat: str) -> int:
        return utility(self.values[seat], self.counts)

    def reward_of(self, seat: str, keep: Split_) -> float:
        span = self.total(seat) - self.outside[seat]
        return (
            0.0
            if span <= 0
            else max(0.0, (utility(self.values[seat], keep) - self.outside[seat]) / span)
        )

    def actors(self) -> list[str]:
        return [self.to_move]

    def apply(self, seat: str, action: Action) -> str:
        name, args = self.tool_args(seat, action)
        if name == "accept":
            return self._accept(seat)
        if name == "walk_away":
            self.walked = seat
            self.emit(f"{seat} walks away: no deal.", to=[other(seat)], by=seat)
            self.end()
            return "You walk away: no deal."
        keep = self._split(args["keep"])
        give = {k: self.counts[k] - n for k, n in keep.items()}
        self.proposals.append({"by": seat, "keep": keep, "give": give})
        said = str(args.get("message") or "")
        text = f"{seat} proposes: they keep {_show(keep)}; you get {_show(give)}."
        if said:
            text += f' They say: "{said}"'
        data = {"from": seat, "to": other(seat), "content": said} if said else None
        self.emit(text, to=[other(seat)], by=seat, kind="message" if said else "move", data=data)
        if len(self.proposals) >= self.offers:
            self.emit(f"{seat}'s proposal was the last one allowed; {other(seat)} may accept it.")
        self.to_move = other(seat)
        return f"You propose to keep {_show(keep)} and give {_show(give)}."

    def _split(self, raw: dict[str, Any]) -> Split_:
        unknown = sorted(set(raw) - set(self.counts))
        if unknown:
            raise ToolFailure(
                "invalid_arguments",
                f"there are no {unknown[0][:30]!r}; items: {', '.join(self.counts)}",
                field="keep",
            )
        keep = {k: int(raw.get(k, 0)) for k in self.counts}
        for k, n in keep.items():
            if n > self.counts[k]:
                raise ToolFailure(
                    "rule_violation", f"there are only {self.counts[k]} {k}", field="keep"
                )
        return keep

    def standing(self, seat: str) -> dict[str, Any] | None:
        """The other seat's proposal that ``seat`` may accept now."""
        if self.proposals and self.proposals[-1]["by"] == other(seat):
            return self.proposals[-1]
        return None

    def _accept(self, seat: str) -> str:
        offer = self.standing(seat)
        if offer is None:
            raise ToolFailure("rule_violation", "there is no proposal of the other seat to accept")
        self.deal = {"proposer": offer["by"], "keep": offer["keep"], "give": offer["give"]}
        self.emit(f"{seat} accepts: deal.", to=[other(seat)], by=seat)
        self.end()
        return "You accept: deal."

    def allocation(self) -> dict[str, Split_] | None:
        if self.deal is None:
            return None
        proposer = self.deal["proposer"]
        return {proposer: self.deal["keep"], other(proposer): self.deal["give"]}

    def rewards(self) -> dict[str, float]:
        split = self.allocation()
        if split is None:
            return dict.fromkeys(self.agents, 0.0)
        return {s: self.reward_of(s, split[s]) for s in self.agents}

    def forfeit(self, seat: str) -> None:
        self.walked = seat
        self.end()

    def briefing(self, seat: str) -> str:
        assert self.task is not None
        values = ", ".join(f"{k} {v} each" for k, v in self.values[seat].items())
        return (
            f"{self.task.public.instruction}\nYou are {seat}. Your private values: {values}. "
            f"Your outside option (what you get without a deal): {self.outside[seat]}. "
            f"Everything together is worth {self.total(seat)} to you."
        )

    def private(self, seat: str) -> dict[str, Any]:
        return {"values": self.values[seat], "outside_option": self.outside[seat]}

    def view(self, seat: str) -> dict[str, Any]:
        return {
            "counts": self.counts,
            "proposals": self.proposals,
            "offers_left": max(0, self.offers - len(self.proposals)),
            "can_accept": self.standing(seat) is not None,
            "to_move": None if self.done else self.to_move,
        }

    def prompt(self, seat: str) -> str:
        offer = self.standing(seat)
        left = self.offers - len(self.proposals)
        parts = [f"Items: {_show(self.counts)}."]
        if offer:
            mine = utility(self.values[seat], offer["give"])
            parts.append(
                f"Standing proposal from {offer['by']}: you would get {_show(offer['give'])} "
                f"(worth {mine} to you)."
            )
        options = ["propose"] if left > 0 else []
        options += ["accept"] if offer else []
        options.append("walk_away")
        parts.append(f"Proposals left: {left}. Your move: {', '.join(options)}.")
        return " ".join(parts)

    def apply_guard(self, seat: str, name: str) -> None:
        if name == "propose" and len(self.proposals) >= self.offers:
            raise ToolFailure("rule_violation", "no proposals are left: accept or walk away")

    def tool_args(self, seat: str, action: Action) -> tuple[str, dict[str, Any]]:
        name, args = super().tool_args(seat, action)
        self.apply_guard(seat, name)
        return name, args

    def outcome(self) -> dict[str, Any]:
        split = self.allocation()
        if split is not None:
            a, b = _show(split["player_0"]), _show(split["player_1"])
            summary = f"Deal: player_0 gets {a}, player_1 gets {b}."
        elif self.walked:
            summary = f"No deal: {self.walked} walked away."
        else:
            summary = "No deal."
        return {
            "deal": split,
            "walked": self.walked,
            "proposals": len(self.proposals),
            "summary": summary,
        }

    def state(self) -> Any:
        return {"proposals": self.proposals, "deal": self.deal, "to_move": self.to_move}

    def confirm(self) -> list[str]:
        problems = []
        if self.deal is not None:
            last = self.proposals[-1] if self.proposals else None
            if (
                last is None
                or last["by"] != self.deal["proposer"]
                or last["keep"] != self.deal["keep"]
            ):
                problems.append("the deal is not the last proposal")
            for k, n in self.counts.items():
                a, b = self.deal["keep"].get(k, 0), self.deal["give"].get(k, 0)
                if a < 0 or b < 0 or a + b != n:
                    problems.append(f"the deal splits {k} as {a} + {b}, there are {n}")
        split = self.allocation()
        for s in PLAYERS:
            if split is None:
                expected = 0.0
            else:
                worth = sum(self.values[s][k] * split[s].get(k, 0) for k in self.counts)
                span = sum(self.values[s][k] * n for k, n in self.counts.items()) - self.outside[s]
                expected = max(0.0, (worth - self.outside[s]) / span) if span > 0 else 0.0
            if self.final is not None and abs((self.final.get(s) or 0.0) - expected) > 1e-9:
                problems.append(f"{s}'s reward {self.final.get(s)} != {expected}")
        return problems


def _show(split: Split_) -> str:
    parts = [f"{n} {k}" for k, n in split.items() if n]
    return ", ".join(parts) or "nothing"


class NegotiationSeat:
    """A scripted negotiator at ``strength`` 0 to 3 (see the module docstring)."""

    def __init__(self, strength: int, seed: int = 0) -> None:
        self.strength = strength
        self.seed = seed
        self.name = f"negotiation:{strength}"
        self.rng = random.Random(seed)

    def start(self, task: Task, seat: str) -> None:
        self.rng = seat_rng(self.name, self.seed, task, seat)
        self.seat = seat

    def act(self, observation: Observation) -> ToolCall:
        data = observation.data
        values, outside = data["private"]["values"], data["private"]["outside_option"]
        state = data["state"]
        counts: Split_ = state["counts"]
        total = utility(values, counts)
        left = state["offers_left"]
        offer = state["proposals"][-1] if state["can_accept"] else None
        time = 1 - left / OFFERS  # 0 at the start, 1 at the deadline
        worth = utility(values, offer["give"]) if offer else None
        if self.strength == 0:
            if offer and (left == 0 or self.rng.random() < 0.3):
                return ToolCall(tool="accept")
            keep = {k: self.rng.randint(0, n) for k, n in counts.items()}
            return _propose(keep) if left else ToolCall(tool="walk_away")
        aim = {1: 0.4, 2: 0.6 - 0.1 * time, 3: 0.9 - 0.3 * time**3}[self.strength] * total
        floor = outside + 1 if self.strength == 1 else max(outside + 1, aim)
        if offer and worth is not None and (worth >= floor or (left == 0 and worth > outside)):
            return ToolCall(tool="accept")
        if not left:
            return ToolCall(tool="walk_away")
        wanted = self._wanted(state["proposals"], counts)
        return _propose(self._plan(values, counts, aim, wanted))

    def _wanted(self, proposals: list[dict[str, Any]], counts: Split_) -> Split_:
        """How much the other seat has asked for each item (what it seems to value)."""
        asked = dict.fromkeys(counts, 0)
        for p in proposals:
            if p["by"] != self.seat and self.strength == 3:
                for k, n in p["keep"].items():
                    asked[k] += n
        return asked

    def _plan(self, values: Split_, counts: Split_, aim: float, wanted: Split_) -> Split_:
        """The split worth at least ``aim`` that leaves the other the most of what it wants."""
        names = list(counts)
        best: tuple[float, ...] | None = None
        choice = dict(counts)
        for keep in itertools.product(*(range(counts[k] + 1) for k in names)):
            mine = sum(values[k] * n for k, n in zip(names, keep, strict=True))
            if mine < aim:
                continue
            give = [counts[k] - n for k, n in zip(names, keep, strict=True)]
            rank = (
                sum((wanted[k] + 1) * g for k, g in zip(names, give, strict=True)),
                -mine,
                self.rng.random(),
            )
            if best is None or rank > best:
                best, choice = rank, dict(zip(names, keep, strict=True))
        return choice


def _propose(keep: Split_) -> ToolCall:
    return ToolCall(tool="propose", arguments={"keep": keep})


class Negotiation(MultiAgentEnvironment):
    id = "negotiation"
    agents = PLAYERS
    name = "Negotiation"
    description = (
        "Two seats split several item types with private values and outside options; "
        "deals checked exactly; scripted negotiators 0-3."
    )
    rules = (
        "Seats alternate. On your turn: propose a split (what you keep), accept the other "
        "seat's standing proposal, or walk away; you may also message the other seat.",
        f"After {OFFERS} proposals only accepting or walking away remains.",
        "A deal gives each seat its items; without a deal each takes its outside option.",
    )

    def draw(self, rng: random.Random, difficulty: int) -> dict[str, Any]:
        names = sorted(rng.sample(ITEMS, difficulty + 2))
        counts = {k: rng.randint(1, 3) for k in names}
        values = {}
        for s in PLAYERS:
            v = {k: rng.randint(0, 10) for k in names}
            if not any(v.values()):
                v[names[0]] = 1
            values[s] = v
        outside = {s: int(rng.uniform(0.2, 0.5) * utility(values[s], counts)) for s in PLAYERS}
        return {"counts": counts, "values": values, "outside": outside, "offers": OFFERS}

    def instruction(self, game: dict[str, Any], difficulty: int) -> str:
        return (
            f"A negotiation between player_0 and player_1 over {_show(game['counts'])}. Each "
            "seat values the items privately and has a private outside option. player_0 "
            "proposes first; make the best deal you can."
        )

    def knobs(self, game: dict[str, Any], difficulty: int) -> dict[str, int]:
        return {"opponent": self.opponent(difficulty), "items": len(game["counts"])}

    def seat_tools(self, seat: str) -> list[SeatTool]:
        return [propose_tool(), ACCEPT, WALK, message_tool(list(PLAYERS))]

    def scripted(self, seat: str, strength: int, seed: int = 0) -> SeatPolicy:
        return NegotiationSeat(strength, seed)

    def episode(self, config: EpisodeConfig | None = None) -> NegotiationEpisode:
        return NegotiationEpisode(self, config)
