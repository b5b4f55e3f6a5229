"""``campaign-<id>`` for every built-in world of the database kind: the hand-written domains and
tau2's procedural retail (read by the registry; nothing but the domain files' names is looked
at, and tau2's campaign stays unlisted where tau2's is)."""

from __future__ import annotations

from envfactory.domain.loader import builtin_domain_files
from envfactory.peers.tau2.register import WORLDS as TAU2
from envfactory.registry.table import EntryPoint

_MAKE = "envfactory.campaign.builtin:make"
_PROCEDURAL = "tau2-retail-procedural"

WORLDS: dict[str, EntryPoint] = {
    f"campaign-{path.stem}": EntryPoint(_MAKE, {"domain_id": path.stem})
    for path in builtin_domain_files()
}
WORLDS[f"campaign-{_PROCEDURAL}"] = EntryPoint(
    _MAKE, {"domain_id": _PROCEDURAL}, unavailable=TAU2[_PROCEDURAL].unavailable
)
