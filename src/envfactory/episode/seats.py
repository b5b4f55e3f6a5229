"""Worlds with seats, as the shared services see them: several agents act in one episode,
each as its own seat with its own view.

An :class:`~envfactory.contract.environment.Environment` whose ``seats`` is not empty is a
:class:`SeatedWorld`; the rollout engine, ``check``, ``audit``, the server and the PettingZoo
adapter ask :func:`seated` for that view and never test a world's kind. :func:`play_seats`
plays one episode with in-process seats, as :func:`~envfactory.episode.runner.run_episode`
plays one with a single agent.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, Literal, Protocol, runtime_checkable

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import Environment
from envfactory.contract.episode import Episode
from envfactory.contract.tasks import Task
from envfactory.contract.verdict import Verdict


class MultiVerdict(Verdict):
    """A verdict with every seat's reward. ``reward`` is the first seat's (the rubric item
    ``reward/<seat>`` of the first seat carries all the weight); ``outcome`` says what
    happened (the winner, the deal, the attempts), in terms every seat may know."""

    rewards: dict[str, float | None]
    outcome: dict[str, Any]


class SeatPolicy(Protocol):
    """A scripted seat: ``start`` once per episode, then ``act`` on each of its observations.
    Scripted seats are in-process: like the single-agent oracle they may read the hidden task,
    but the ones of games and negotiation act on their own observation only."""

    name: str

    def start(self, task: Task, seat: str) -> None: ...

    def act(self, observation: Observation) -> ToolCall | Message: ...


class SeatedEpisode(Episode):
    """A live episode of several seats: the episode contract, stepped and seen per seat."""

    fork_refusal = (
        "its seats are played by separate agents, each holding its own view of the episode; "
        "a fork would need every seat's agent to follow it"
    )

    @abstractmethod
    def current_actors(self) -> list[str]:
        """The seats that must act now; empty once the episode is done."""

    @abstractmethod
    def observe(self, seat: str) -> Observation:
        """``seat``'s view now (what it may see since it last acted, its options). Its
        ``data`` holds ``briefing`` (what the seat is told once, at its first look; empty
        later) and ``events`` (what happened since it last looked; may be empty)."""

    @abstractmethod
    def step(self, action: Any, seat: str | None = None) -> Observation:
        """One action of ``seat`` (default: the seat the action names as its actor)."""

    @abstractmethod
    def evaluate(self) -> MultiVerdict: ...

    @abstractmethod
    def seat_rewards(self) -> dict[str, float | None]:
        """Every seat's reward (None for all when the world failed)."""

    @abstractmethod
    def audit(self) -> list[str]:
        """Problems with the outcome, found by checking it independently of play (a replay
        on a fresh episode among them): a tampered or miscounted outcome shows here."""


@runtime_checkable
class SeatedWorld(Protocol):
    """What a world with seats gives the shared services besides the environment contract:
    its seats' tools, its scripted seats of several strengths (the baselines of rollouts,
    ``check`` and ``audit``), and who plays a task by default."""

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def strengths(self) -> tuple[int, ...]:
        """The levels of the scripted seats, weakest first."""
        ...

    @property
    def check_pair(self) -> tuple[int, int]:
        """The (weak, strong) levels the seat check compares."""
        ...

    @property
    def check_seat(self) -> str | None:
        """The seat the seat check measures (None: every seat)."""
        ...

    @property
    def check_fixed(self) -> int:
        """The level of the seats the seat check does not measure."""
        ...

    @property
    def symmetric(self) -> bool:
        """Whether the seats are interchangeable rivals (else partners with their own roles)."""
        ...

    @property
    def seats(self) -> tuple[str, ...]: ...

    def episode(self, config: EpisodeConfig | None = None) -> SeatedEpisode: ...

    def seat_schemas(
        self, seat: str, fmt: Literal["openai", "mcp"] = "openai"
    ) -> list[dict[str, Any]]: ...

    def scripted(self, seat: str, strength: int, seed: int = 0) -> SeatPolicy: ...

    def default_seats(self, task: Task) -> dict[str, int | None]:
        """Who plays ``task`` by default: None for the learner, else a scripted strength."""
        ...

    def opponent(self, difficulty: int) -> int:
        """The strength of the scripted seats a task at ``difficulty`` is played against."""
        ...


def seated(env: Environment) -> SeatedWorld | None:
    """``env`` as a world with seats, or None when one agent plays it."""
    if not env.seats:
        return None
    if not isinstance(env, SeatedWorld):
        raise TypeError(f"{env.id} has seats but does not play them as a SeatedWorld")
    return env


def play_seats(
    world: SeatedWorld,
    task: Task,
    seats: Mapping[str, SeatPolicy],
    episode: SeatedEpisode | None = None,
) -> tuple[MultiVerdict, SeatedEpisode]:
    """Reset, let each seat act on its own observation until the episode is done, and judge
    it. Returns the verdict and the episode (for its audit or its log); a given ``episode``
    is reused, not closed."""
    ep = episode or world.episode()
    ep.reset(task)
    for seat, policy in seats.items():
        policy.start(task, seat)
    while not ep.done:
        for seat in ep.current_actors():
            ep.step(seats[seat].act(ep.observe(seat)), seat=seat)
            if ep.done:
                break
    return ep.evaluate(), ep
