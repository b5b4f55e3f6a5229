"""The domain description: what a world is made of, as validated data.

A domain is entities (tables with typed, generated fields), actions (the tools), rules (the
policy the agent must respect) and goal templates (how tasks are made). Everything here is
plain data; :mod:`envfactory.world` compiles it into a working world.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

FieldType = Literal["string", "integer", "number", "boolean", "date", "ref"]
ScalarType = Literal["string", "integer", "number", "boolean"]
ParamType = Literal["string", "integer", "number", "boolean", "array"]

_IDENT = re.compile(r"^[a-z][a-z0-9_]*$")


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FieldSpec(_Spec):
    """A column and how its initial values are generated."""

    type: FieldType = "string"
    description: str = ""
    faker: str | None = Field(None, description="Faker provider, e.g. 'name', 'email', 'city'")
    faker_args: dict[str, Any] = Field(default_factory=dict)
    choices: list[Any] | None = Field(None, description="values to draw from (an enum)")
    weights: list[float] | None = None
    min: float | None = Field(None, description="numbers: low bound; dates: days from today")
    max: float | None = Field(None, description="numbers: high bound; dates: days from today")
    decimals: int = 2
    pattern: str | None = Field(None, description="'#' is a digit, '?' a letter: '####'")
    ref: str | None = Field(None, description="for type ref: the entity referred to")
    scope: dict[str, str] = Field(
        default_factory=dict,
        description="for type ref: {parent_field: own_field}; only parents that agree are drawn",
    )
    copy_from: str | None = Field(
        None, description="'product_id.price': copy a field of the row a ref field points at"
    )
    expr: str | None = Field(None, description="computed from the row's earlier fields")
    unique: bool = False
    twin_rate: float = Field(
        0.0, description="chance of reusing an earlier row's value: look-alike distractors"
    )
    null_rate: float = 0.0
    default: Any = None

    @model_validator(mode="after")
    def _consistent(self) -> FieldSpec:
        if self.type == "ref" and not self.ref:
            raise ValueError("a ref field needs `ref: <entity>`")
        if self.weights and (not self.choices or len(self.weights) != len(self.choices)):
            raise ValueError("`weights` must match `choices` one for one")
        return self


class PerSpec(_Spec):
    """Generate rows per parent row instead of a fixed count."""

    entity: str
    min: int = 0
    max: int = 3


class StepSpec(_Spec):
    """One tool call of a plan; argument values are literals or ``=expressions``."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    when: str | None = Field(None, description="only if this holds on the initial state")
    for_each: str | None = Field(
        None, description="repeat for each element of this list binding, bound as `item`"
    )


class HeldSpec(_Spec):
    """The user keeps a reference's facts to itself: the instruction says ``text`` (or
    ``parent_text`` inside another reference) and the agent must ask for ``facts``."""

    text: str = Field(description="e.g. 'my account'")
    parent_text: str | None = Field(None, description="e.g. 'me' (in 'the order placed by me')")
    facts: dict[str, Any] = Field(description="{fact: value}, e.g. {email: '=row.email'}")


class RefSpec(_Spec):
    """A way to name a row in an instruction without its id, and the look-ups that resolve it.

    ``text`` is a template over ``row`` (and ``{ref:parent}`` for the parent's own reference).
    """

    text: str
    lookup: list[StepSpec] = Field(default_factory=list)
    parent: str | None = Field(None, description="a ref field; the parent is named first")
    unique: list[str] = Field(
        default_factory=list, description="fields that must single the row out"
    )
    held: HeldSpec | None = Field(None, description="how the user can hold this back")


