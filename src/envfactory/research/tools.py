"""The four tools of a research world: search, open, find, and answer (which ends the episode)."""

from __future__ import annotations

from typing import Any, Literal

from envfactory.domain.spec import ParamSpec
from envfactory.tools.params import tool_schemas

MAX_K = 20
MAX_FOUND = 20  # lines find returns
DOC_ID = ParamSpec(description="a document id from search results, e.g. doc-000123", max_length=40)
TOOLS: dict[str, tuple[str, dict[str, ParamSpec]]] = {
    "search": (
        "Search the encyclopedia. Returns up to k documents, best first: id, title, source "
        "and the article's first sentence.",
        {
            "query": ParamSpec(description="words to look for, e.g. a name", max_length=300),
            "k": ParamSpec(
                type="integer",
                description="how many results (default 5)",
                required=False,
                minimum=1,
                maximum=MAX_K,
            ),
        },
    ),
    "open": (
        "Read one page of a document (pages hold about 1,200 characters); says how many pages "
        "the document has.",
        {
            "doc_id": DOC_ID,
            "page": ParamSpec(
                type="integer",
                description="the page, from 1 (default 1)",
                required=False,
                minimum=1,
                maximum=1000,
            ),
        },
    ),
    "find": (
        "Find the lines of a document that contain a text (plain text, case-insensitive), "
        "with the page each is on.",
        {
            "doc_id": DOC_ID,
            "pattern": ParamSpec(description="the text to look for", max_length=100),
        },
    ),
    "answer": (
        "Commit your final answer. Only the first answer counts, and it ends the episode.",
        {"value": ParamSpec(description="the answer, as short as possible", max_length=200)},
    ),
}


def schemas(
    fmt: Literal["openai", "mcp"] = "openai", library: str = "encyclopedia"
) -> list[dict[str, Any]]:
    """The tools' schemas; ``library`` names what ``search`` searches."""
    described = dict(TOOLS)
    text, params = TOOLS["search"]
    described["search"] = (text.replace("the encyclopedia", f"the {library}"), params)
    return tool_schemas(
        described, fmt, lambda name: {"readOnlyHint": name != "answer", "destructiveHint": False}
    )
