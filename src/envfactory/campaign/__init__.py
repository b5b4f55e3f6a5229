"""Campaign worlds: one episode is a run of K tasks over one evolving database state, on a clock
with scheduled events. ``envfactory.campaign.environment.campaign(env)`` wraps any database
world; ``campaign-<id>`` is the registered campaign of every built-in database domain (see
docs/campaigns.md). Nothing is imported here, so listing worlds imports no world module."""
