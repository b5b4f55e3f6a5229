"""Plan templates, chosen on one sample of tasks and scored on another.

A template is a fixed, instruction-blind recipe ("call read tool R, then write tool W on the
second id R listed"): on each task it becomes a plan from what the generic reads show and
what the tool schemas say, never from the instruction or hidden data. A template search
scores every template on a *selection* sample drawn from the environment (tasks other than
the ones it is asked about), keeps the best template for each kind of request (the goals a
task pursues, which its wording shows, though not which row it names) and the best overall,
and plays only the kept one on each task it is asked about. So what it reports is the reward
of one fixed policy, not a best-of-many pick on the scored tasks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

from envfactory.contract.actions import Observation, ToolCall
from envfactory.contract.environment import Environment
from envfactory.contract.tasks import PlanStep, Task
from envfactory.policies.exploits import Knowledge, fill, id_example, stated_quantities
from envfactory.policies.scripted import write_tools
from envfactory.quality.search.leaks import generic_calls
from envfactory.quality.search.sample import draw
from envfactory.quality.search.script import Player, Step, reply_steps

ROWS = 5  # candidate rows per write tool
CHOICES = 4  # combinations of enum values per write tool
SELECT = 24  # tasks in the selection sample


@dataclass(frozen=True)
class Template:
    """One recipe: the generic read ``read`` (an index into the generic calls, None: none),
    then ``write`` (None: none) on the ``row``-th candidate row with the ``choice``-th
    combination of enum values, then a reply giving the ``reply``-th value seen (None:
    no reply)."""

    read: int | None = None
    write: str | None = None
    row: int = 0
    choice: int = 0
    reply: int | None = None

    @property
    def name(self) -> str:
        parts = [f"read#{self.read}"] if self.read is not None else []
        if self.write is not None:
            parts.append(f"{self.write}@row{self.row}/choice{self.choice}")
        if self.reply is not None:
            parts.append(f"reply#{self.reply}")
        return " then ".join(parts)


class Seen:
    """What an instruction-blind agent knows on a task: per generic read, what it showed;
    with ``numbered``, also the first ids of each kind the schemas describe (ORD-00001...);
    ``quantities``: the numbers the request states, which number parameters take."""

    def __init__(
        self,
        env: Environment,
        shown: Sequence[Observation],
        numbered: bool,
        quantities: Sequence[float] = (),
    ) -> None:
        self.tools = env.tools("openai")
        self.shown = list(shown)
        self.numbered = numbered
        self.quantities = list(quantities)
        self.known: dict[int | None, Knowledge] = {}

    def knowledge(self, read: int | None) -> Knowledge | None:
        """What generic read ``read`` showed (None: all of them, and the numbered ids)."""
        if read is not None and read >= len(self.shown):
            return None
        if read not in self.known:
            k = Knowledge(None, self.tools)
            k.quantities = self.quantities
            for obs in self.shown if read is None else [self.shown[read]]:
                k.observe(obs)
            if read is None and self.numbered:
                k.ids += [i for i in _numbered(self.tools) if i not in k.ids]
            self.known[read] = k
        return self.known[read]


def _numbered(tools: list[dict[str, Any]]) -> list[str]:
    """The first :data:`ROWS` ids of each kind a parameter description shows."""
    kinds = {
        example
        for tool in tools
        for schema in tool["function"]["parameters"].get("properties", {}).values()
        if (example := id_example(schema)) is not None
    }
    return [f"{p}{i:0{w}d}" for p, w in sorted(kinds) for i in range(1, ROWS + 1)]


def write_args(tool: dict[str, Any], k: Knowledge, row: int, choice: int) -> dict[str, Any] | None:
    """Arguments of ``tool``'s required parameters: the ``row``-th value seen of each one's
    shape, and the ``choice``-th combination of the enum values; None where a required
    parameter has no value."""
    params = tool["function"]["parameters"]
    required = list(params.get("required", []))
    args = fill(tool, k, row)
    if not set(required) <= set(args):
        return None
    enums = [p for p in required if "enum" in params["properties"].get(p, {})]
    combos = list(product(*(params["properties"][p]["enum"] for p in enums)))
    if combos:
        args.update(zip(enums, combos[choice % len(combos)], strict=True))
    return args


def choices(tool: dict[str, Any]) -> int:
    """How many enum combinations a template of ``tool`` tries."""
    params = tool["function"]["parameters"]
    n = 1
    for p in params.get("required", []):
        n *= len(params["properties"].get(p, {}).get("enum", [None]))
    return min(n, CHOICES)


class TemplateSearch:
    """A search over :class:`Template` s; subclasses say which, and what the agent sees."""

    name = "templates"
    numbered = False  # whether schema-described ids count as seen rows
    quantities = False  # whether the numbers a request states fill number parameters

    def __init__(self) -> None:
        self.voided: list[str] = []
        self.chosen: dict[tuple[str, ...], Template] = {}
        self._reads: tuple[Environment, list[PlanStep]] | None = None

    def applies(self, env: Environment) -> bool:
        return bool(self.templates(env))

    def templates(self, env: Environment) -> list[Template]:
        raise NotImplementedError

    def rewards(self, env: Environment, tasks: Sequence[Task]) -> list[float]:
        player = Player(env)
        templates = self.templates(env)
        exclude = {t.task_id for t in tasks}
        selection = draw(env, SELECT, exclude)
        self.chosen = self.choose(env, player, templates, selection)
        out = [self.score(env, player, task) for task in tasks]
        player.close()
        self.voided = player.voided
        return out

    def choose(
        self,
        env: Environment,
        player: Player,
        templates: Sequence[Template],
        selection: Sequence[Task],
    ) -> dict[tuple[str, ...], Template]:
        """The best template for each kind of request in ``selection`` (key ``()``: the best
        over all of it), the earliest of equals."""
        earned: dict[tuple[str, ...], dict[Template, float]] = defaultdict(dict)
        for task in selection:
            seen = self.seen(env, player, task)
            key = tuple(task.hidden.goals)
            for template in templates:
                reward = self.play(env, player, task, template, seen)
                for k in (key, ()):
                    earned[k][template] = earned[k].get(template, 0.0) + reward
        return {k: max(scores, key=lambda t: scores[t]) for k, scores in earned.items()}

    def template(self, task: Task) -> Template | None:
        """The template chosen for ``task``'s kind of request (or the best over all)."""
        return self.chosen.get(tuple(task.hidden.goals)) or self.chosen.get(())

    def score(self, env: Environment, player: Player, task: Task) -> float:
        template = self.template(task)
        if template is None:
            return 0.0
        return self.play(env, player, task, template, self.seen(env, player, task))

    def reads(self, env: Environment) -> list[PlanStep]:
        """The calls a template's ``read`` indexes: the generic reads."""
        return generic_calls(env)

    def read_calls(self, env: Environment) -> list[PlanStep]:
        """:meth:`reads`, worked out once per environment (every play of a template needs
        them, and they depend on the tool schemas alone)."""
        if self._reads is None or self._reads[0] is not env:
            self._reads = (env, self.reads(env))
        return self._reads[1]

    def seen(self, env: Environment, player: Player, task: Task) -> Seen:
        stated = stated_quantities(task.public.instruction) if self.quantities else []
        return Seen(env, probe(player, task, self.read_calls(env)), self.numbered, stated)

    def play(
        self, env: Environment, player: Player, task: Task, template: Template, seen: Seen
    ) -> float:
        """``template``'s reward on ``task`` (0.0 without an episode where it cannot be
        filled)."""
        plan = build(env, self.read_calls(env), template, seen)
        if plan is None:
            return 0.0
        steps, answers = plan
        return player.reward(task, steps, answers)


