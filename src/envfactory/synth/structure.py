"""The structure of a world with its names, words and numbers stripped.

:func:`structure` reads a domain (a :class:`DomainSpec` or its data) and builds a graph of its
entities, tools, rules, lifecycles and goals, where every node and edge is labelled by its
*shape* alone:

- **entities**: the multiset of field kinds (type and generator, unique, nullable), the row-count
  class (a fixed table, or per parent: exactly one, zero or more, one or more), link tables
  (two or more required references), the shapes of the ways to name a row; edges are reference
  fields (required or optional, scoped, owner, self-reference) and per-parent generation;
- **tools**: read or write, the multiset of parameter types, what each load fetches (by key,
  optional, or a rows query with its filter), each check's expression with identifiers and
  literals abstracted (parameters by type, loaded rows, the language's functions kept), each
  effect's kind (update, insert, delete), fields set and kind of values; edges to the entities
  they load and write, the rules they enforce and the lifecycles they move;
- **rules**: ``prior_call`` with or without ``match``, ``invariant`` (with its check's shape),
  enforced by a tool's check, or text only;
- **lifecycles**: the state machines of fields that effects set to constants (or to an enum
  parameter), guarded by checks such as ``x.status in [...]``; the transition graph is put in
  canonical form up to renaming of its states;
- **goals**: level, and each plan step's read/write, ``for_each`` and ``when``; answers and setup.

Weisfeiler-Lehman colour refinement over that graph, with neighbourhoods taken as sets (so a
part repeated is not a new structure), then a hash, gives :attr:`Structure.digest`: two worlds
are the same structure iff their digests match. Each component has its own digest too, so a
report can say which parts differ. Text, names, row counts, limits and other constants never
enter a label.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import itertools
import math
import re
from collections import Counter, defaultdict
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from envfactory.domain.expr import FUNCTIONS
from envfactory.domain.loader import parse_domain
from envfactory.domain.spec import (
    ActionSpec,
    DomainSpec,
    EffectSpec,
    EntitySpec,
    FieldSpec,
    GoalSpec,
    RowsSpec,
    RuleSpec,
)

#: The components of a structure, in report order.
COMPONENTS = ("entity_graph", "tools", "lifecycles", "rules", "plans")
#: Names of the expression language that are words of the language, not of a domain.
_KEPT = frozenset(FUNCTIONS) | {"today", "row", "item", "anchor", "result"}
_KEY_LOAD = re.compile(r"^\s*(\w+)\s*\[(.*)\]\s*(\?)?\s*$", re.S)
#: WL rounds; the graph's longest chains (goal -> tool -> entity -> entity) fit well within it.
_ROUNDS = 4
#: Beyond this many orderings of tied states, a lifecycle keeps its colour-refined order.
_MAX_ORDERINGS = 5040

Edge = tuple[str, str, str]  # (source node, label, target node)


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Structure:
    """A world's structure: one digest, a digest per component, and readable labels."""

    digest: str
    components: dict[str, str]
    lifecycles: tuple[str, ...]  # canonical lifecycle shapes, one per lifecycle field
    rule_kinds: tuple[str, ...]  # one per rule: prior_call, invariant, enforced, text only
    constraints: tuple[str, ...]  # one per rule: its kind and the shapes of its checks


def structure(domain: DomainSpec | Mapping[str, Any], source: str = "<data>") -> Structure:
    """The structure of ``domain`` (data is validated first: bad data raises ``DomainError``
    naming ``source``)."""
    spec = domain if isinstance(domain, DomainSpec) else parse_domain(dict(domain), source)
    return _Builder(spec).build()


# --- expressions --------------------------------------------------------------------------


def expr_shape(source: str, roles: Mapping[str, str]) -> str:
    """``source`` with identifiers replaced by their role (``roles``: name -> role; the
    language's own names kept; others ``n``), literals by their type, fields by ``.f``;
    operands of ``and``/``or``/``==``/``!=`` sorted and ``>`` turned round into ``<``, so
    rewording the order changes nothing."""
    tree = _tree(source)
    return "unparsable" if tree is None else _shape(tree, roles)


