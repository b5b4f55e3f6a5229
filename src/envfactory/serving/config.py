"""Server settings, and the rule that a server beyond loopback needs a token."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost"})


@dataclass(frozen=True)
class ServeConfig:
    """What one server hosts and how it guards itself.

    ``envs``: environment ids (empty: every registered one). ``token``: when set, every route
    but ``/health`` requires it (``Authorization: Bearer <token>`` or ``X-API-Key``).
    ``trainer_token``: when set, the trainer's routes under ``/envfactory/trainer`` (the full
    verdict with its rubric, mid-episode too) are served and require it in ``X-Trainer-Token``;
    it must differ from ``token``, which agents hold. Unset: no trainer route exists.
    ``max_sessions``: live episodes across every protocol. ``idle_timeout``: seconds without a
    call before a session expires. Steps of a world that says it never blocks
    (``Environment.blocking``: microseconds each, in memory) run on the event loop, as do those
    of the kinds in ``inline_kinds``; other steps run in a worker thread. ``gc_tuning``: no
    automatic full garbage collection (a pause of 100+ ms with thousands of live episodes);
    instead one after every ``collect_after_closed`` closed sessions (see ``gc_tuning``).
    """

    envs: tuple[str, ...] = ()
    token: str | None = None
    max_sessions: int = 4096
    idle_timeout: float = 900.0
    reap_interval: float = 5.0
    max_steps: int = 60
    task_block: int = 1000
    inline_kinds: frozenset[str] = frozenset()
    gc_tuning: bool = True
    collect_after_closed: int = 1024
    curriculum: str | None = None  # a curriculum store: serves /envfactory/curriculum routes
    trainer_token: str | None = None

    def __post_init__(self) -> None:
        if self.trainer_token is not None and (
            not self.trainer_token.strip() or self.trainer_token == self.token
        ):
            raise ValueError(
                "the trainer token must be non-empty and differ from the agents' token: "
                "whoever holds it can read every episode's target"
            )


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token."""
    if not is_loopback(host) and not token:
        raise ValueError(
            f"refusing to bind {host!r} without a token: a server reachable beyond loopback "
            "must require one (pass --token, or bind 127.0.0.1)"
        )
