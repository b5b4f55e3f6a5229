"""The factory of ``campaign-<id>`` worlds."""

from __future__ import annotations

from envfactory import registry
from envfactory.campaign.environment import CampaignEnvironment, campaign


def make(domain_id: str, seed: int = 0, scale: float = 1.0) -> CampaignEnvironment:
    """Campaigns over the database world ``domain_id``."""
    return campaign(registry.make(domain_id, seed=seed, scale=scale))
