"""``tau2-retail``, ``tau2-retail-strict`` and ``tau2-retail-procedural`` (read by the
registry; nothing imported). Without tau2-bench's data all three stay unlisted, and making one
says where the data was looked for."""

from __future__ import annotations

from envfactory.registry.table import EntryPoint

_MISSING = "envfactory.peers.tau2.data:missing_reason"
_MAKERS = "envfactory.peers.tau2.environment"

WORLDS: dict[str, EntryPoint] = {
    "tau2-retail": EntryPoint(f"{_MAKERS}:make_tau2_retail", unavailable=_MISSING),
    "tau2-retail-strict": EntryPoint(f"{_MAKERS}:make_strict", unavailable=_MISSING),
    "tau2-retail-procedural": EntryPoint(f"{_MAKERS}:make_procedural", unavailable=_MISSING),
}
