"""How property tests are run: repeatable by default, searching when hunting.

``HYPOTHESIS_PROFILE=hunt`` draws fresh cases: 3,000 per property, and twenty times its own
count for a property that sets one (``budget``) because each case costs more.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

HUNTING = os.environ.get("HYPOTHESIS_PROFILE") == "hunt"

settings.register_profile("repeatable", derandomize=True)
settings.register_profile("hunt", max_examples=3000, deadline=None)
settings.load_profile("hunt" if HUNTING else "repeatable")


def budget(cases: int, *, fixtures: bool = False) -> settings:
    """``cases`` examples (twenty times as many when hunting) and no deadline; ``fixtures``
    allows function-scoped fixtures, which every example then shares."""
    return settings(
        max_examples=cases * 20 if HUNTING else cases,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture] if fixtures else [],
    )
