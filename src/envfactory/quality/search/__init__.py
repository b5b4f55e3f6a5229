"""The audit's exploit searches: cheap ways to earn reward without the task's information.

Each :class:`Search` is an optimizer's attempt at a world: it may reset episodes of a task as
often as it likes, but what it scores on a task must come from one fixed, instruction-blind
policy (or, for the counterfactual, from another task's plan), never from a best-of-many pick
on that task: a max over attempts is not something a policy can do in one episode. The
adversary (:mod:`envfactory.quality.adversary`) runs every search that applies over an
adaptive sample of tasks and refuses the world when a one-sided test
(:mod:`envfactory.quality.stats`) says its mean reward is above ``EXPLOIT_MAX``.

Voided episodes: after :meth:`Search.rewards`, a search may hold ``voided``, the ids of the
tasks whose episodes the agent's input voided in that call (``env_error``, or an exception out
of ``step()`` / ``evaluate()``); the adversary counts them with the exploit policies' (a search
without the attribute voided none). :class:`~envfactory.quality.search.script.Player` keeps
that list for the searches that play through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from envfactory.contract.environment import Environment
    from envfactory.contract.tasks import Task


class Search(Protocol):
    """One exploit search. ``name`` keys its row in the audit's ``exploits``."""

    name: str

    def applies(self, env: Environment) -> bool:
        """Whether this search has anything to try in ``env``."""

    def rewards(self, env: Environment, tasks: Sequence[Task]) -> list[float]:
        """The reward the search's exploit earns on each of ``tasks``, in order (0.0 where
        the agent's input voided the episode: voiding is counted by the adversary)."""


def searches(env: Environment) -> list[Search]:
    """Every search that applies to ``env``."""
    from envfactory.quality.search.blind import InstructionBlind
    from envfactory.quality.search.collateral import Collateral
    from envfactory.quality.search.counterfactual import Counterfactual
    from envfactory.quality.search.leaks import leak_searches
    from envfactory.quality.search.priors import prior_searches
    from envfactory.quality.search.rule_bypass import rule_searches
    from envfactory.quality.search.sweep import SingleWriteSweep

    found: list[Search] = [
        InstructionBlind(),
        SingleWriteSweep(),
        Counterfactual(),
        Collateral(),
        *rule_searches(),
        *leak_searches(),
        *prior_searches(),
    ]
    return [s for s in found if s.applies(env)]