class EntitySpec(_Spec):
    """A table: typed fields with generators, and references for instructions."""

    description: str = ""
    label: str = Field("", description="the noun an instruction uses, e.g. 'order'")
    id_prefix: str
    count: int | None = None
    scales: bool = Field(
        True,
        description="false: a catalog the domain names row by row (departments, holidays), "
        "whose count stays as written at every scale of the world",
    )
    block: int = Field(
        1,
        ge=1,
        description="rows laid out in blocks of this many (10 shipments, then their 26 scans): "
        "the count scales by whole blocks, so tables laid out block by block stay aligned",
    )
    per: PerSpec | None = None
    fields: dict[str, FieldSpec]
    refs: list[RefSpec] = Field(default_factory=list)
    owner: str | None = Field(
        None,
        description="a ref field naming the row this one belongs to (an order's customer): a "
        "row is in the split of its owner, so one task's rows share a split",
    )

    @model_validator(mode="after")
    def _sized(self) -> EntitySpec:
        if (self.count is None) == (self.per is None):
            raise ValueError("give exactly one of `count` and `per`")
        if self.count is not None and self.count % self.block:
            raise ValueError(f"`count` {self.count} is not whole blocks of {self.block}")
        if "id" in self.fields:
            raise ValueError("`id` is implicit (id_prefix + number)")
        if self.owner is not None and (
            self.owner not in self.fields or self.fields[self.owner].ref is None
        ):
            raise ValueError(f"`owner` {self.owner!r} is not a ref field")
        return self


class ParamSpec(_Spec):
    """A tool parameter (a JSON Schema property)."""

    type: ParamType = "string"
    description: str
    enum: list[Any] | None = None
    required: bool = True
    minimum: float | None = None
    maximum: float | None = None
    max_length: int = 200
    format: Literal["date"] | None = None
    items: ScalarType = Field("string", description="for type array: the elements' type")
    max_items: int = Field(50, ge=0, description="for type array: the most elements")


class RowsSpec(_Spec):
    """Rows of an entity: equality filters on fields, an optional row filter, order, limit."""

    rows: str
    where: dict[str, Any] = Field(
        default_factory=dict, description="{field: value}; a None value drops the filter"
    )
    filter: str | None = Field(None, description="expression over `row` and the scope")
    order_by: str | None = Field(None, description="a field; '-field' for descending")
    limit: int = Field(50, ge=1, description="the most rows returned")


class CheckSpec(_Spec):
    """A precondition; when it fails the call returns ``error`` and changes nothing."""

    check: str
    error: str
    rule: str | None = Field(None, description="the rule this check enforces")
    code: Literal["precondition_failed", "not_found", "invalid_arguments"] = "precondition_failed"


class EffectSpec(_Spec):
    """A write: update or delete a loaded row, or insert a new one."""

    update: str | None = None
    insert: str | None = None
    delete: str | None = None
    set: dict[str, Any] = Field(default_factory=dict)
    name: str | None = Field(None, description="for inserts: the name the new row is bound to")
    when: str | None = Field(None, description="apply only if this holds (e.g. 'hold is not None')")

    @model_validator(mode="after")
    def _one(self) -> EffectSpec:
        if sum(x is not None for x in (self.update, self.insert, self.delete)) != 1:
            raise ValueError("an effect is exactly one of update, insert, delete")
        return self


class ActionSpec(_Spec):
    """A tool. Reads answer a query; writes check preconditions, then apply effects."""

    name: str
    kind: Literal["read", "write"]
    description: str
    params: dict[str, ParamSpec] = Field(default_factory=dict)
    load: dict[str, str | RowsSpec] = Field(
        default_factory=dict,
        description="names bound before checks: 'entity[key expr]' (not found is an error), "
        "'entity[key expr]?' (may be None), or a rows query",
    )
    require: list[CheckSpec] = Field(default_factory=list)
    effects: list[EffectSpec] = Field(default_factory=list)
    returns: Any = Field(None, description="the result: a literal or =expression")
    handler: str | None = Field(None, description="a registered Python handler (escape hatch)")

    @field_validator("name")
    @classmethod
    def _ident(cls, v: str) -> str:
        if not _IDENT.match(v):
            raise ValueError(f"tool name {v!r} must be snake_case")
        return v

    @model_validator(mode="after")
    def _shape(self) -> ActionSpec:
        if self.kind == "read" and self.effects:
            raise ValueError(f"{self.name}: a read tool has no effects")
        if self.handler is None and self.returns is None and self.kind == "read":
            raise ValueError(f"{self.name}: a read tool needs `returns`")
        return self


