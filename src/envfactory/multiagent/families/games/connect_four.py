"""Connect Four: drop discs into a 7-column, 6-row grid; four in a row wins. Each task starts from
one of the 2,401 openings of four moves (dealt per split in a seeded order, so a cell repeats
none and splits are disjoint). Scripted seats, weakest first: 0 plays at random, 1 takes a win
when it sees one, 2 also blocks and avoids handing over a win, 3 searches four plies deep
(negamax with alpha-beta over bitboards). The result is confirmed by replaying the moves on a
fresh grid and scanning every line.
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

COLS, ROWS = 7, 6
PIECE = {"player_0": "X", "player_1": "O"}
OPENING = 4
DROP = SeatTool(
    name="drop",
    description="Drop your disc into a column (0 is the leftmost, 6 the rightmost).",
    properties={"column": {"type": "integer", "minimum": 0, "maximum": COLS - 1}},
    required=("column",),
)


def grid(columns: list[list[str]]) -> list[str]:
    """The grid as rows of text, top row first ('.' for an empty cell)."""
    return [
        "".join(col[r] if r < len(col) else "." for col in columns) for r in reversed(range(ROWS))
    ]


def four_in_a_row(rows: list[str], piece: str) -> bool:
    """Whether ``piece`` has four in a row anywhere (a plain scan of every line)."""
    for r in range(ROWS):
        for c in range(COLS):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [(r + k * dr, c + k * dc) for k in range(4)]
                if all(0 <= y < ROWS and 0 <= x < COLS and rows[y][x] == piece for y, x in cells):
                    return True
    return False


class ConnectFourEpisode(TwoPlayerGame):
    def setup(self, task: Task) -> None:
        self.opening: list[int] = list(ConnectFour.game(task)["opening"])
        self.columns: list[list[str]] = [[] for _ in range(COLS)]
        for i, col in enumerate(self.opening):
            self.columns[col].append(PIECE[PLAYERS[i % 2]])
        self.moves: list[int] = []
        self.to_move = PLAYERS[len(self.opening) % 2]

    def actors(self) -> list[str]:
        return [self.to_move]

    def legal(self) -> list[int]:
        return [c for c in range(COLS) if len(self.columns[c]) < ROWS]

    def apply(self, seat: str, action: Action) -> str:
        _, args = self.tool_args(seat, action)
        col = int(args["column"])
        if col not in self.legal():
            raise ToolFailure("rule_violation", f"column {col} is full", field="column")
        self.columns[col].append(PIECE[seat])
        self.moves.append(col)
        self.emit(f"{seat} dropped a disc into column {col}.", to=[other(seat)], by=seat)
        if self._four_through(col):
            self.winner = seat
            self.end()
        elif not self.legal():
            self.end()
        else:
            self.to_move = other(seat)
        return f"You dropped a disc into column {col}."

    def _four_through(self, col: int) -> bool:
        """Whether the disc just dropped into ``col`` makes four in a row (the lines through
        it only; :meth:`confirm` scans the whole grid)."""
        row = len(self.columns[col]) - 1
        piece = self.columns[col][row]

        def same(c: int, r: int) -> bool:
            return 0 <= c < COLS and 0 <= r < len(self.columns[c]) and self.columns[c][r] == piece

        for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
            run = 1
            for sign in (1, -1):
                k = 1
                while same(col + sign * k * dc, row + sign * k * dr):
                    run, k = run + 1, k + 1
            if run >= 4:
                return True
        return False

    def briefing(self, seat: str) -> str:
        assert self.task is not None
        return (
            f"{self.task.public.instruction}\nYou are {seat} and play {PIECE[seat]}; "
            f"your opponent plays {PIECE[other(seat)]}."
        )

    def private(self, seat: str) -> dict[str, Any]:
        return {}

    def view(self, seat: str) -> dict[str, Any]:
        return {
            "board": grid(self.columns),
            "you": PIECE[seat],
            "to_move": None if self.done else self.to_move,
            "legal": self.legal(),
        }

    def prompt(self, seat: str) -> str:
        rows = "\n".join(" ".join(row) for row in grid(self.columns))
        cols = " ".join(str(c) for c in range(COLS))
        return (
            f"{rows}\n{cols}\nYou play {PIECE[seat]}. Your move: call drop with a column "
            f"from {self.legal()}."
        )

    def outcome(self) -> dict[str, Any]:
        return {
            "opening": self.opening,
            "moves": self.moves,
            "winner": self.winner,
            "forfeit": self.forfeited,
            "summary": self.result_text(),
        }

    def state(self) -> Any:
        return {"moves": self.moves, "winner": self.winner, "forfeit": self.forfeited}

    def confirm(self) -> list[str]:
        cols: list[list[str]] = [[] for _ in range(COLS)]
        problems: list[str] = []
        winner = None
        for i, col in enumerate(self.opening + self.moves):
            if winner is not None:
                problems.append(f"move {i} was played after {winner} had won")
            if len(cols[col]) >= ROWS:
                problems.append(f"move {i} went into the full column {col}")
                continue
            piece = "XO"[i % 2]
            cols[col].append(piece)
            if four_in_a_row(grid(cols), piece):
                winner = PLAYERS[i % 2]
        if self.forfeited is None and winner != self.winner:
            problems.append(f"the moves make {winner} the winner, play said {self.winner}")
        full = all(len(c) == ROWS for c in cols)
        if self.status == "completed" and not (winner or full or self.forfeited):
            problems.append("the game ended without a win or a full grid")
        return problems


# -- scripted seats ------------------------------------------------------------------------------

H = ROWS + 1  # bits per column: six cells and a sentinel
TOP = sum(1 << (c * H + ROWS) for c in range(COLS))
ORDER = (3, 2, 4, 1, 5, 0, 6)


def bitboards(rows: list[str], me: str) -> tuple[int, int, list[int]]:
    """(my discs, all discs, column heights) from the grid text."""
    mine = mask = 0
    heights = [0] * COLS
    for r, row in enumerate(reversed(rows)):
        for c, cell in enumerate(row):
            if cell != ".":
                bit = 1 << (c * H + r)
                mask |= bit
                mine |= bit if cell == me else 0
                heights[c] = r + 1
    return mine, mask, heights


def wins(b: int) -> bool:
    for s in (1, H, H - 1, H + 1):
        m = b & (b >> s)
        if m & (m >> 2 * s):
            return True
    return False


def threats(p: int, empty: int) -> int:
    """Empty cells that would complete four for the discs ``p``."""
    r = 0
    for s in (1, H, H - 1, H + 1):
        t = (p << s) & (p << 2 * s)
        r |= t & (p << 3 * s)
        r |= t & (p >> s)
        t = (p >> s) & (p >> 2 * s)
        r |= t & (p >> 3 * s)
        r |= t & (p << s)
    return r & empty


FULL = sum(((1 << ROWS) - 1) << (c * H) for c in range(COLS))


def score(me: int, mask: int) -> int:
    opp = mask ^ me
    empty = FULL & ~mask
    centre = bin(me & (((1 << ROWS) - 1) << (3 * H))).count("1")
    return 4 * (bin(threats(me, empty)).count("1") - bin(threats(opp, empty)).count("1")) + centre


def negamax(me: int, mask: int, heights: list[int], depth: int, alpha: int, beta: int) -> int:
    """The value for the side to move, whose discs are ``me``."""
    moves = [c for c in ORDER if heights[c] < ROWS]
    if not moves:
        return 0
    if depth == 0:
        return score(me, mask)
    for c in moves:
        if wins(me | (1 << (c * H + heights[c]))):
            return 1000 + depth
    best = -10_000
    for c in moves:
        bit = 1 << (c * H + heights[c])
        heights[c] += 1
        value = -negamax((me | bit) ^ (mask | bit), mask | bit, heights, depth - 1, -beta, -alpha)
        heights[c] -= 1
        if value > best:
            best = value
        alpha = max(alpha, value)
        if alpha >= beta:
            break
    return best


class ConnectFourSeat:
    """A scripted player at ``strength`` 0 to 3 (see the module docstring)."""

    def __init__(self, strength: int, seed: int = 0) -> None:
        self.strength = strength
        self.seed = seed
        self.name = f"connect_four:{strength}"
        self.rng = random.Random(seed)

    def start(self, task: Task, seat: str) -> None:
        self.rng = seat_rng(self.name, self.seed, task, seat)

    def act(self, observation: Observation) -> ToolCall:
        state = observation.data["state"]
        return ToolCall(tool="drop", arguments={"column": self.choose(state)})

    def choose(self, state: dict[str, Any]) -> int:
        legal: list[int] = state["legal"]
        if self.strength == 0:
            return self.rng.choice(legal)
        me, mask, heights = bitboards(state["board"], state["you"])
        opp = mask ^ me

        def drop(c: int) -> int:
            return 1 << (c * H + heights[c])

        for c in legal:
            if wins(me | drop(c)):
                return c
        if self.strength == 1:
            return self.rng.choice(legal)
        if self.strength == 3:
            return self._search(me, mask, heights, legal)
        for c in legal:
            if wins(opp | drop(c)):
                return c
        safe = [c for c in legal if not self._gives_win(opp, mask | drop(c), heights, c)]
        pool = safe or legal
        return min(pool, key=lambda c: (abs(c - 3), self.rng.random()))

    @staticmethod
    def _gives_win(opp: int, mask: int, heights: list[int], c: int) -> bool:
        above = heights[c] + 1
        return above < ROWS and wins(opp | (1 << (c * H + above)))

    def _search(self, me: int, mask: int, heights: list[int], legal: list[int]) -> int:
        best, choice = -100_000, legal[0]
        for c in sorted(legal, key=lambda c: (abs(c - 3), self.rng.random())):
            bit = 1 << (c * H + heights[c])
            heights[c] += 1
            value = -negamax((me | bit) ^ (mask | bit), mask | bit, heights, 3, -100_000, 100_000)
            heights[c] -= 1
            if value > best:
                best, choice = value, c
        return choice


class ConnectFour(MultiAgentEnvironment):
    id = "connect_four"
    agents = PLAYERS
    name = "Connect Four"
    description = "Connect Four for two seats from seeded openings; scripted opponents 0-3."
    rules = (
        "Players alternate; a disc falls to the lowest empty cell of its column.",
        "Four of your discs in a row (across, down or diagonally) wins; a full grid is a draw.",
        "Eight invalid moves in a row forfeit the game.",
    )

    def space(self) -> list[dict[str, Any]]:
        return OPENINGS

    def instruction(self, game: dict[str, Any], difficulty: int) -> str:
        moves = ", ".join(str(c) for c in game["opening"])
        return (
            "Connect Four on a 7-column, 6-row grid. player_0 plays X, player_1 plays O. "
            f"The game starts after the opening moves {moves} (X first); get four in a row."
        )

    def seat_tools(self, seat: str) -> list[SeatTool]:
        return [DROP]

    def scripted(self, seat: str, strength: int, seed: int = 0) -> SeatPolicy:
        return ConnectFourSeat(strength, seed)

    def episode(self, config: EpisodeConfig | None = None) -> ConnectFourEpisode:
        return ConnectFourEpisode(self, config)


OPENINGS = [{"opening": list(m)} for m in itertools.product(range(COLS), repeat=OPENING)]
