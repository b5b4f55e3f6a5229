"""The starter level of a web world, a guided tour: the web's "ids given".

At difficulty 0 the request lists the gold browser actions as calls, and each page the agent
sees ends with the next of them it has not yet taken (in order), so a small model can start
where reading a page and acting on it are the whole lesson. The verdict is still the domain's
on the database; the levels above are the domain's request alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from envfactory.contract.tasks import PlanStep

GUIDED = 0  # the level that is guided
REPLY = "send_msg_to_user(text=...): what you were asked for"


def step_text(step: PlanStep) -> str:
    """``step`` as a call; a value the user must give is not written out."""
    args = ", ".join(
        f"{k}=" + ("(ask the user)" if k in step.from_user else json.dumps(v))
        for k, v in step.arguments.items()
    )
    return f"{step.tool}({args})"


def _line(plan: list[PlanStep], answers: bool, k: int) -> str | None:
    """Step ``k`` of the tour, numbered: a step of ``plan``, then the reply where the task asks
    for answers (their values are the agent's to read off the page); None past the end."""
    if k < len(plan):
        return f"{k + 1}. {step_text(plan[k])}"
    return f"{k + 1}. {REPLY}" if answers and k == len(plan) else None


def walkthrough(plan: list[PlanStep], answers: bool) -> str:
    """The guide appended to the request: every step of the tour, in order."""
    lines = [_line(plan, answers, k) for k in range(len(plan) + 1)]
    return "On this site it takes these browser actions, one a turn:\n" + "\n".join(
        line for line in lines if line
    )


def next_hint(plan: list[PlanStep], answers: bool, taken: int) -> str | None:
    """The line a page ends with once ``taken`` steps of ``plan`` were followed in order
    (None: nothing is left)."""
    line = _line(plan, answers, taken)
    return f"Next: {line}" if line else None


def follows(step: PlanStep, tool: str, args: Mapping[str, Any]) -> bool:
    """Whether the action ``tool(args)`` (validated) is ``step``."""
    return tool == step.tool and all(
        str(args.get(k)).strip() == str(v).strip() for k, v in step.arguments.items()
    )
