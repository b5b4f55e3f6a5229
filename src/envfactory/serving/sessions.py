"""Live sessions: one episode each, a capacity limit, idle expiry, a lock per session.

Every protocol (Open Reward Standard, OpenEnv WebSocket, MCP, our own routes) opens its
episodes here, so capacity and expiry hold across all of them.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

from envfactory.contract.environment import Environment
from envfactory.contract.episode import Episode
from envfactory.contract.tasks import Task
from envfactory.contract.verdict import Verdict
from envfactory.serving.errors import CapacityReached, Conflict, SessionExpired, SessionUnknown

REMEMBER_EXPIRED = 65_536


@dataclass(eq=False)
class Session:
    """One live episode and what the server remembers about it."""

    id: str
    env: Environment
    episode: Episode
    task: Task
    protocol: str
    created: float = field(default_factory=time.monotonic)
    last_seen: float = field(default_factory=time.monotonic)
    verdict: Verdict | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    replies: OrderedDict[str, str] = field(default_factory=OrderedDict)

    @property
    def finished(self) -> bool:
        return self.verdict is not None

    def remember(self, call_id: str, reply: str, keep: int = 8) -> None:
        """Keep a call's reply so a client that lost the stream can have it again."""
        self.replies[call_id] = reply
        while len(self.replies) > keep:
            self.replies.popitem(last=False)


class SessionStore:
    """Sessions by id, at most ``capacity`` of them, each expiring after ``idle_timeout`` s."""

    def __init__(self, capacity: int, idle_timeout: float) -> None:
        self.capacity = capacity
        self.idle_timeout = idle_timeout
        self._live: dict[str, Session] = {}
        self._expired: OrderedDict[str, float] = OrderedDict()
        self.expired_total = 0
        self.closed_total = 0

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, sid: str) -> bool:
        return sid in self._live

    @staticmethod
    def new_id() -> str:
        return uuid.uuid4().hex

    def check_room(self) -> None:
        if len(self._live) >= self.capacity:
            raise CapacityReached(
                f"the server holds its maximum of {self.capacity} sessions; "
                "close one or try again later"
            )

    def add(self, session: Session) -> Session:
        if session.id in self._live:
            raise Conflict(f"session {session.id[:64]!r} already exists")
        self.check_room()
        self._expired.pop(session.id, None)
        self._live[session.id] = session
        return session

    def get(self, sid: str) -> Session:
        """The live session ``sid``, marked as seen now."""
        session = self._live.get(sid)
        if session is None:
            if sid in self._expired:
                raise SessionExpired(
                    f"session {sid[:64]!r} expired after {self.idle_timeout:g} s without a call"
                )
            raise SessionUnknown(f"no session {sid[:64]!r}")
        session.last_seen = time.monotonic()
        return session

    def pop(self, sid: str) -> Session | None:
        """Remove ``sid`` and close its episode; None when it is not live."""
        session = self._live.pop(sid, None)
        if session is not None:
            session.episode.close()
            self.closed_total += 1
        return session

    def expire_idle(self, now: float | None = None) -> int:
        """Close every session idle for longer than the timeout; returns how many."""
        now = time.monotonic() if now is None else now
        stale = [
            s.id
            for s in self._live.values()
            if now - s.last_seen > self.idle_timeout and not s.lock.locked()
        ]
        for sid in stale:
            self.pop(sid)
            self._expired[sid] = now
            if len(self._expired) > REMEMBER_EXPIRED:
                self._expired.popitem(last=False)
        self.expired_total += len(stale)
        return len(stale)

    def close_all(self) -> None:
        for sid in list(self._live):
            self.pop(sid)
