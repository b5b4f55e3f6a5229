"""Registers ``tau2-retail`` and ``tau2-retail-procedural`` (a built-in module of the
registry). Without tau2-bench's data both stay unlisted, and making one says where the data
was looked for."""

from __future__ import annotations

from envfactory.peers.tau2.data import missing_reason
from envfactory.peers.tau2.environment import (
    ENV_ID,
    PROCEDURAL_ID,
    make_procedural,
    make_tau2_retail,
)
from envfactory.registry import register, register_unavailable

_reason = missing_reason()
if _reason is None:
    register(ENV_ID, make_tau2_retail, overwrite=True)
    register(PROCEDURAL_ID, make_procedural, overwrite=True)
else:
    register_unavailable(ENV_ID, _reason)
    register_unavailable(PROCEDURAL_ID, _reason)
