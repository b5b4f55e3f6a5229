"""The built-in multi-agent worlds (read by the registry; nothing imported)."""

from __future__ import annotations

from envfactory.registry.table import EntryPoint

_FAMILIES = "envfactory.multiagent.families"

WORLDS: dict[str, EntryPoint] = {
    "negotiation": EntryPoint(f"{_FAMILIES}.negotiation:Negotiation"),
    "cooperation": EntryPoint(f"{_FAMILIES}.cooperation:Cooperation"),
    "proposer_solver": EntryPoint(f"{_FAMILIES}.proposer_solver:ProposerSolver"),
    "connect_four": EntryPoint(f"{_FAMILIES}.games.connect_four:ConnectFour"),
    "kuhn_poker": EntryPoint(f"{_FAMILIES}.games.kuhn_poker:KuhnPoker"),
    "liars_dice": EntryPoint(f"{_FAMILIES}.games.liars_dice:LiarsDice"),
    "blotto": EntryPoint(f"{_FAMILIES}.games.blotto:Blotto"),
}
