"""tau2-bench's reward, reproduced: the database check, the communicate check, and the action
check where the first two cannot tell doing nothing from doing the task.

- **Database** (``tau2_db``): the final state equals the state the gold actions reach on a
  fresh copy of the world (compared by canonical hash; the gold replay ran once, when the task
  was imported).
- **Communicate** (``tau2_communicate``): every ``communicate_info`` string appears in some
  message the agent sent, case-insensitively, commas removed from the message (tau2's test).
- **Action** (``tau2_action``): every gold action was called with its arguments (tau2's
  comparison; free-text arguments, such as a transfer's summary, are not compared). Applied
  only to the tasks whose gold replay changes nothing and says nothing, where tau2's other
  checks pass an agent that does nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from envfactory.episode.types import CallRecord

FREE_TEXT = {"transfer_to_human_agents": {"summary"}, "think": {"thought"}}


def communicate_check(said: Sequence[str], info: Sequence[str]) -> tuple[float, str]:
    """1.0 when every string was said in some message, else 0.0; and why."""
    if not info:
        return 1.0, "nothing had to be said"
    messages = [m.lower().replace(",", "") for m in said]
    missing = [s for s in info if not any(s.lower() in m for m in messages)]
    if missing:
        return 0.0, f"never said: {', '.join(repr(s) for s in missing[:4])}"
    return 1.0, f"said all {len(info)} required strings"


def _matches(action: dict[str, Any], call: CallRecord) -> bool:
    if action["name"] != call.tool:
        return False
    keys = action.get("compare_args")
    if keys is None:
        keys = set(call.arguments) - FREE_TEXT.get(call.tool, set())
    got = {k: v for k, v in call.arguments.items() if k in keys}
    want = {k: v for k, v in action["arguments"].items() if k in keys}
    return got == want


def action_check(log: Sequence[CallRecord], actions: Sequence[dict[str, Any]]) -> tuple[float, str]:
    """1.0 when every gold action was called (with its arguments), else 0.0; and why."""
    missing = [a["name"] for a in actions if not any(_matches(a, c) for c in log)]
    if missing:
        return 0.0, f"gold actions never called: {', '.join(missing[:4])}"
    return 1.0, f"all {len(actions)} gold actions called"
