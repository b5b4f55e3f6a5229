"""What the two-player games share: seats, turns, forfeits, win/draw rewards, seeded play."""

from __future__ import annotations

import random
from typing import Any

from envfactory.contract.actions import ToolCall
from envfactory.contract.results import ToolFailure
from envfactory.contract.tasks import Task
from envfactory.multiagent.episode import Action, MultiAgentEpisode
from envfactory.tasks.seeds import stable_hash

PLAYERS = ("player_0", "player_1")


def other(seat: str) -> str:
    return PLAYERS[1 - PLAYERS.index(seat)]


def seat_rng(kind: str, seed: int, task: Task, seat: str) -> random.Random:
    """A scripted seat's own randomness: the same for the same (seed, task, seat)."""
    return random.Random(stable_hash(kind, seed, task.task_id, seat))


class TwoPlayerGame(MultiAgentEpisode):
    """A zero-sum game of two seats: the winner earns 1, the loser 0, a draw 0.5 each. A seat
    that keeps making invalid moves forfeits; a game cut short by the step limit is a draw."""

    agents = PLAYERS

    def _clear(self) -> None:
        super()._clear()
        self.winner: str | None = None
        self.forfeited: str | None = None

    def tool_args(self, seat: str, action: Action) -> tuple[str, dict[str, Any]]:
        """The tool an action calls and its checked arguments; anything else is an error."""
        tools = {t.name: t for t in self.seat_tools(seat)}
        if not isinstance(action, ToolCall):
            raise ToolFailure(
                "unknown_tool", f"make your move with a tool call: {', '.join(tools)}"
            )
        tool = tools.get(action.tool)
        if tool is None:
            raise ToolFailure(
                "unknown_tool", f"there is no tool {action.tool[:40]!r}; tools: {', '.join(tools)}"
            )
        return tool.name, tool.check(action.arguments)

    def forfeit(self, seat: str) -> None:
        self.forfeited = seat
        self.winner = other(seat)
        self.end()

    def rewards(self) -> dict[str, float]:
        if self.winner is None:
            return dict.fromkeys(self.agents, 0.5)
        return {seat: 1.0 if seat == self.winner else 0.0 for seat in self.agents}

    def result_text(self) -> str:
        if self.forfeited:
            return f"{self.forfeited} forfeits; {self.winner} wins."
        if self.winner:
            return f"{self.winner} wins."
        return "The game is drawn." if self.status == "completed" else "The game was cut short."
