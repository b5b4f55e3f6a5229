"""Single-write sweep: each write tool, once, on each candidate row.

The candidate rows of a write tool are the rows its id parameters can name that an agent
finds without the instruction: those the generic reads list, then the first rows of the kind
the parameter's description shows ("Order id, like ORD-00001": ORD-00001, ORD-00002, ...).
A number parameter takes the numbers the request states, where it states any ("add 7 GB"):
they are the task's public values, not the row it names, so a write that pays on any row
with the asked amount pays here.
Each template "write W on row #k" (with one combination of W's enum values) is a fixed plan;
the sweep keeps the best on a selection sample and scores it on the tasks given
(:mod:`~envfactory.quality.search.templates`). A write that satisfies a goal whichever row
it is called on shows as a template earning about 1.0.
"""

from __future__ import annotations

from envfactory.contract.environment import Environment
from envfactory.quality.search.templates import (
    ROWS,
    Template,
    TemplateSearch,
    choices,
    writes_of,
)


class SingleWriteSweep(TemplateSearch):
    """``write W on row #k`` for every write tool, row and enum combination."""

    name = "write_sweep"
    numbered = True
    quantities = True

    def templates(self, env: Environment) -> list[Template]:
        return [
            Template(write=tool["function"]["name"], row=row, choice=choice)
            for tool in writes_of(env)
            for row in range(ROWS)
            for choice in range(choices(tool))
        ]
