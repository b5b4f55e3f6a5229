"""The factory of ``campaign-<id>`` worlds, and their listing without building them."""

from __future__ import annotations

from envfactory import registry
from envfactory.campaign.environment import CampaignEnvironment, campaign, campaign_info
from envfactory.contract.environment import EnvInfo
from envfactory.db.environment import domain_file_info
from envfactory.domain.loader import builtin_domain_files


def make(domain_id: str, seed: int = 0, scale: float = 1.0) -> CampaignEnvironment:
    """Campaigns over the database world ``domain_id``."""
    return campaign(registry.make(domain_id, seed=seed, scale=scale))


def info(domain_id: str) -> EnvInfo:
    """What ``make(domain_id).info()`` gives, read without building the world."""
    path = next(p for p in builtin_domain_files() if p.stem == domain_id)
    return campaign_info(domain_file_info(str(path)), f"campaign-{domain_id}")
