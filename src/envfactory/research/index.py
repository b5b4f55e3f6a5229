"""Full-text search over a corpus: SQLite FTS5, ranked by BM25.

The index is read-only once built, so every episode of a corpus shares one connection (behind
a lock: the rollout engine runs episodes on threads).
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable

TITLE_WEIGHT = 10.0  # bm25 column weights: a match in the title counts for ten in the body
MAX_TERMS = 12
STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "had",
    "has", "have", "he", "her", "his", "in", "is", "it", "its", "of", "on", "or", "she", "that",
    "the", "their", "them", "they", "this", "to", "was", "were", "what", "when", "where",
    "which", "who", "whom", "why", "with", "how", "many", "much",
))  # fmt: skip
_WORD = re.compile(r"\w+")


def terms(query: str) -> list[str]:
    """The search terms of free text: its words, lower-cased, stopwords and repeats dropped.
    Nothing an agent sends reaches FTS5's query syntax: each term is quoted."""
    words = dict.fromkeys(w for w in _WORD.findall(query.lower()) if w not in STOPWORDS)
    return list(words)[:MAX_TERMS]


class SearchIndex:
    """Documents ``(title, body)`` by position; ``search`` gives positions, best first."""

    def __init__(self, docs: Iterable[tuple[str, str]]) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._lock = threading.Lock()
        self._db.execute("CREATE VIRTUAL TABLE docs USING fts5(title, body)")
        self._db.executemany(
            "INSERT INTO docs(rowid, title, body) VALUES (?, ?, ?)",
            ((i, t, b) for i, (t, b) in enumerate(docs)),
        )
        self._db.execute("INSERT INTO docs(docs) VALUES ('optimize')")
        self._db.commit()

    def search(self, query: str, k: int) -> list[int]:
        """Up to ``k`` documents for ``query``: those holding every term, then (when fewer
        than ``k`` do) those holding any, each group by BM25."""
        words = [f'"{w}"' for w in terms(query)]
        if not words:
            return []
        found = self._match(" AND ".join(words), k)
        if len(found) < k and len(words) > 1:
            seen = set(found)
            more = self._match(" OR ".join(words), k + len(found))
            found += [d for d in more if d not in seen][: k - len(found)]
        return found

    def _match(self, expr: str, k: int) -> list[int]:
        sql = (
            f"SELECT rowid FROM docs WHERE docs MATCH ? "
            f"ORDER BY bm25(docs, {TITLE_WEIGHT}, 1.0), rowid LIMIT ?"
        )
        with self._lock:
            return [r for (r,) in self._db.execute(sql, (expr, k))]

    def text(self, position: int) -> str:
        with self._lock:
            row = self._db.execute("SELECT body FROM docs WHERE rowid = ?", (position,)).fetchone()
        return str(row[0]) if row else ""