class PriorCallRule(_Spec):
    """Every successful ``tool`` call must follow a successful ``needs`` call whose arguments
    agree as ``match`` says ({tool_param: needs_param})."""

    tool: str
    needs: str
    match: dict[str, str] = Field(default_factory=dict)


class InvariantRule(_Spec):
    """Every row of ``entity`` the episode changed must satisfy ``check`` (over ``row``)."""

    entity: str
    check: str


class RuleSpec(_Spec):
    """A policy, stated to the agent. Tools enforce it through checks that name it; the
    verifier checks ``prior_call`` and ``invariant`` where no tool would stop the agent."""

    id: str
    text: str
    prior_call: PriorCallRule | None = None
    invariant: InvariantRule | None = None


class AnchorSpec(_Spec):
    """The row a goal is about; its id decides the task's split."""

    entity: str
    where: str | None = Field(None, description="expression over `row`")


class BindSpec(_Spec):
    """A name bound while a task is made, on the initial state, in order.

    Exactly one of: ``row`` ('entity[key expr]'), ``pick`` (a random row), ``rows`` (all
    matching rows), ``choice`` (a random value), ``value`` (an expression), ``fake`` (a Faker
    provider), ``between`` (a random integer in [lo, hi])."""

    row: str | None = None
    pick: RowsSpec | None = None
    rows: RowsSpec | None = None
    choice: list[Any] | None = None
    value: str | None = None
    fake: str | None = None
    between: tuple[int, int] | None = None

    @model_validator(mode="after")
    def _one(self) -> BindSpec:
        given = [k for k in self.model_fields_set if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"a binding is exactly one kind, got {given or 'none'}")
        return self


class GoalSpec(_Spec):
    """A goal template: bindings, a gold plan, and the words of the request."""

    id: str
    level: int = Field(1, ge=1, le=4, description="complexity: L1 single-hop .. L4 hierarchical")
    description: str = ""
    anchor: AnchorSpec
    let: dict[str, str | BindSpec] = Field(default_factory=dict)
    require: list[str] = Field(
        default_factory=list, description="expressions the bindings must satisfy"
    )
    claims: list[str] = Field(
        default_factory=list,
        description="bindings (rows or lists) this goal depends on, which a sibling sub-goal "
        "of a wide task must not touch (anchors, for_each lists and answers claim by default)",
    )
    setup: list[EffectSpec] = Field(
        default_factory=list,
        description="writes that break the world before the episode starts (the agent must "
        "diagnose and repair); update/delete name a row binding, insert names an entity",
    )
    plan: list[StepSpec]
    instruction: list[str] = Field(min_length=1, description="alternative phrasings")
    answer: str | None = Field(
        None,
        description="expression for the answer the user asks for; `result` is what the "
        "plan's last call returned",
    )


class LevelSpec(_Spec):
    """One rung of the difficulty ladder."""

    width: int = Field(1, ge=1, description="independent sub-goals in one task")
    indirection: int = Field(0, ge=0, description="look-up hops needed to find each row")
    distractors: int = Field(0, ge=0, description="prefer references with look-alike rows")
    held_back: float = Field(
        0.0, ge=0.0, le=1.0, description="chance the user holds back a reference's facts"
    )
    goal_levels: list[int] = Field(default_factory=lambda: [1])
    one_call: bool = Field(False, description="only goals whose gold plan is a single call")
    plan_tools: bool = Field(False, description="expose only the tools of the gold plan")

    def admits(self, goal: GoalSpec) -> bool:
        """Whether a goal's tasks belong on this rung."""
        if goal.level not in self.goal_levels:
            return False
        return not self.one_call or (len(goal.plan) == 1 and goal.plan[0].for_each is None)


#: Difficulty 0, below the ladder: one sub-goal, one call, ids given, and only that call's tool
#: shown, so that a small model has somewhere to start (a world without such a goal has none).
STARTER = LevelSpec(width=1, indirection=0, goal_levels=[1], one_call=True, plan_tools=True)

