"""The campaign clock: every action takes simulated minutes, shown as times of day."""

from __future__ import annotations

import math

START = 9 * 60  # the campaign opens at 09:00
READ_MINUTES = 1  # a read tool or an invalid action
CLOSE_MINUTES = 1  # closing a request (close_request, or the final message)
WRITE_MINUTES = 2  # a write tool
MESSAGE_MINUTES = 2  # a message to the user


def time_of_day(minutes: int) -> str:
    """``minutes`` after 09:00 as ``HH:MM`` (past midnight: ``+1d HH:MM``)."""
    total = START + minutes
    days, rest = divmod(total, 24 * 60)
    stamp = f"{rest // 60:02d}:{rest % 60:02d}"
    return f"+{days}d {stamp}" if days else stamp


def tool_minutes(write: bool) -> int:
    return WRITE_MINUTES if write else READ_MINUTES


def budget(plan_minutes: int, slack: float) -> int:
    """A deadline's budget: the gold plan's minutes (and closing) times ``slack``."""
    return math.ceil((plan_minutes + CLOSE_MINUTES) * slack)
