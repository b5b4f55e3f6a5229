"""Campaign worlds: one episode is a run of K tasks over one evolving database state, on a clock
with scheduled events. ``campaign(env)`` wraps any database world; ``campaign-<id>`` is the
registered campaign of every built-in database domain (see docs/campaigns.md)."""

from envfactory.campaign.environment import CampaignEnvironment, campaign

__all__ = ["CampaignEnvironment", "campaign"]
