"""Research worlds: offline multi-hop research over a generated encyclopedia (SQLite FTS5)."""
