"""tau2-bench's reward, reproduced: the database check, the communicate check, and the action
check where the first two cannot tell doing nothing from doing the task.

- **Database** (``tau2_db``): the final state equals the state the gold actions reach on a
  fresh copy of the world (compared by canonical hash; the gold replay ran once, when the task
  was imported).
- **Communicate** (``tau2_communicate``): every ``communicate_info`` string is said in the
  agent's messages (tau2 looks in every message, commas removed), each as one committed value
  of its kind: all the agent said, read together, may name no more values of a kind than were
  asked for (:func:`envfactory.verify.answers.grade`), so a list of candidates says none.
- **Action** (``tau2_action``): every gold action was called with its arguments (tau2's
  comparison; free-text arguments, such as a transfer's summary, are not compared). Applied
  only to the tasks whose gold replay changes nothing and says nothing, where tau2's other
  checks pass an agent that does nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from envfactory.contract.actions import CallRecord
from envfactory.contract.tasks import AnswerKey
from envfactory.verify.answers import MAX_REPLY_CHARS, grade

FREE_TEXT = {"transfer_to_human_agents": {"summary"}, "think": {"thought"}}


def communicate_check(
    said: Sequence[str], info: Sequence[str], key: AnswerKey
) -> tuple[float, str]:
    """1.0 when the messages ``said`` give every string of ``info``, each as one committed
    value, else 0.0; and why. ``key`` holds the request (with what the user said: values
    the agent may repeat) and the words a word answer is told apart from."""
    if not info:
        return 1.0, "nothing had to be said"
    if any(len(m) > MAX_REPLY_CHARS for m in said):
        return 0.0, f"a message is longer than {MAX_REPLY_CHARS} characters"
    # tau2 accepts a value said in any message: read them together, so a value per message
    # is as much a list of candidates as one message listing them
    score, why = grade("\n".join(said), info, key, max_chars=None)
    return float(score == 1.0), why


def compared(action: dict[str, Any]) -> set[str]:
    """The arguments of a gold action that a call must match (tau2's ``compare_args``, by
    default all but free text)."""
    keys = action.get("compare_args")
    if keys is None:
        return set(action["arguments"]) - FREE_TEXT.get(action["name"], set())
    return set(keys)


def matches(action: dict[str, Any], tool: str, arguments: dict[str, Any]) -> bool:
    """Whether a call of ``tool`` with ``arguments`` is the gold ``action``."""
    if action["name"] != tool:
        return False
    keys = compared(action)
    got = {k: v for k, v in arguments.items() if k in keys}
    want = {k: v for k, v in action["arguments"].items() if k in keys}
    return got == want


def action_check(log: Sequence[CallRecord], actions: Sequence[dict[str, Any]]) -> tuple[float, str]:
    """1.0 when every gold action was called (with its arguments), else 0.0; and why."""
    missing = [a["name"] for a in actions if not any(matches(a, c.tool, c.arguments) for c in log)]
    if missing:
        return 0.0, f"gold actions never called: {', '.join(missing[:4])}"
    return 1.0, f"all {len(actions)} gold actions called"
