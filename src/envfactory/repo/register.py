"""The built-in repository world (read by the registry; nothing imported). It stays unlisted
until the pinned projects are prepared (``make setup``), and making it says why."""

from __future__ import annotations

from envfactory.registry.table import EntryPoint

WORLDS: dict[str, EntryPoint] = {
    "repo-python": EntryPoint(
        "envfactory.repo.environment:RepoEnvironment",
        {"env_id": "repo-python"},
        unavailable="envfactory.repo.projects:cache_reason",
    ),
}
