"""Instruction-blind search: short plans built from the tool schemas and what generic reads
show, never from the instruction.

A generic read needs no value from a request (a tool with no required parameter, or only
enum ones: :func:`~envfactory.quality.search.leaks.generic_calls`), and so does any other
tool with no argument (one left without a read-only hint, such as a debugging status tool,
is read all the same). The plans are
``R then W`` (write tool W with each required argument the k-th value R showed of the right
shape, ids of W's kind first, and one combination of W's enum values) and ``R then reply``
(the k-th value R showed as the answer). The search keeps the best template on a selection
sample and scores it on the tasks given (:mod:`~envfactory.quality.search.templates`): a
template that earns well above chance means a task does not depend on what it asks.
"""

from __future__ import annotations

from typing import Any

from envfactory.contract.environment import Environment
from envfactory.contract.tasks import PlanStep
from envfactory.quality.search.leaks import generic_calls
from envfactory.quality.search.templates import (
    Template,
    TemplateSearch,
    choices,
    writes_of,
)

ROWS = 3  # values tried per template


class InstructionBlind(TemplateSearch):
    """``R then W`` and ``R then reply`` plans over every generic read R."""

    name = "blind"

    def reads(self, env: Environment) -> list[PlanStep]:
        """The generic reads, then every other tool that takes no argument: a tool left
        unmarked (no read-only hint, a debugging "status" tool) is read the same way."""
        generic = generic_calls(env)
        called = {c.tool for c in generic}
        bare = [
            PlanStep(tool=t["name"], arguments={})
            for t in env.tools("mcp")
            if t["name"] not in called and t["name"] != "answer" and not _takes_input(t)
        ]
        return generic + bare

    def templates(self, env: Environment) -> list[Template]:
        reads = range(len(self.reads(env)))
        writes = [
            Template(read=r, write=tool["function"]["name"], row=row, choice=choice)
            for r in reads
            for tool in writes_of(env)
            for row in range(ROWS)
            for choice in range(choices(tool))
        ]
        return writes + [Template(read=r, reply=k) for r in reads for k in range(ROWS)]


def _takes_input(tool: dict[str, Any]) -> bool:
    return bool(tool.get("inputSchema", {}).get("properties"))
