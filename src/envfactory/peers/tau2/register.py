"""Registers ``tau2-retail``, ``tau2-retail-strict`` and ``tau2-retail-procedural`` (a
built-in module of the registry). Without tau2-bench's data all three stay unlisted, and making
one says where the data was looked for."""

from __future__ import annotations

from envfactory.peers.tau2.data import missing_reason
from envfactory.peers.tau2.environment import (
    ENV_ID,
    PROCEDURAL_ID,
    STRICT_ID,
    make_procedural,
    make_strict,
    make_tau2_retail,
)
from envfactory.registry import register, register_unavailable

_MAKERS = {ENV_ID: make_tau2_retail, STRICT_ID: make_strict, PROCEDURAL_ID: make_procedural}
_reason = missing_reason()
for _id, _make in _MAKERS.items():
    if _reason is None:
        register(_id, _make, overwrite=True)
    else:
        register_unavailable(_id, _reason)
