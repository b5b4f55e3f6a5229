"""A database world as a website: ``web-<domain>`` environments (kind ``web``).

The tasks are the domain's tasks; their public view offers the browser actions instead of the
tools, and their gold plan is the domain's gold plan as browser actions on the site (open the
action's page, fill or choose each argument, submit), so the scripted oracle acts only through
the browser. The verdict is the domain's, on the database the site changed.
"""

from __future__ import annotations

from typing import Any, Literal

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import EnvInfo, Environment
from envfactory.contract.policy import Policy
from envfactory.contract.tasks import Ask, HiddenTask, PlanStep, Split, Task
from envfactory.db.environment import DatabaseEnvironment
from envfactory.web import browser
from envfactory.web.actions import ACTIONS, schemas
from envfactory.web.episode import WebEpisode
from envfactory.web.guide import GUIDED, walkthrough
from envfactory.web.policies import RandomClicker, WebNoisyOracle
from envfactory.web.tasks import WebHidden
from envfactory.world.world import World

MAX_CLUTTER = 4


class WebEnvironment(Environment):
    """The website of ``domain``: ``clutter`` fixes the clutter level (default: the task's
    difficulty minus one)."""

    kind = "web"

    def __init__(self, domain: DatabaseEnvironment, clutter: int | None = None) -> None:
        self.domain = domain
        self.id = f"web-{domain.id}"
        self.same_tasks_as = domain.id
        self.clutter = clutter

    @property
    def difficulties(self) -> list[int]:
        return self.domain.difficulties

    def available(self) -> str | None:
        why = browser.available()
        return f"web worlds need a browser: {why}" if why else None

    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        base = self.domain.task(split, difficulty, index)
        clutter = self.clutter if self.clutter is not None else difficulty - 1
        clutter = max(0, min(MAX_CLUTTER, clutter))
        p = base.public
        public = p.model_copy(
            update={
                "task_id": base.task_id.replace(p.env_id, self.id, 1),
                "env_id": self.id,
                "persona": f"{p.persona} You work in the {self.domain.spec.name} staff website, "
                "in a web browser.",
                "tools": list(ACTIONS),
            }
        )
        plan, asks, needs, owner = browser_plan(base.hidden, self.domain.world, clutter)
        guided = difficulty == GUIDED
        if guided:
            guide = walkthrough(plan, answers=bool(base.hidden.answers))
            public = public.model_copy(update={"instruction": f"{p.instruction}\n\n{guide}"})
        fields = base.hidden.model_dump(exclude={"task_id", "gold_plan", "asks", "needs"})
        hidden = WebHidden(
            **fields,
            task_id=public.task_id,
            gold_plan=plan,
            asks=asks,
            needs=needs,
            domain=base.hidden,
            domain_public=p,
            clutter=clutter,
            owner=owner,
            guided=guided,
        )
        return Task(public=public, hidden=hidden, initial_hash=base.initial_hash)

    def capacity(self, split: Split, difficulty: int) -> int | None:
        return self.domain.capacity(split, difficulty)

    def episode(self, config: EpisodeConfig | None = None, screenshot: bool = False) -> WebEpisode:
        return WebEpisode(self, config, screenshot=screenshot)

    def tools(self, fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
        return schemas(fmt)

    def plan_shape(self, task: Task) -> tuple[str, ...]:
        """The domain's tool sequence (the browser steps follow from it)."""
        return tuple(self.plan_tools(task))

    def plan_tools(self, task: Task) -> list[str]:
        hidden = task.hidden
        plan = hidden.domain.gold_plan if isinstance(hidden, WebHidden) else hidden.gold_plan
        return [s.tool for s in plan]

    def random_policy(self, seed: int = 0) -> Policy:
        """Random clicking: clicks, fills and choices among the page's elements."""
        return RandomClicker(seed=seed)

    def noisy_oracle(self, skill: float = 0.8, seed: int = 0) -> Policy:
        """The noisy oracle slipping per tool call, as in the domain's world, acting through
        the browser (a slip per browser action would grade forms by their field count)."""
        return WebNoisyOracle(skill=skill, seed=seed)

    def coverage_tools(self) -> list[str]:
        """The site's forms (the domain's actions): what tool coverage counts."""
        return list(self.domain.world.tools)

    def info(self) -> EnvInfo:
        return website_info(self.domain.info())


def website_info(d: EnvInfo) -> EnvInfo:
    """The info of the website of the database world whose info is ``d``."""
    return d.model_copy(
        update={
            "id": f"web-{d.id}",
            "kind": WebEnvironment.kind,
            "name": f"{d.name} (website)",
            "description": f"{d.description} Served as a website, driven through a "
            "headless browser.",
            "tools": len(ACTIONS),
            "tool_names": list(ACTIONS),
        }
    )


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def browser_plan(
    hidden: HiddenTask, world: World, clutter: int
) -> tuple[list[PlanStep], list[Ask], list[list[int]], list[int]]:
    """The domain's gold plan as browser actions: per tool call, open its page from the
    menu, fill each text argument and choose each listed one, then submit (Enter in the last
    field of a search, the button of an action). Asks and step needs move with their steps."""
    plan: list[PlanStep] = []
    starts: list[int] = []
    submits: list[int] = []
    owner: list[int] = []  # the domain step of each browser step
    if clutter >= 3:
        plan.append(PlanStep(tool="click", arguments={"bid": "popup-dismiss"}))
        owner.append(-1)
    for k, step in enumerate(hidden.gold_plan):
        starts.append(len(plan))
        tool = world.tools[step.tool]
        props: dict[str, Any] = tool.schema.get("properties", {})
        steps = [PlanStep(tool="click", arguments={"bid": f"nav-{step.tool}"})]
        last_fill: str | None = None
        for name in props:
            if step.arguments.get(name) is None:
                continue
            schema, bid = props[name], f"{step.tool}-{name}"
            fact = step.from_user.get(name)
            if "enum" in schema or schema.get("type") == "boolean":
                key, action, last_fill = "options", "select_option", None
            else:
                key, action, last_fill = "value", "fill", bid
            steps.append(
                PlanStep(
                    tool=action,
                    arguments={"bid": bid, key: _text(step.arguments[name])},
                    from_user={key: fact} if fact else {},
                )
            )
        if tool.kind == "read" and last_fill is not None and steps[-1].tool == "fill":
            steps.append(PlanStep(tool="press", arguments={"bid": last_fill, "key_comb": "Enter"}))
        else:
            steps.append(PlanStep(tool="click", arguments={"bid": f"{step.tool}-submit"}))
        plan += steps
        owner += [k] * len(steps)
        submits.append(len(plan) - 1)
    starts.append(len(plan))
    asks = [Ask(before_step=starts[a.before_step], facts=a.facts) for a in hidden.asks]
    needs: list[list[int]] = []
    if hidden.needs:
        for k in owner:
            wanted = hidden.needs[k] if 0 <= k < len(hidden.needs) else []
            needs.append(sorted(submits[m] for m in wanted if m < len(submits)))
    return plan, asks, needs, owner
