"""``campaign-<domain>`` for every built-in database domain (read by the registry; nothing but
the domain files' names is looked at)."""

from __future__ import annotations

from envfactory.domain.loader import builtin_domain_files
from envfactory.registry.table import EntryPoint

WORLDS: dict[str, EntryPoint] = {
    f"campaign-{path.stem}": EntryPoint(
        "envfactory.campaign.builtin:make", {"domain_id": path.stem}
    )
    for path in builtin_domain_files()
}
