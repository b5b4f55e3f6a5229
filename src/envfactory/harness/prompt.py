"""The opening of every episode: a system prompt with the domain's rules, then the request."""

from __future__ import annotations

from typing import Any

from envfactory.contract.tasks import PublicTask
from envfactory.harness.config import HarnessConfig
from envfactory.harness.toolcalls import tools_block
from envfactory.trajectory.record import ChatMessage

DEFAULT_SYSTEM = (
    "{persona}\n\n"
    "# Rules\n{rules}\n\n"
    "Use the tools to look things up and to make changes; never guess an id. Ask the user "
    "for anything only they know. When the request is handled (or cannot be), tell the user "
    "in a short message: that message ends the conversation and is your answer. Give each "
    "value asked for once, and name no other value of its kind (a list of candidates is no "
    "answer)."
)


def exposed_tools(
    task: PublicTask, schemas: list[dict[str, Any]], harness: HarnessConfig
) -> list[dict[str, Any]]:
    """The tool schemas the policy is shown: the task's tools, narrowed by the harness."""
    allowed = set(task.tools)
    if harness.tools is not None:
        allowed &= set(harness.tools)
    return [t for t in schemas if t["function"]["name"] in allowed]


def system_prompt(task: PublicTask, tools: list[dict[str, Any]], harness: HarnessConfig) -> str:
    rules = "\n".join(f"- {r}" for r in task.rules) or "- (none)"
    text = (harness.system_prompt or DEFAULT_SYSTEM).format(
        persona=task.persona, rules=rules, env_id=task.env_id
    )
    if harness.calls_in_text:
        text += "\n\n" + tools_block(tools)
    return text


def opening(
    task: PublicTask,
    tools: list[dict[str, Any]],
    harness: HarnessConfig,
    first: str | None = None,
) -> list[ChatMessage]:
    """The system prompt and the user's request: ``first``, the episode's first observation
    where one was taken (a web world's request comes with the page the browser opened on),
    else the task's instruction."""
    return [
        {"role": "system", "content": system_prompt(task, tools, harness)},
        {"role": "user", "content": task.instruction if first is None else first},
    ]
