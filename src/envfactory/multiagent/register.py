"""Registers the built-in multi-agent worlds (imported by the registry)."""

from __future__ import annotations

from collections.abc import Callable

from envfactory.multiagent.environment import MultiAgentEnvironment
from envfactory.multiagent.families.cooperation import Cooperation
from envfactory.multiagent.families.games.blotto import Blotto
from envfactory.multiagent.families.games.connect_four import ConnectFour
from envfactory.multiagent.families.games.kuhn_poker import KuhnPoker
from envfactory.multiagent.families.games.liars_dice import LiarsDice
from envfactory.multiagent.families.negotiation import Negotiation
from envfactory.multiagent.families.proposer_solver import ProposerSolver
from envfactory.registry import register

WORLDS: dict[str, Callable[..., MultiAgentEnvironment]] = {
    "negotiation": Negotiation,
    "cooperation": Cooperation,
    "proposer_solver": ProposerSolver,
    "connect_four": ConnectFour,
    "kuhn_poker": KuhnPoker,
    "liars_dice": LiarsDice,
    "blotto": Blotto,
}

for _id, _factory in WORLDS.items():
    register(_id, _factory, overwrite=True)