@functools.lru_cache(maxsize=65536)
def _tree(source: str) -> ast.expr | None:
    """The parsed expression (worlds of one library repeat theirs; the trees are only read)."""
    try:
        return ast.parse(f"({source.strip()})", mode="eval").body
    except SyntaxError:
        return None


def _const(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return f"c:{value}"
    return "c:num" if isinstance(value, int | float) else "c:str"


def _shape(node: ast.AST, roles: Mapping[str, str]) -> str:
    match node:
        case ast.Name(id=name):
            return roles.get(name) or (name if name in _KEPT else "n")
        case ast.Constant(value=value):
            return _const(value)
        case ast.Attribute(value=inner):
            return f"{_shape(inner, roles)}.f"
        case ast.List(elts=elts) | ast.Tuple(elts=elts) | ast.Set(elts=elts) if all(
            isinstance(e, ast.Constant) for e in elts
        ):
            kinds = {_const(e.value) for e in elts if isinstance(e, ast.Constant)}
            return "consts(" + ",".join(sorted(kinds)) + ")"
        case ast.BoolOp(op=op, values=values):
            return (
                f"{type(op).__name__}(" + ",".join(sorted(_shape(v, roles) for v in values)) + ")"
            )
        case ast.Compare(left=left, ops=[ast.Eq() | ast.NotEq() as op], comparators=[right]):
            sides = sorted([_shape(left, roles), _shape(right, roles)])
            return f"{type(op).__name__}({sides[0]},{sides[1]})"
        case ast.Compare(left=left, ops=[ast.Gt() | ast.GtE() as op], comparators=[right]):
            flipped = "Lt" if isinstance(op, ast.Gt) else "LtE"  # a > b is b < a
            return f"Compare({_shape(right, roles)},{flipped}(),{_shape(left, roles)})"
    parts = [
        _shape(c, roles) for c in ast.iter_child_nodes(node) if not isinstance(c, ast.expr_context)
    ]
    return f"{type(node).__name__}({','.join(parts)})"


def _value_kind(value: Any, params: Mapping[str, Any]) -> str:
    """What an effect writes into a field: a constant, a parameter, or an expression."""
    if not (isinstance(value, str) and value.startswith("=")):
        return "const"
    return "param" if value[1:].strip() in params else "expr"


# --- lifecycles ---------------------------------------------------------------------------


def _compared(node: ast.AST, binding: str, field: str) -> tuple[bool, set[Any]] | None:
    """(negated, values) if ``node`` compares ``binding.field`` with constants: ``==``,
    ``in`` (negated: ``!=``, ``not in``)."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return None
    left, right, op = node.left, node.comparators[0], node.ops[0]
    if isinstance(left, ast.Constant):
        left, right = right, left
    if not (
        isinstance(left, ast.Attribute)
        and left.attr == field
        and isinstance(left.value, ast.Name)
        and left.value.id == binding
        and isinstance(op, ast.Eq | ast.In | ast.NotEq | ast.NotIn)
    ):
        return None
    items = right.elts if isinstance(right, ast.List | ast.Tuple | ast.Set) else [right]
    if not all(isinstance(e, ast.Constant) for e in items):
        return None
    values = {e.value for e in items if isinstance(e, ast.Constant)}
    return isinstance(op, ast.NotEq | ast.NotIn), values


def _mentioned(tree: ast.AST, binding: str, field: str) -> set[Any]:
    """The constants ``tree`` compares ``binding.field`` with."""
    return {
        v
        for node in ast.walk(tree)
        if (found := _compared(node, binding, field)) is not None
        for v in found[1]
    }


def _allowed(node: ast.AST, binding: str, field: str, states: set[Any]) -> set[Any] | None:
    """The states of ``binding.field`` in which ``node`` can hold (None: it does not say)."""
    if isinstance(node, ast.BoolOp):
        parts = [_allowed(v, binding, field, states) for v in node.values]
        known = [p for p in parts if p is not None]
        if isinstance(node.op, ast.And):
            return set.intersection(*known) if known else None
        return set().union(*known) if len(known) == len(parts) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _allowed(node.operand, binding, field, states)
        return None if inner is None else states - inner
    found = _compared(node, binding, field)
    if found is None:
        return None
    negated, values = found
    return states - values if negated else states & values


NEW = "<new>"  # the source state of a row an insert creates
OTHER = "<other>"  # the values a string field without `choices` may start with, unknown
_PSEUDO = {NEW: "new", OTHER: "other"}


@dataclass(frozen=True)
class _Move:
    """An effect that sets a status-like field: from any state (guards aside), or from
    ``NEW`` for an insert; ``chosen`` when the target is the caller's, from an enum param."""

    tool: str
    created: bool
    binding: str
    guards: list[ast.expr]  # the checks that compare the field with constants
    targets: set[Any]
    chosen: bool

    @property
    def free(self) -> bool:
        """Whether the move says nothing about states: an insert, or an unguarded choice."""
        return self.created or (self.chosen and not self.guards)


@dataclass
class _Lifecycle:
    field: str
    initial: set[Any]
    states: set[Any]
    moves: list[_Move]

    def edges(self) -> dict[str, set[tuple[Any, Any]]]:
        """Each tool's transitions, with guards resolved over all the states."""
        out: dict[str, set[tuple[Any, Any]]] = defaultdict(set)
        for m in self.moves:
            froms = {NEW} if m.created else set(self.states)
            for guard in m.guards:
                allowed = _allowed(guard, m.binding, self.field, self.states)
                froms &= self.states if allowed is None else allowed
            out[m.tool] |= {(a, b) for a in froms for b in m.targets if a != b}
        return out


def canonical_lifecycle(
    states: Iterable[Any], initial: set[Any], edges: set[tuple[Any, Any]]
) -> tuple[str, dict[Any, str]]:
    """A label of a transition graph that does not depend on its states' names (colour
    refinement, then the least label over the orderings of states whose colours tie, or their
    refined order where there are too many), and each state's refined colour, which states
    that the graph's symmetries exchange share."""
    nodes = sorted({*states, *(a for a, _ in edges), *(b for _, b in edges)}, key=repr)
    colour = {s: _PSEUDO.get(s) or ("init" if s in initial else "state") for s in nodes}
    for _ in nodes:
        step = {
            s: _h(
                f"{colour[s]}|{sorted(colour[b] for a, b in edges if a == s)}"
                f"|{sorted(colour[a] for a, b in edges if b == s)}"
            )
            for s in nodes
        }
        if len(set(step.values())) == len(set(colour.values())):
            break
        colour = step
    ranked = sorted(nodes, key=lambda s: (colour[s], repr(s)))
    classes = [list(g) for _, g in itertools.groupby(ranked, key=lambda s: colour[s])]
    if math.prod(math.factorial(len(c)) for c in classes) <= _MAX_ORDERINGS:
        orderings: Iterable[tuple[Any, ...]] = (
            tuple(itertools.chain.from_iterable(p))
            for p in itertools.product(*(itertools.permutations(c) for c in classes))
        )
    else:
        orderings = [tuple(ranked)]
    count = f"{sum(s not in _PSEUDO for s in nodes)} states, {len(initial & set(nodes))} initial:"
    best: str | None = None
    for ordering in orderings:
        order = {s: i for i, s in enumerate(s for s in ordering if s not in _PSEUDO)}
        order |= {NEW: -2, OTHER: -1}
        name = {s: _PSEUDO.get(s) or f"{order[s]}{'*' * (s in initial)}" for s in nodes}
        moves = sorted(edges, key=lambda e: (order[e[0]], order[e[1]]))
        label = " ".join([count, *(f"{name[a]}>{name[b]}" for a, b in moves)])
        best = label if best is None else min(best, label)
    assert best is not None
    return best, colour


# --- the graph ----------------------------------------------------------------------------


def _field_kind(f: FieldSpec) -> str:
    generator = (
        "faker"
        if f.faker
        else "choices"
        if f.choices is not None
        else "copy"
        if f.copy_from
        else "expr"
        if f.expr
        else "pattern"
        if f.pattern
        else "range"
        if f.min is not None or f.max is not None
        else "plain"
    )
    flags = [name for name, on in (("unique", f.unique), ("nullable", f.null_rate > 0)) if on]
    return ":".join([f.type, generator, *flags, *(["twins"] if f.twin_rate > 0 else [])])


def _rows_class(e: EntitySpec) -> str:
    if e.per is None:
        return "fixed"
    if e.per.min == e.per.max == 1:
        return "per:one"
    return "per:0..n" if e.per.min == 0 else "per:1..n"


def _rule_kind(rule: RuleSpec, enforced: Container[str]) -> str:
    if rule.prior_call is not None:
        return "prior_call:match" if rule.prior_call.match else "prior_call:any"
    if rule.invariant is not None:
        return "invariant"
    return "enforced_by_tool" if rule.id in enforced else "text_only"


def _wl(labels: Mapping[str, str], edges: Iterable[Edge]) -> str:
    """Weisfeiler-Lehman colour refinement with neighbourhoods as sets (edges to nodes outside
    ``labels`` left out); the digest of the set of final colours."""
    near: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for a, label, b in edges:
        if a not in labels or b not in labels:
            continue
        near[a].add((f"out:{label}", b))
        near[b].add((f"in:{label}", a))
    colour = {n: _h(label) for n, label in labels.items()}
    for _ in range(_ROUNDS):
        colour = {
            n: _h(colour[n] + "|" + ",".join(sorted({f"{e}>{colour[m]}" for e, m in near[n]})))
            for n in labels
        }
    return _h(",".join(sorted(set(colour.values()))))


def _digest(labels: Iterable[str]) -> str:
    return _h("\n".join(sorted(set(labels))))


class _Builder:
    """The labelled graph of one domain."""

    def __init__(self, spec: DomainSpec) -> None:
        self.spec = spec
        self.labels: dict[str, str] = {}
        self.edges: list[Edge] = []
        self.kinds = {a.name: a.kind for a in spec.actions}
        self.moves: dict[tuple[str, str], _Lifecycle] = {}
        self.enforcing: dict[str, set[str]] = defaultdict(set)  # rule -> its checks' shapes

    def edge(self, a: str, label: str, b: str) -> None:
        self.edges.append((a, label, b))

    def build(self) -> Structure:
        spec = self.spec
        for name, e in spec.entities.items():
            self.labels[f"e:{name}"] = self.entity(name, e)
        for a in spec.actions:
            self.labels[f"t:{a.name}"] = self.tool(a)
        rules = {f"r:{r.id}": self.rule(r) for r in spec.rules}
        self.labels.update(rules)
        lifecycles = self.lifecycles()
        goals = {f"g:{g.id}": self.goal(g) for g in spec.goals}
        self.labels.update(goals)
        tools = [self.labels[f"t:{a.name}"] for a in spec.actions]
        components = {
            "entity_graph": _wl(
                {n: self.labels[n] for n in self.labels if n[0] == "e"}, self.edges
            ),
            "tools": _digest(tools),
            "lifecycles": _digest(lifecycles),
            "rules": _digest(rules.values()),
            "plans": _digest(goals.values()),
        }
        whole = _wl(self.labels, self.edges)
        return Structure(
            digest=_h(whole + "".join(components[c] for c in COMPONENTS)),
            components=components,
            lifecycles=tuple(sorted(lifecycles)),
            rule_kinds=tuple(sorted(_rule_kind(r, self.enforcing) for r in spec.rules)),
            constraints=tuple(sorted(label.removeprefix("rule|") for label in rules.values())),
        )

    def entity(self, name: str, e: EntitySpec) -> str:
        required = 0
        for fname, f in e.fields.items():
            if f.type != "ref" or f.ref is None:
                continue
            required += f.null_rate == 0
            flags = [
                "opt" if f.null_rate > 0 else "req",
                *(["scoped"] if f.scope else []),
                *(["owner"] if e.owner == fname else []),
                *(["self"] if f.ref == name else []),
            ]
            self.edge(f"e:{name}", "ref:" + ":".join(flags), f"e:{f.ref}")
        if e.per is not None:
            self.edge(f"e:{name}", _rows_class(e), f"e:{e.per.entity}")
        names = []
        for ref in e.refs:
            names.append(
                f"name(unique={len(ref.unique)},parent={ref.parent is not None},"
                f"held={ref.held is not None},lookups={len(ref.lookup)})"
            )
            for step in ref.lookup:
                self.edge(f"e:{name}", "named_by", f"t:{step.tool}")
        fields = sorted(_field_kind(f) for f in e.fields.values() if f.type != "ref")
        return (
            f"entity|{_rows_class(e)}|link={required >= 2}|owned={e.owner is not None}"
            f"|fields={fields}|names={sorted(names)}"
        )

    def tool(self, a: ActionSpec) -> str:
        roles = {p: f"p:{s.type}" for p, s in a.params.items()}
        bound: dict[str, str] = {}  # binding -> entity
        loads = []
        for name, load in a.load.items():
            if isinstance(load, RowsSpec):
                roles[name], bound[name] = "rows", load.rows
                where = sorted(_value_kind(v, a.params) for v in load.where.values())
                order = "-" if not load.order_by else "desc" if load.order_by[0] == "-" else "asc"
                kept = load.filter and expr_shape(load.filter, roles)
                shape = f"rows(where={where},filter={kept},order={order})"
                loads.append(shape)
                self.edge(f"t:{a.name}", f"load:{shape}", f"e:{load.rows}")
            elif m := _KEY_LOAD.match(load):
                roles[name], bound[name] = ("maybe" if m[3] else "one"), m[1]
                shape = f"key({expr_shape(m[2], roles)}){'?' if m[3] else ''}"
                loads.append(shape)
                self.edge(f"t:{a.name}", f"load:{shape}", f"e:{m[1]}")
            else:
                roles[name] = "value"
                loads.append(f"value({expr_shape(load, roles)})")
        checks = []
        for c in a.require:
            shape = expr_shape(c.check, roles)
            checks.append(f"{c.code}:{'rule' if c.rule else '-'}:{shape}")
            if c.rule:
                self.edge(f"t:{a.name}", "enforces", f"r:{c.rule}")
                self.enforcing[c.rule].add(shape)
        effects = [self.effect(a, e, bound, roles) for e in a.effects]
        params = sorted(
            ":".join(
                [
                    s.type,
                    *(["enum"] if s.enum else []),
                    *(["date"] if s.format else []),
                    *(["optional"] if not s.required else []),
                    *([s.items] if s.type == "array" else []),
                    *(["bounded"] if s.minimum is not None or s.maximum is not None else []),
                ]
            )
            for s in a.params.values()
        )
        returns = a.returns
        shape = (
            expr_shape(returns[1:], roles)
            if isinstance(returns, str) and returns.startswith("=")
            else type(returns).__name__
        )
        return (
            f"tool|{a.kind}|handler={a.handler is not None}|params={params}|loads={sorted(loads)}"
            f"|checks={sorted(checks)}|effects={sorted(effects)}|returns={shape}"
        )

    def effect(
        self, a: ActionSpec, e: EffectSpec, bound: dict[str, str], roles: dict[str, str]
    ) -> str:
        kind = "update" if e.update else "insert" if e.insert else "delete"
        values = sorted(_value_kind(v, a.params) for v in e.set.values())
        shape = f"{kind}(set={len(e.set)},{values},when={e.when is not None})"
        target = e.insert if e.insert is not None else bound.get(e.update or e.delete or "")
        if target is not None:
            self.edge(f"t:{a.name}", f"write:{shape}", f"e:{target}")
            self.note_moves(a, e, target)
        if e.insert and e.name:
            roles[e.name], bound[e.name] = "new", e.insert
        return shape

    def note_moves(self, a: ActionSpec, e: EffectSpec, entity: str) -> None:
        """Record the lifecycle moves of an effect: fields set to constants or enum params."""
        fields = self.spec.entities[entity].fields if entity in self.spec.entities else {}
        for field, value in e.set.items():
            f = fields.get(field)
            if f is None or f.type not in ("string", "boolean") or e.delete:
                continue
            param = (
                a.params.get(value[1:].strip())
                if isinstance(value, str) and value.startswith("=")
                else None
            )
            if param is not None and param.enum:
                targets = set(param.enum)
            elif isinstance(value, str | bool) and not (
                isinstance(value, str) and value.startswith("=")
            ):
                targets = {value}
            else:
                continue
            sources = [c.check for c in a.require] + ([e.when] if e.when else [])
            trees = [t for t in map(_tree, sources) if t is not None] if e.update else []
            guards = [t for t in trees if _mentioned(t, e.update or "", field)]
            initial = {v for v in f.choices or [] if isinstance(v, str | bool)}
            initial |= {True, False} if f.type == "boolean" else set()
            known = initial or {OTHER}
            life = self.moves.setdefault(
                (entity, field), _Lifecycle(field, initial, set(known), [])
            )
            life.states |= targets
            life.states |= {v for t in guards for v in _mentioned(t, e.update or "", field)}
            chosen = param is not None
            life.moves.append(
                _Move(a.name, e.insert is not None, e.update or "", guards, targets, chosen)
            )

    def lifecycles(self) -> list[str]:
        labels = []
        for (entity, field), life in sorted(self.moves.items()):
            if all(m.free for m in life.moves):
                continue  # set when a row is made, or to whatever the caller picks: no states
            moves = life.edges()
            label, colour = canonical_lifecycle(
                life.states, life.initial, set().union(*moves.values())
            )
            node = f"l:{entity}.{field}"
            self.labels[node] = f"lifecycle|{label}"
            labels.append(label)
            self.edge(node, "of", f"e:{entity}")
            for tool, pairs in moves.items():
                steps = sorted(f"{colour[a]}>{colour[b]}" for a, b in pairs)
                self.edge(f"t:{tool}", f"moves:{steps}", node)
        return labels

    def rule(self, r: RuleSpec) -> str:
        label = f"rule|{_rule_kind(r, self.enforcing)}"
        if r.prior_call is not None:
            self.edge(f"r:{r.id}", "guards", f"t:{r.prior_call.tool}")
            self.edge(f"r:{r.id}", "needs", f"t:{r.prior_call.needs}")
            label += f"|match={sorted('.' in k for k in r.prior_call.match)}"
        if r.invariant is not None:
            self.edge(f"r:{r.id}", "invariant", f"e:{r.invariant.entity}")
            label += f"|{expr_shape(r.invariant.check, {})}"
        if r.id in self.enforcing:
            label += f"|checks={sorted(self.enforcing[r.id])}"
        return label

    def goal(self, g: GoalSpec) -> str:
        steps = []
        for i, s in enumerate(g.plan):
            step = (
                f"{self.kinds.get(s.tool, '?')}{'*' if s.for_each else ''}{'?' if s.when else ''}"
            )
            steps.append(step)
            self.edge(f"g:{g.id}", f"step:{i}:{step}", f"t:{s.tool}")
        self.edge(f"g:{g.id}", f"anchor:{g.anchor.where is not None}", f"e:{g.anchor.entity}")
        setup = sorted(
            "update" if e.update else "insert" if e.insert else "delete" for e in g.setup
        )
        return f"goal|L{g.level}|{'-'.join(steps)}|answer={g.answer is not None}|setup={setup}"


def count_worlds(items: Iterable[Iterable[str]]) -> dict[str, int]:
    """How many worlds have each label (a world counts once per label)."""
    return dict(Counter(label for labels in items for label in set(labels)).most_common())
