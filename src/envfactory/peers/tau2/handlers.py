"""The retail tools that data cannot express, registered as Python handlers.

Each handler runs the tool's behaviour (:mod:`.tools`) over records assembled from the
episode's rows, then writes back the rows that changed; the engine runs it in a transaction.
"""

from __future__ import annotations

from typing import Any

from envfactory.peers.tau2.stores import SqlDocuments
from envfactory.peers.tau2.tools import TOOLS, WRITES, Tau2Tool
from envfactory.tools.runtime import ToolContext, handler

PREFIX = "tau2_retail."
# Written in the domain language (retail.yaml) instead.
DECLARATIVE = frozenset(
    {"find_user_id_by_email", "find_user_id_by_name_zip", "think", "transfer_to_human_agents"}
)


def _handler(tool: Tau2Tool, writes: bool) -> Any:
    def run(ctx: ToolContext) -> Any:
        docs = SqlDocuments(ctx.store)
        result = tool(docs, **ctx.args)
        if writes:
            docs.flush()
        return result

    return run


for _name, _tool in TOOLS.items():
    if _name not in DECLARATIVE:
        handler(PREFIX + _name)(_handler(_tool, _name in WRITES))
