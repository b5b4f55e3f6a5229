"""A library of documents searchable with SQLite FTS5, and the encyclopedia corpus: the
graph's articles (and a few unreliable fan-wiki pages).

``corpus(seed, size)`` builds one once per process and shares it: it is read-only.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass

from envfactory.research.articles import Renderer
from envfactory.research.graph import Graph, build_graph
from envfactory.research.index import SearchIndex

DEFAULT_SIZE = 10_000
PAGE_CHARS = 1200
RELIABLE = "encyclopedia"
UNRELIABLE = "unverified fan wiki"


@dataclass(slots=True)
class Doc:
    doc_id: str
    title: str
    entity: int
    reliable: bool
    lead: str
    facts: dict[str, tuple[int, str]]

    @property
    def source(self) -> str:
        return RELIABLE if self.reliable else UNRELIABLE


def paginate(text: str, size: int = PAGE_CHARS) -> list[tuple[int, int]]:
    """Page bounds ``(start, end)``: whole lines packed up to ``size`` characters a page."""
    pages: list[tuple[int, int]] = []
    start = end = 0
    for line in text.split("\n"):
        stop = end + len(line) + 1
        if stop - start > size and end > start:
            pages.append((start, end))
            start = end
        end = stop
    pages.append((start, min(end, len(text))))
    return pages


class Library:
    """Documents with ids, titles and sources, their text in a search index; pages and
    lines for ``open`` and ``find``. Every research world's corpus is one."""

    def __init__(self, docs: list[Doc], texts: list[str]) -> None:
        self.docs = docs
        self.by_id = {d.doc_id: i for i, d in enumerate(docs)}
        self.index = SearchIndex((d.title, t) for d, t in zip(docs, texts, strict=True))

    def text(self, position: int) -> str:
        return self.index.text(position)

    def pages(self, position: int) -> list[str]:
        text = self.text(position)
        return [text[a:b].strip("\n") for a, b in paginate(text)]

    def page_of(self, position: int, offset: int) -> int:
        """The page (from 1) holding character ``offset`` of a document."""
        bounds = paginate(self.text(position))
        return next((i + 1 for i, (_, b) in enumerate(bounds) if offset < b), len(bounds))


class Corpus(Library):
    """The encyclopedia of a seeded graph: its articles, and a few unreliable fan pages."""

    def __init__(self, seed: int, size: int) -> None:
        self.seed, self.size = seed, size
        self.graph: Graph = build_graph(seed, size)
        rng = random.Random(f"research-corpus/{seed}/{size}")
        render = Renderer(self.graph, rng)
        arts = [(e.id, True, render.render(e, False)) for e in self.graph.entities]
        arts += [(e.id, False, render.render(e, True)) for e in self.graph.entities if e.fan]
        rng.shuffle(arts)
        docs = [
            Doc(f"doc-{i:06d}", a.title, eid, ok, a.lead, a.facts)
            for i, (eid, ok, a) in enumerate(arts)
        ]
        super().__init__(docs, [a.text for _, _, a in arts])
        self.reliable: dict[int, int] = {}
        self.unreliable: dict[int, int] = {}
        for i, d in enumerate(self.docs):
            (self.reliable if d.reliable else self.unreliable)[d.entity] = i


_CACHE: dict[tuple[int, int], Corpus] = {}
_LOCK = threading.Lock()


def corpus(seed: int = 0, size: int = DEFAULT_SIZE) -> Corpus:
    """The corpus of ``(seed, size)``, built once per process."""
    with _LOCK:
        found = _CACHE.get((seed, size))
        if found is None:
            found = _CACHE[(seed, size)] = Corpus(seed, size)
        return found
