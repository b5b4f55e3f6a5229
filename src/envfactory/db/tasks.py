"""Logic-first task synthesis.

A task is made by sampling a gold plan and executing it: choose goal instances (a goal template
and an anchor row), bind their values on the initial state, name every row by a reference that
needs look-ups, run the resulting plan through the real tools on a scratch copy of the world,
and record the changes it made and the answers the user asked for. A plan that fails, touches
the rows of a sibling sub-goal, or changes nothing is rejected, so every task is solvable and
not already solved.

Splits are by row ownership (:class:`~envfactory.tasks.seeds.Ownership`), not by the content
keys of :mod:`envfactory.tasks.supply`: a task changes shared rows, so every row belongs to one
split and a task reads and changes only rows of its own; what it asks and solves then differs
by construction. Addresses are checked as the supply checks them (``check_address``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from faker import Faker

from envfactory.contract.errors import DomainError, SynthesisError
from envfactory.contract.tasks import (
    SPLITS,
    Ask,
    HiddenTask,
    PlanStep,
    PublicTask,
    Split,
    TargetChange,
    Task,
)
from envfactory.db.refs import Call, References
from envfactory.domain.expr import Expr, ExprError, Template, Value, compile_expr
from envfactory.domain.spec import BindSpec, DomainSpec, EffectSpec, GoalSpec, LevelSpec, RowsSpec
from envfactory.tasks.seeds import SPLIT_SHARES, Ownership, stable_hash, task_seed
from envfactory.tasks.supply import check_address
from envfactory.tools.runtime import RowLoad, RowsQuery
from envfactory.verify.answers import Vocabulary, comparable
from envfactory.verify.spoken import stated_in
from envfactory.world.state import RowChange, hex_hash
from envfactory.world.store import Store
from envfactory.world.world import World

if TYPE_CHECKING:
    from _typeshed import SupportsLenAndGetItem

_T = TypeVar("_T")

GUESS_SHARE = 0.1  # the most one answer may answer of a question template's anchors

_PREFACES = (
    "I need a few things done.",
    "I have several requests.",
    "Please help me with the following.",
    "There are a few things I'd like you to handle.",
)


def _states_an_answer(chosen: list[_Instance], new: _Instance) -> bool:
    """Whether adding sub-goal ``new`` to ``chosen`` (none of whose requests states any of
    their answers) makes a request state an answer, in any form (a quantity of 6 in one
    request answers a sibling's question whose answer is 6): only the pairs ``new`` is in
    are read."""
    answers = [c.answer for c in chosen if c.answer is not None]
    if new.answer is not None:
        answers.append(new.answer)
        if any(stated_in(c.text, new.answer) for c in chosen):
            return True
    return any(stated_in(new.text, a) for a in answers)


_DRAWING = ("pick", "choice", "fake", "between")  # the binders that draw from the rng
_UNDRAWN = random.Random(0)  # the rng of bindings that draw nothing (never drawn from)


class _Reject(Exception):
    """This candidate cannot make a task (a binding is empty, a plan step fails...)."""


@dataclass
class _Binder:
    name: str
    kind: str
    entity: str | None = None
    load: RowLoad | RowsQuery | None = None
    expr: Expr | None = None
    values: list[Any] = field(default_factory=list)
    provider: str = ""
    bounds: tuple[int, int] = (0, 0)


@dataclass
class _Step:
    tool: str
    args: dict[str, Value]
    when: Expr | None
    for_each: str | None

    def calls(self, scope: dict[str, Any]) -> list[Call]:
        if self.when is not None and not self.when(scope):
            return []
        if self.for_each is None:
            return [(self.tool, {k: v(scope) for k, v in self.args.items()})]
        out = []
        for item in scope[self.for_each]:
            inner = {**scope, "item": item}
            out.append((self.tool, {k: v(inner) for k, v in self.args.items()}))
        return out


@dataclass(frozen=True)
class _SetupWrite:
    """One write of a goal's setup, applied before the episode starts."""

    op: str
    table: str
    name: str | None
    values: dict[str, Value]

    def apply(self, store: Store, scope: dict[str, Any]) -> None:
        values = {f: v(scope) for f, v in self.values.items()}
        if self.op == "insert":
            store.insert(self.table, values)
        elif self.op == "update":
            assert self.name is not None
            store.update(self.table, scope[self.name]["id"], values)
        else:
            assert self.name is not None
            store.delete(self.table, scope[self.name]["id"])


class _Goal:
    """A goal template compiled against a world."""

    def __init__(self, spec: GoalSpec, world: World) -> None:
        self.spec = spec
        tables = world.tables
        if spec.anchor.entity not in tables:
            raise DomainError(f"goal {spec.id}: unknown anchor entity {spec.anchor.entity!r}")
        self.anchor_where = compile_expr(spec.anchor.where) if spec.anchor.where else None
        self.entity_of: dict[str, str] = {"anchor": spec.anchor.entity}
        self.binders = [self._binder(n, b, world) for n, b in spec.let.items()]
        self.draws = any(b.kind in _DRAWING for b in self.binders)  # whether binding uses rng
        self.requires = [compile_expr(r) for r in spec.require]
        self.plan = []
        for s in spec.plan:
            if s.tool not in world.tools:
                raise DomainError(f"goal {spec.id}: plan calls unknown tool {s.tool!r}")
            params = world.tools[s.tool].params
            missing = [p for p, ps in params.items() if ps.required and p not in s.args]
            extra = [a for a in s.args if a not in params]
            if missing or extra:
                raise DomainError(f"goal {spec.id}: {s.tool} args missing {missing} extra {extra}")
            when = compile_expr(s.when) if s.when else None
            args = {k: Value(v) for k, v in s.args.items()}
            self.plan.append(_Step(s.tool, args, when, s.for_each))
        self.setup = [self._setup_write(e, world) for e in spec.setup]
        self.instructions = [Template(t) for t in spec.instruction]
        for t in self.instructions:
            for ref in t.refs:
                if ref not in self.entity_of:
                    raise DomainError(f"goal {spec.id}: {{ref:{ref}}} is not a row binding")
        self.answer = compile_expr(spec.answer) if spec.answer else None
        known = set(self.entity_of) | {b.name for b in self.binders}
        if unknown := sorted(set(spec.claims) - known):
            raise DomainError(f"goal {spec.id}: claims names no binding {unknown}")
        self.listed = (
            {s.for_each for s in spec.plan if s.for_each}
            | (self.answer.names if self.answer else frozenset())
            | set(spec.claims)
        )

    def _setup_write(self, e: EffectSpec, world: World) -> _SetupWrite:
        values = {f: Value(v) for f, v in e.set.items()}
        if e.insert is not None:
            if e.insert not in world.tables:
                raise DomainError(f"goal {self.spec.id}: setup inserts into unknown {e.insert!r}")
            return _SetupWrite("insert", e.insert, None, values)
        name = e.update if e.update is not None else e.delete
        assert name is not None
        if name not in self.entity_of:
            raise DomainError(f"goal {self.spec.id}: setup names no row binding {name!r}")
        op = "update" if e.update is not None else "delete"
        return _SetupWrite(op, self.entity_of[name], name, values)

    def rows_about(self, scope: dict[str, Any]) -> set[tuple[str, str]]:
        """The rows an instance is about: its anchor, and the rows its answer aggregates or
        its plan repeats over (not the rows it merely consulted while being made)."""
        out = {(self.spec.anchor.entity, scope["anchor"]["id"])}
        for name in self.listed:
            value = scope.get(name)
            if name in self.entity_of and isinstance(value, dict):
                out.add((self.entity_of[name], value["id"]))
        for b in self.binders:
            if b.name in self.listed and b.kind == "rows" and isinstance(b.load, RowsQuery):
                out |= {(b.load.table.name, r["id"]) for r in scope[b.name]}
        return out

    def _binder(self, name: str, b: str | BindSpec, world: World) -> _Binder:
        if isinstance(b, str):
            b = BindSpec(row=b)
        if b.row is not None:
            load = RowLoad(b.row, world.tables)
            self.entity_of[name] = load.table.name
            return _Binder(name, "row", load=load)
        if b.pick is not None or b.rows is not None:
            spec: RowsSpec = b.pick or b.rows  # type: ignore[assignment]
            if "limit" not in spec.model_fields_set:  # a binding sees every row unless told
                spec = spec.model_copy(update={"limit": 10_000})
            query = RowsQuery(spec, world.tables)
            if b.pick is not None:
                self.entity_of[name] = spec.rows
            return _Binder(name, "pick" if b.pick else "rows", load=query)
        if b.choice is not None:
            return _Binder(name, "choice", values=list(b.choice))
        if b.value is not None:
            return _Binder(name, "value", expr=compile_expr(b.value))
        if b.fake is not None:
            return _Binder(name, "fake", provider=b.fake)
        assert b.between is not None
        return _Binder(name, "between", bounds=b.between)


@dataclass
class _Instance:
    goal: _Goal
    steps: list[Call]
    text: str
    scope: dict[str, Any]
    answer: Any = None
    facts: dict[str, Any] = field(default_factory=dict)
    setup: list[tuple[str, str]] = field(default_factory=list)

    def question(self) -> list[Any]:
        """What a question asks, for fingerprints: the goal, the row it is about, the answer."""
        return [self.goal.spec.id, self.scope["anchor"]["id"], self.answer]


def levels(spec: DomainSpec) -> tuple[int, ...]:
    """A world's difficulties: the ladder's rungs 1..n, and 0 (the starter) when some goal
    fits it."""
    starter = spec.starter
    first = 0 if starter and any(starter.admits(g) for g in spec.goals) else 1
    return tuple(range(first, len(spec.ladder) + 1))


class TaskFactory:
    """Makes the tasks of one world: ``factory.make(split, difficulty, index)``."""

    MAX_ATTEMPTS = 24  # fallback slots a task may try
    REDRAWS = 8  # draws of bindings per own slot
    MAX_DRAWS = 64  # draws of bindings per train anchor whose answers held-out tasks avoid

    def __init__(self, world: World, env_id: str) -> None:
        self.world = world
        self.env_id = env_id
        self.spec = world.spec
        self.goals = [_Goal(g, world) for g in self.spec.goals]
        self.refs = References(self.spec, world.base)
        owners = {n: e.owner for n, e in self.spec.entities.items() if e.owner is not None}
        self.ownership = Ownership(env_id, world.base, owners)
        self.store: Store = world.new_store()  # scratch state gold plans run on
        self.base_store: Store = world.new_store()  # never written: bindings read the start
        self.fake = Faker("en_US")
        self._viable: dict[int, dict[str, list[str]]] = {}  # goal -> its anchors by split
        self._pools: dict[tuple[str, int], list[tuple[int, str]]] = {}
        self._asked: dict[str, frozenset[Any]] = {}  # goal -> the answers train tasks give
        self.public_rules = [r.text for r in self.spec.rules]
        self.tool_names = list(world.tools)
        self._levels = levels(self.spec)
        self._vocabulary: Vocabulary | None = None

    @property
    def vocabulary(self) -> Vocabulary:
        """The world's column values, which word answers are graded against (built once), with
        every value a column's enum allows: a status that every row holds is still one of its
        options, and naming them all is a list of candidates."""
        if self._vocabulary is None:
            columns = {
                f"{name}.{column}": [
                    *(row[i] for row in self.world.base.rows[name].values()),
                    *self._choices(name, column),
                ]
                for name, table in self.world.tables.items()
                for i, column in enumerate(table.columns)
            }
            self._vocabulary = Vocabulary(columns)
        return self._vocabulary

    def _choices(self, table: str, column: str) -> list[Any]:
        entity = self.spec.entities.get(table)
        field = entity.fields.get(column) if entity is not None else None
        return list(field.choices or []) if field is not None else []

    @property
    def difficulties(self) -> list[int]:
        """The ladder's rungs 1..n, and 0 (the starter) when some goal fits it."""
        return list(self._levels)

    def level(self, difficulty: int) -> LevelSpec:
        if difficulty not in self._levels:
            raise SynthesisError(f"difficulty must be one of {self.difficulties}, got {difficulty}")
        if difficulty == 0:
            assert self.spec.starter is not None
            return self.spec.starter
        return self.spec.ladder[difficulty - 1]

    # -- candidate pools ---------------------------------------------------------------------

    def _viable_anchors(self, gi: int) -> dict[str, list[str]]:
        """The anchors (by split) of goal ``gi`` whose bindings work: tried once per world, and
        only for goals a requested level admits (a campaign's world at a new state asks for one
        level's goals)."""
        found = self._viable.get(gi)
        if found is not None:
            return found
        goal = self.goals[gi]
        by_split: dict[str, list[str]] = {s: [] for s, _ in SPLIT_SHARES}
        held: list[tuple[str, Split, Any]] = []  # held-out anchors that ask, and the answer
        answers: dict[str, Any] = {}  # anchor -> the answer of one draw, as compared
        entity = goal.spec.anchor.entity
        table = self.world.tables[entity]
        for values in self.world.base.rows[entity].values():
            row = table.to_row(values)
            split = self.ownership.split(entity, row["id"])
            try:
                where = goal.anchor_where
                if where is not None and not where({"row": row, "today": self.world.today}):
                    continue
                rng = random.Random(0) if goal.draws else _UNDRAWN  # seeding costs 10 us
                answer = self._trial(goal, self._bind(goal, row, rng), split)
            except (_Reject, ExprError):
                continue
            if answer is not None:
                answers[row["id"]] = comparable(answer)
            if split == "train" or answer is None:
                by_split[split].append(row["id"])
            else:
                held.append((row["id"], split, answer))
        if goal.answer is not None:
            asked = self._asked[goal.spec.id] = self._train_answers(goal, by_split["train"])
            for anchor_id, split, answer in held:
                if comparable(answer) not in asked:
                    by_split[split].append(anchor_id)
            by_split = _unguessable(by_split, answers)
        self._viable[gi] = by_split
        return by_split

    def _trial(self, goal: _Goal, scope: dict[str, Any], split: Split) -> Any:
        """Run the goal's setup and plan on one draw of its bindings: its answer (None when it
        asks nothing). Rejects a plan that fails or changes rows of another split than
        ``split`` (a task that draws otherwise is rejected when it is made)."""
        writes = any(self.world.tools[s.tool].kind == "write" for s in goal.plan)
        if goal.answer is None and not writes:
            return None
        store = self.store
        store.reset()
        try:
            for write in goal.setup:
                write.apply(store, scope)
            store.mark_start(sorted(set(store.journal)))
            result = None
            for step in goal.plan:
                for tool, args in step.calls(scope):
                    outcome = self.world.tools[tool](store, args)
                    if not outcome.ok:
                        raise _Reject(f"gold step {tool} failed")
                    result = outcome.data
            self._held_out(set(store.journal), split)
            if goal.answer is None:
                return None
            answer = goal.answer({**scope, "result": result})
            if answer is None:
                raise _Reject("no answer")
            return answer
        finally:
            store.reset()

    def _train_answers(self, goal: _Goal, anchors: list[str]) -> frozenset[Any]:
        """Every answer the goal gives on its train anchors, over every draw of its bindings
        (up to ``MAX_DRAWS`` per anchor), as answers are compared: a held-out task never asks
        the goal's question with one of these answers, which train material would give away."""
        out: set[Any] = set()
        for anchor_id in anchors:
            anchor = self.refs.row(goal.spec.anchor.entity, anchor_id)
            assert anchor is not None
            draws = _EveryDraw()
            for _ in range(self.MAX_DRAWS):
                with contextlib.suppress(_Reject, ExprError):
                    out.add(comparable(self._trial(goal, self._bind(goal, anchor, draws), "train")))
                if not draws.advance():
                    break
        return frozenset(out)

    def _pool(self, split: str, difficulty: int) -> list[tuple[int, str]]:
        """Candidate (goal, anchor) pairs of one cell in a fixed pseudo-random order that
        interleaves goals, so consecutive slots (a wide task's sub-goals) differ in kind."""
        key = (split, difficulty)
        if key in self._pools:
            return self._pools[key]
        level = self.level(difficulty)
        rng = random.Random(stable_hash("pool", self.env_id, split, difficulty))
        queues = []
        for gi, goal in enumerate(self.goals):
            if not level.admits(goal.spec):
                continue
            by_split = self._viable_anchors(gi)
            if level.one_call and not self._names_only_its_anchor(goal, by_split):
                continue
            if by_split[split]:
                anchors = list(by_split[split])
                rng.shuffle(anchors)
                queues.append([(gi, a) for a in anchors])
        pool: list[tuple[int, str]] = []
        while queues:
            rng.shuffle(queues)
            for q in queues:
                pool.append(q.pop())
            queues = [q for q in queues if q]
        self._pools[key] = pool
        return pool

    def capacity(self, split: str, difficulty: int) -> int:
        """How many goal instances one cell can draw before it starts to reuse anchors."""
        return len(self._pool(split, difficulty))

    # -- binding and rendering ---------------------------------------------------------------

    def _bind(self, goal: _Goal, anchor: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        scope: dict[str, Any] = {"today": self.world.today, "anchor": anchor}
        for b in goal.binders:
            value: Any
            if b.kind == "row":
                assert isinstance(b.load, RowLoad)
                key = b.load.key(scope)
                value = None if key is None else self.refs.row(b.load.table.name, key)
                if value is None:
                    raise _Reject(f"{b.name}: no row {key!r}")
            elif b.kind in ("pick", "rows"):
                assert isinstance(b.load, RowsQuery)
                found = b.load(self.base_store, scope)
                if b.kind == "pick":
                    if not found:
                        raise _Reject(f"{b.name}: nothing to pick")
                    # rows of the anchor's split first: a plan that writes them stays in it
                    home = self.ownership.split(goal.spec.anchor.entity, anchor["id"])
                    table = b.load.table.name
                    own = [r for r in found if self.ownership.split(table, r["id"]) == home]
                    value = rng.choice(own or found)
                else:
                    value = found
            elif b.kind == "choice":
                value = rng.choice(b.values)
            elif b.kind == "value":
                assert b.expr is not None
                value = b.expr(scope)
            elif b.kind == "fake":
                self.fake.seed_instance(rng.getrandbits(32))
                value = getattr(self.fake, b.provider)()
            else:
                value = rng.randint(*b.bounds)
            scope[b.name] = value
        for r in goal.requires:
            if not r(scope):
                raise _Reject("requirement not met")
        return scope

    def _instance(
        self,
        goal: _Goal,
        anchor_id: str,
        level: LevelSpec,
        rng: random.Random,
        siblings: list[_Instance],
    ) -> _Instance:
        anchor = self.refs.row(goal.spec.anchor.entity, anchor_id)
        assert anchor is not None
        scope = self._bind(goal, anchor, rng)
        template = rng.choice(goal.instructions)
        profile = {k: v for c in siblings for k, v in c.facts.items()}
        texts, lookups, facts = self._references(goal, template, scope, level, rng, level.held_back)
        text = template.render(scope, refs=texts.__getitem__)
        if any(profile.get(k, v) != v for k, v in facts.items()) or _gives_away(
            facts, [c.text for c in siblings]
        ):
            # One user, one e-mail, kept to itself: this sub-goal holds nothing back.
            texts, lookups, facts = self._references(goal, template, scope, level, rng, 0.0)
            text = template.render(scope, refs=texts.__getitem__)
        if _gives_away(profile, [text]):
            raise _Reject("the request gives away what a sibling's user keeps to itself")
        steps = list(lookups)
        for s in goal.plan:
            steps += s.calls(scope)
        return _Instance(goal, steps, text, scope, facts=facts)

    def _references(
        self,
        goal: _Goal,
        template: Template,
        scope: dict[str, Any],
        level: LevelSpec,
        rng: random.Random,
        held_back: float,
    ) -> tuple[dict[str, str], list[Call], dict[str, Any]]:
        """Words for each ``{ref:...}``, the look-ups they need, the facts the user keeps."""
        texts: dict[str, str] = {}
        lookups: list[Call] = []
        facts: dict[str, Any] = {}
        for name in template.refs:
            if name not in texts:
                # One person per fact: once a fact is held, later references show theirs.
                r = self.refs.render(
                    goal.entity_of[name],
                    scope[name],
                    level.indirection,
                    level.distractors,
                    rng,
                    0.0 if facts else held_back,
                )
                texts[name] = r.text
                lookups += [c for c in r.lookups if c not in lookups]
                facts.update(r.facts)
        return texts, lookups, facts

    # -- making tasks ------------------------------------------------------------------------

    def _execute(
        self, inst: _Instance, claimed: set[tuple[str, str]], split: Split
    ) -> set[tuple[str, str]]:
        """Run one instance's steps on the scratch state; the rows it claims: those it wrote
        and those it is about (so a sibling sub-goal cannot change what it reads). Its
        changes must belong to ``split`` (see :meth:`_held_out`)."""
        store = self.store
        mark = len(store.journal)
        for write in inst.goal.setup:
            write.apply(store, inst.scope)
        inst.setup = sorted(set(store.journal[mark:]))
        store.mark_start(inst.setup)
        result = None
        for tool, args in inst.steps:
            outcome = self.world.tools[tool](store, args)
            if not outcome.ok:
                raise _Reject(f"gold step {tool} failed")
            result = outcome.data
        if inst.goal.answer is not None:
            inst.answer = inst.goal.answer({**inst.scope, "result": result})
            if inst.answer is None or _answer_text(inst.answer).lower() in inst.text.lower():
                raise _Reject("no answer, or the request gives its own answer away")
            if split != "train" and comparable(inst.answer) in self._asked[inst.goal.spec.id]:
                raise _Reject("a train task asks this question with this answer")
        written = set(store.journal[mark:])
        claims = written | inst.goal.rows_about(inst.scope)
        if claims & claimed:
            raise _Reject("shares rows with another sub-goal")
        if inst.answer is None and all(
            store.raw(t, k) == store.start_value(t, k) for t, k in written
        ):
            raise _Reject("changes nothing")
        self._held_out(written, split)
        return claims

    def _held_out(self, written: set[tuple[str, str]], split: Split) -> None:
        """Reject changes a task of another split could make too. Every existing row changed,
        and every existing row a new row points at, must belong to ``split``; and a held-out
        sub-goal that changes something must change such a row (a new row pointing at nothing
        could be any split's: only train tasks create one). So no other split's target holds
        this change, and no test task's work is all done by train tasks."""
        store = self.store
        owned = changed = False
        for table, key in written:
            before, after = store.start_value(table, key), store.raw(table, key)
            if before == after:
                continue
            changed = True
            if before is not None:
                rows = [(table, key)]
            else:
                assert after is not None
                rows = self.ownership.pointed_at(table, after)
            if any(self.ownership.split(t, k) != split for t, k in rows):
                raise _Reject("changes rows of another split")
            owned = owned or bool(rows)
        if changed and not owned and split != "train":
            raise _Reject("changes only rows that belong to no split")

    def make(self, split: Split, difficulty: int, index: int) -> Task:
        """The task at (split, difficulty, index): a pure function of those and the world."""
        check_address(self.env_id, SPLITS, self.difficulties, split, difficulty, index)
        level = self.level(difficulty)
        pool = self._pool(split, difficulty)
        if not pool:
            raise SynthesisError(f"{self.env_id}: no goal fits {split} at difficulty {difficulty}")
        rng = random.Random(task_seed(self.env_id, split, difficulty, index))
        width = min(level.width, len(pool))
        chosen: list[_Instance] = []
        claimed: set[tuple[str, str]] = set()
        taken: set[int] = set()
        self.store.reset()
        slots = _slots(index, width, len(pool), self.REDRAWS, self.MAX_ATTEMPTS, self.env_id, split)
        for slot in slots:
            if len(chosen) == width:
                break
            if slot in taken:
                continue
            gi, anchor_id = pool[slot]
            try:
                inst = self._instance(self.goals[gi], anchor_id, level, rng, chosen)
                with self.store.transaction():
                    claimed |= self._execute(inst, claimed, split)
                    if _states_an_answer(chosen, inst):
                        raise _Reject("a request states an answer")
            except (_Reject, ExprError):
                continue
            chosen.append(inst)
            taken.add(slot)
        if len(chosen) < width:
            raise SynthesisError(f"{self.env_id}: no task at {split}/{difficulty}/{index}")
        return self._task(split, difficulty, index, level, chosen, self.store.changes(), rng)

    def _names_only_its_anchor(self, goal: _Goal, by_split: dict[str, list[str]]) -> bool:
        """Whether the goal's calls take no row id but its anchor's (tried on one anchor): only
        such a goal is a starter task, whose request says every id its one call needs
        (university's section_instructor lists sections by a course the request never names)."""
        anchors = [a for ids in by_split.values() for a in ids]
        if not anchors:
            return False
        entity = goal.spec.anchor.entity
        anchor = self.refs.row(entity, anchors[0])
        assert anchor is not None
        try:
            scope = self._bind(goal, anchor, random.Random(0))
        except (_Reject, ExprError):
            return False
        rows = self.world.base.rows
        return not any(
            isinstance(v, str) and v != anchor["id"] and any(v in rows[t] for t in rows)
            for step in goal.plan
            for _, args in step.calls(scope)
            for v in args.values()
        )

    def _task(
        self,
        split: Split,
        difficulty: int,
        index: int,
        level: LevelSpec,
        chosen: list[_Instance],
        changes: list[RowChange],
        rng: random.Random,
    ) -> Task:
        task_id = f"{self.env_id}/{split}/{difficulty}/{index}"
        if len(chosen) == 1:
            instruction = chosen[0].text
        else:
            items = "\n".join(f"{i}. {c.text}" for i, c in enumerate(chosen, 1))
            instruction = f"{rng.choice(_PREFACES)}\n{items}"
        answers = [c.answer for c in chosen if c.answer is not None]
        target = [
            TargetChange(table=c.table, id=c.key, before=c.before, after=c.after) for c in changes
        ]
        plan, asks, profile = _user_steps(chosen, instruction)
        setup = self._setup_changes(chosen)
        public = PublicTask(
            task_id=task_id,
            env_id=self.env_id,
            split=split,
            difficulty=difficulty,
            instruction=instruction,
            persona=self.spec.persona,
            rules=self.public_rules,
            tools=self._shown_tools(level, plan),
        )
        hidden = HiddenTask(
            task_id=task_id,
            goals=[c.goal.spec.id for c in chosen],
            gold_plan=plan,
            target=target,
            answers=answers,
            answer_goals=[c.goal.spec.id for c in chosen if c.answer is not None],
            questions=[_question_key(c) for c in chosen if c.answer is not None],
            answer_key=self.vocabulary.key(instruction, answers),
            profile=profile,
            asks=asks,
            setup=setup,
            knobs={
                "width": len(chosen),
                "indirection": level.indirection,
                "distractors": level.distractors,
                "max_level": max(c.goal.spec.level for c in chosen),
            },
            fingerprint=fingerprint(target, [c.question() for c in chosen if c.answer is not None]),
        )
        start = self.world.base.patched_hash(
            [
                (
                    c.table,
                    c.id,
                    None if c.after is None else self.world.tables[c.table].to_tuple(c.after),
                )
                for c in setup
            ],
        )
        return Task(public=public, hidden=hidden, initial_hash=hex_hash(start))

    def _shown_tools(self, level: LevelSpec, plan: list[PlanStep]) -> list[str]:
        if not level.plan_tools:
            return self.tool_names
        used = {s.tool for s in plan}
        return [t for t in self.tool_names if t in used]

    def _setup_changes(self, chosen: list[_Instance]) -> list[TargetChange]:
        """The rows each sub-goal's setup broke, as the episode's start has them."""
        out = []
        for inst in chosen:
            for table, key in inst.setup:
                t = self.world.tables[table]
                before = self.world.base.rows[table].get(key)
                after = self.store.start[(table, key)]
                out.append(
                    TargetChange(
                        table=table,
                        id=key,
                        before=None if before is None else t.to_row(before),
                        after=None if after is None else t.to_row(after),
                    )
                )
        return out


class _EveryDraw(random.Random):
    """Stands in for a binding's random draws and walks all their outcomes, one pass per
    outcome (:meth:`advance` to the next); a fake value is one draw, not walked."""

    def __init__(self) -> None:
        super().__init__(0)
        self.path: list[list[int]] = []  # per choice made this pass: [taken, options]
        self.depth = 0

    def choice(self, seq: SupportsLenAndGetItem[_T]) -> _T:
        return seq[self._take(len(seq))]

    def randint(self, a: int, b: int) -> int:
        return a + self._take(b - a + 1)

    def _take(self, options: int) -> int:
        if self.depth == len(self.path):
            self.path.append([0, options])
        self.depth += 1
        return self.path[self.depth - 1][0]

    def advance(self) -> bool:
        """Move to the next outcome; False once every outcome was drawn."""
        self.depth = 0
        while self.path:
            if self.path[-1][0] + 1 < self.path[-1][1]:
                self.path[-1][0] += 1
                return True
            self.path.pop()
        return False


def _unguessable(by_split: dict[str, list[str]], answers: dict[str, Any]) -> dict[str, list[str]]:
    """A question template's anchors, by split, with no answer given by more than
    ``GUESS_SHARE`` of a split's anchors (the rest of its anchors are dropped, the first kept);
    none at all when the template's answers take fewer than ``1 / GUESS_SHARE`` values over
    the whole world, so its most frequent answer, a guess made without reading the question,
    would be right on more than that share of its tasks (a status of three values, a count of
    a few children)."""
    if len(set(answers.values())) * GUESS_SHARE < 1:
        return {split: [] for split in by_split}
    out: dict[str, list[str]] = {}
    for split, anchors in by_split.items():
        cap, seen = max(1, int(GUESS_SHARE * len(anchors))), Counter[Any]()
        out[split] = []
        for anchor in anchors:
            seen[answers[anchor]] += 1
            if seen[answers[anchor]] <= cap:
                out[split].append(anchor)
    return out


def _slots(index: int, width: int, size: int, redraws: int, extra: int, *salt: str) -> list[int]:
    """Pool positions to try for a task: each of its own ``width`` slots up to ``redraws``
    times (each try draws the bindings anew), then ``extra`` fallbacks drawn by hash. Every
    other slot is another index's own, so a fallback risks repeating that index's task (not
    the next slots, which would duplicate the next index outright): a draw that fails only by
    chance (a value binding chose a row of another split) is drawn again first."""
    own = [(index * width + j) % size for j in range(width) for _ in range(redraws)]
    fallback = random.Random(stable_hash("fallback", index, width, *salt))
    return own + [fallback.randrange(size) for _ in range(extra)]


def _gives_away(facts: dict[str, Any], texts: list[str]) -> bool:
    return any(str(v) in t for v in facts.values() for t in texts)


def _user_steps(
    chosen: list[_Instance], instruction: str
) -> tuple[list[PlanStep], list[Ask], dict[str, Any]]:
    """The gold plan, marking arguments only the user knows, with an ask before the first
    step of each sub-goal that needs one; and the facts the user actually has to give (a
    fact another sub-goal's words give away is no longer the user's alone)."""
    plan: list[PlanStep] = []
    asks: list[Ask] = []
    profile: dict[str, Any] = {}
    for inst in chosen:
        asked: set[str] = set(profile)
        held = {f: v for f, v in inst.facts.items() if str(v) not in instruction}
        for tool, args in inst.steps:
            from_user = {
                arg: fact
                for arg, value in args.items()
                for fact, known in held.items()
                if isinstance(value, str) and value == known
            }
            new = sorted(set(from_user.values()) - asked)
            if new:
                asks.append(Ask(before_step=len(plan), facts=new))
                asked |= set(new)
            profile.update({f: held[f] for f in from_user.values()})
            plan.append(PlanStep(tool=tool, arguments=args, from_user=from_user))
    return plan, asks, profile


def _answer_text(v: Any) -> str:
    return f"{v:.2f}" if isinstance(v, float) else str(v)


def _question_key(inst: _Instance) -> str:
    return json.dumps(inst.question(), default=str)


def fingerprint(target: list[TargetChange], questions: list[Any]) -> str:
    """What a task asks for: the changes (ids of inserted rows left out, as they depend on
    call order) and the questions."""
    parts = []
    for c in target:
        after = c.after
        if c.before is None and after is not None:
            after = {k: v for k, v in after.items() if k != "id"}
            parts.append([c.table, None, None, after])
        else:
            parts.append([c.table, c.id, c.before, after])
    # each part dumped once: its sort key is its text in ``json.dumps([parts, questions])``
    texts = sorted(json.dumps(p, sort_keys=True, default=str) for p in parts)
    asked = json.dumps(questions, sort_keys=True, default=str)
    text = f"[[{', '.join(texts)}], {asked}]"
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()
