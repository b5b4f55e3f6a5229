"""The hidden half of a web task, and the domain's task behind it."""

from __future__ import annotations

from pydantic import Field

from envfactory.contract.tasks import HiddenTask, PublicTask, Task


class WebHidden(HiddenTask):
    """The hidden half of a web task: the browser gold plan, and the domain's own task."""

    domain: HiddenTask
    domain_public: PublicTask
    clutter: int = Field(0, description="0-4: banner, look-alike buttons, pop-up, short pages")
    owner: list[int] = Field(
        default_factory=list, description="per browser step, its domain step (-1: the pop-up)"
    )
    guided: bool = Field(False, description="the starter level's tour (envfactory.web.guide)")


def clutter_of(task: Task) -> int:
    """The clutter level a web task's site shows (0 for a domain task)."""
    hidden = task.hidden
    return hidden.clutter if isinstance(hidden, WebHidden) else 0


def domain_task(task: Task) -> Task:
    """The domain's own task behind a web task (a domain task is its own)."""
    hidden = task.hidden
    if not isinstance(hidden, WebHidden):
        return task
    return Task(public=hidden.domain_public, hidden=hidden.domain, initial_hash=task.initial_hash)