DEFAULT_LADDER: tuple[LevelSpec, ...] = (
    LevelSpec(width=1, indirection=0, goal_levels=[1]),
    LevelSpec(width=1, indirection=1, goal_levels=[1, 2]),
    LevelSpec(width=2, indirection=1, distractors=1, held_back=0.3, goal_levels=[1, 2, 3]),
    LevelSpec(width=2, indirection=2, distractors=1, held_back=0.5, goal_levels=[2, 3, 4]),
    LevelSpec(width=3, indirection=2, distractors=2, held_back=0.6, goal_levels=[2, 3, 4]),
)


#: Names of the verifier's own rubric items (a domain's extra items take other names).
RUBRIC_ITEMS = ("state", "answer", "no_collateral", "rules", "asked_user", "write_budget")
#: What a domain's rubric expressions may read about an episode.
RUBRIC_FACTS = (
    "calls",
    "writes",
    "failed",
    "calls_to",
    "changed",
    "required",
    "matched",
    "missing",
    "collateral",
    "reply",
    "answered",
    "gold_calls",
    "gold_writes",
    "asked",
)


class RubricItemSpec(_Spec):
    """An extra rubric item: an expression over the episode's facts (``RUBRIC_FACTS``)."""

    name: str
    kind: Literal["score", "gate"] = "gate"
    weight: float = Field(1.0, ge=0.0, description="for score items: weight in the mean")
    check: str = Field(description="gate: passes when true; score: a number clipped to [0, 1]")
    reason: str = Field("", description="what a failing check means, shown in the verdict")

    @field_validator("name")
    @classmethod
    def _item_name(cls, v: str) -> str:
        if not _IDENT.match(v) or v in RUBRIC_ITEMS:
            raise ValueError(f"rubric item {v!r}: snake_case, not one of {RUBRIC_ITEMS}")
        return v


class WriteBudgetSpec(_Spec):
    """The write budget defense: at most ``per_gold_write`` x gold writes + ``slack``."""

    per_gold_write: float = Field(3.0, ge=0.0)
    slack: int = Field(5, ge=0)


class RubricSpec(_Spec):
    """How a domain's verdicts combine: weights of score items (``state``, ``answer`` or its
    own), how score items combine, extra items, and the write budget. Gates always multiply."""

    weights: dict[str, float] = Field(default_factory=dict)
    combine: Literal["weighted_sum", "min", "product"] = "weighted_sum"
    items: list[RubricItemSpec] = Field(default_factory=list)
    write_budget: WriteBudgetSpec = Field(default_factory=WriteBudgetSpec)

    @model_validator(mode="after")
    def _names(self) -> RubricSpec:
        names = [i.name for i in self.items]
        if len(set(names)) != len(names):
            raise ValueError("two rubric items share a name")
        scored = {"state", "answer"} | {i.name for i in self.items if i.kind == "score"}
        if bad := sorted(set(self.weights) - scored):
            raise ValueError(f"weights name no score item: {bad}; score items: {sorted(scored)}")
        if any(w < 0 for w in self.weights.values()):
            raise ValueError("rubric weights are >= 0")
        return self


class DomainSpec(_Spec):
    """A whole domain."""

    id: str
    name: str
    description: str
    persona: str = Field(description="who the agent is, first line of its instructions")
    today: dt.date = Field(dt.date(2026, 6, 1), description="the world's clock")
    entities: dict[str, EntitySpec]
    actions: list[ActionSpec]
    rules: list[RuleSpec] = Field(default_factory=list)
    goals: list[GoalSpec]
    ladder: list[LevelSpec] = Field(default_factory=lambda: list(DEFAULT_LADDER))
    starter: LevelSpec | None = Field(
        STARTER, description="difficulty 0, below the ladder (null: the world has none)"
    )
    handlers: str | None = Field(None, description="module that registers Python handlers")
    rubric: RubricSpec | None = Field(
        None, description="override weights or add items to the verifier's rubric"
    )

    @field_validator("id")
    @classmethod
    def _env_id(cls, v: str) -> str:
        if not re.match(r"^[a-z][a-z0-9_-]*$", v):
            raise ValueError(f"domain id {v!r} must be lowercase, digits, '-' or '_'")
        return v

    def action(self, name: str) -> ActionSpec:
        for a in self.actions:
            if a.name == name:
                return a
        raise KeyError(name)
