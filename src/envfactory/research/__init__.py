"""Research worlds: offline multi-hop research over a generated encyclopedia (SQLite FTS5)."""

from envfactory.research.corpus import Corpus, corpus
from envfactory.research.environment import ResearchEnvironment
from envfactory.research.episode import ResearchEpisode

__all__ = ["Corpus", "ResearchEnvironment", "ResearchEpisode", "corpus"]