def build(
    env: Environment, reads: Sequence[PlanStep], template: Template, seen: Seen
) -> tuple[list[Step], list[Any]] | None:
    """``template`` as a plan and reply on a task where ``seen`` was seen (what ``reads``
    showed); None where it cannot be filled."""
    k = seen.knowledge(template.read)
    if k is None:
        return None
    steps: list[Step] = []
    if template.read is not None:
        steps.append((-1, reads[template.read]))
    if template.write is not None:
        tool = next(t for t in seen.tools if t["function"]["name"] == template.write)
        args = write_args(tool, k, template.row, template.choice)
        if args is None:
            return None
        steps.append((-1, PlanStep(tool=template.write, arguments=args)))
    answers: list[Any] = []
    if template.reply is not None:
        values = [*k.ids, *k.numbers, *k.strings]
        if template.reply >= len(values):
            return None
        answers = [values[template.reply]]
        steps += reply_steps(env, answers)
    return steps, answers


def probe(player: Player, task: Task, calls: Sequence[PlanStep]) -> list[Observation]:
    """What ``calls``, made at the start of ``task``, return (observations with their data);
    an episode the calls void shows nothing more."""
    shown: list[Observation] = []
    if not calls:
        return shown
    if player.episode is None:
        player.episode = player.env.episode()
    try:
        player.episode.reset(task)
        for call in calls:
            shown.append(player.episode.step(ToolCall(tool=call.tool, arguments=call.arguments)))
    except Exception:  # the agent's input voided the episode
        player.voided.append(task.task_id)
        player.close()
    return shown


def writes_of(env: Environment) -> list[dict[str, Any]]:
    """The OpenAI schemas of the write tools that name a row: a required parameter whose
    description shows an id's form, or whose name ends in ``id`` (not a shell or a file)."""
    writes = write_tools(env.tools("mcp")) - {"answer"}
    return [
        t
        for t in env.tools("openai")
        if t["function"]["name"] in writes and any(_names_row(p, s) for p, s in _required(t))
    ]


def _required(tool: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    params = tool["function"]["parameters"]
    props: dict[str, dict[str, Any]] = params.get("properties", {})
    return [(p, props.get(p, {})) for p in params.get("required", [])]


def _names_row(name: str, schema: dict[str, Any]) -> bool:
    return id_example(schema) is not None or name.lower().endswith("id")
