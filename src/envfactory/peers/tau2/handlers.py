"""The retail tools that data cannot express, registered as Python handlers, and the fast
path :class:`~.episode.Tau2Episode` runs them through.

Each handler runs the tool's behaviour (:mod:`.tools`) over records assembled from the
episode's rows (:class:`~.stores.CachedDocuments`: a record the episode has not touched comes
from the world's cache), then writes back the rows that changed; the engine runs it in a
transaction.

:func:`accepts` and :func:`run` are the same call without the engine's generic layers, for
the arguments the engine's validation would pass unchanged (strings and lists of strings
within their limits): :func:`run` also returns the result's JSON text when it is a cached
record returned unchanged (a read), so it is not serialised again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from envfactory.contract.values import text_problem
from envfactory.domain.spec import ParamSpec
from envfactory.peers.tau2.stores import RESULT_JSON, CachedDocuments, base_documents
from envfactory.peers.tau2.tools import TOOLS, WRITES, Tau2Tool
from envfactory.tools.runtime import ToolContext, handler
from envfactory.world.store import Store

if TYPE_CHECKING:
    from envfactory.world.world import World

PREFIX = "tau2_retail."
# Written in the domain language (retail.yaml) instead.
DECLARATIVE = frozenset(
    {"find_user_id_by_email", "find_user_id_by_name_zip", "think", "transfer_to_human_agents"}
)


def _handler(tool: Tau2Tool, writes: bool) -> Any:
    def run(ctx: ToolContext) -> Any:
        docs = CachedDocuments(ctx.store, base_documents(ctx.store.base))
        result = tool(docs, **ctx.args)
        if writes:
            docs.flush()
        return result

    return run


for _name, _tool in TOOLS.items():
    if _name not in DECLARATIVE:
        handler(PREFIX + _name)(_handler(_tool, _name in WRITES))


def _plain(p: ParamSpec) -> bool:
    """A parameter whose values the fast path can check: text, or a list of text, with no
    enum, format or bounds."""
    simple = p.enum is None and p.format is None and p.minimum is None and p.maximum is None
    text = p.type == "string" or (p.type, p.items) == ("array", "string")
    return simple and p.required and text


def _text_ok(v: Any, p: ParamSpec) -> bool:
    return type(v) is str and len(v) <= p.max_length and text_problem(v) is None


def fast_tools(world: World) -> dict[str, Mapping[str, ParamSpec]]:
    """The tools of ``world`` the fast path runs, with their parameters: tau2's handler tools
    whose parameters are all :func:`_plain` and whose kind (read or write) is tau2's."""
    out: dict[str, Mapping[str, ParamSpec]] = {}
    for name, tool in world.tools.items():
        ours = tool.spec.handler == PREFIX + name and name in TOOLS
        same_kind = (tool.kind == "write") == (name in WRITES)
        if ours and same_kind and all(_plain(p) for p in tool.params.values()):
            out[name] = tool.params
    return out


def accepts(params: Mapping[str, ParamSpec], raw: Any) -> dict[str, Any] | None:
    """``raw`` when the engine's validation would accept it unchanged, for parameters that
    are all :func:`_plain` (:func:`fast_tools`); None otherwise (the engine decides)."""
    if type(raw) is not dict or len(raw) != len(params):
        return None
    for name, p in params.items():
        v = raw.get(name)
        if p.type == "string":
            if not _text_ok(v, p):
                return None
        elif type(v) is not list or len(v) > p.max_items or not all(_text_ok(x, p) for x in v):
            return None
    return raw


def run(store: Store, name: str, args: dict[str, Any]) -> tuple[Any, str | None]:
    """Run tau2's tool ``name`` (a handler tool) on ``store`` with checked ``args``: its
    result, and the result's JSON text when it is known without serialising it. Raises as the
    handler does; a write runs in a transaction."""
    docs = CachedDocuments(store, base_documents(store.base))
    tool = TOOLS[name]
    if name in WRITES:
        with store.transaction():
            result = tool(docs, **args)
            docs.flush()
        return result, None
    result = tool(docs, **args)
    return result, docs.text_of(result)


def result_text(result: Any, known: str | None) -> str:
    """A tool result as the episode sends it."""
    return known if known is not None else RESULT_JSON.encode(result)
