"""Diversity of a set of worlds, measured: their structure, the tools they offer, what their
tasks ask.

For a set of worlds (a library, the hand-written domains) it counts

- **structures** (from the domain data alone, :mod:`envfactory.synth.structure`): distinct
  structural digests, which ignore names, words and constants, and distinct values of each
  component (entity graphs, tool skeleton sets, lifecycle shapes, rule kinds, plan-shape sets),
  with how many worlds have each lifecycle shape and each kind of rule;
- **tool signatures**: distinct (read/write, parameter names and types) across the set, and
  their **skeletons** (read/write and parameter types only, names dropped);
- **plan shapes**: distinct gold-plan skeletons (each step's read/write and arity) over a
  sample of tasks at every difficulty, and distinct tool sequences;
- **instructions**: distinct instructions, and the distinct-n-gram ratio of their words
  (distinct 3-grams / all 3-grams, the usual "distinct-n"), over the same sample.

``python -m envfactory.synth.diversity --library DIR --json`` gives the figures for the library
and for the built-in database domains side by side (``--no-tasks``: the structure only, read
from the world files without building a world); ``--composed N`` measures the structure of the
composer's first N worlds, composed on the spot.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from envfactory.contract.environment import Environment
from envfactory.contract.errors import DomainError
from envfactory.contract.tasks import Split
from envfactory.domain.loader import builtin_domain_files, load_domain
from envfactory.registry.worldfile import world_files
from envfactory.synth.structure import COMPONENTS, Structure, count_worlds, structure

SPLIT: Split = "train"
#: The components that say what a world does rather than what it stores and offers.
BEHAVIOUR = ("lifecycles", "rules", "plans")


def _skeleton(tool: dict[str, Any], kinds: dict[str, str]) -> tuple[Any, ...]:
    props = tool.get("inputSchema", {}).get("properties", {})
    return (kinds.get(tool["name"], "?"), tuple(sorted(str(p.get("type")) for p in props.values())))


def _signature(tool: dict[str, Any], kinds: dict[str, str]) -> tuple[Any, ...]:
    props = tool.get("inputSchema", {}).get("properties", {})
    named = tuple(sorted((k, str(p.get("type"))) for k, p in props.items()))
    return (kinds.get(tool["name"], "?"), named)


def _tool_kinds(env: Environment) -> dict[str, str]:
    spec = getattr(env, "spec", None)
    return {a.name: a.kind for a in spec.actions} if spec is not None else {}


def measure(envs: Sequence[Environment], tasks_per_level: int = 10) -> dict[str, Any]:
    """The diversity figures of ``envs`` (``tasks_per_level`` train tasks per difficulty)."""
    signatures: set[tuple[Any, ...]] = set()
    skeletons: set[tuple[Any, ...]] = set()
    shapes: set[tuple[Any, ...]] = set()
    sequences: set[tuple[str, ...]] = set()
    instructions: list[str] = []
    tools = 0
    for env in envs:
        kinds = _tool_kinds(env)
        listed = env.tools("mcp")
        tools += len(listed)
        signatures.update(_signature(t, kinds) for t in listed)
        skeletons.update(_skeleton(t, kinds) for t in listed)
        for d in env.difficulties:
            for i in range(env.tasks_up_to(SPLIT, d, tasks_per_level)):
                task = env.task(SPLIT, d, i)
                plan = task.hidden.gold_plan
                sequences.add(tuple(s.tool for s in plan))
                shapes.add(tuple((kinds.get(s.tool, "?"), len(s.arguments)) for s in plan))
                instructions.append(task.public.instruction)
    words = [re.findall(r"\w+", text.lower()) for text in instructions]
    grams = [tuple(w[i : i + 3]) for w in words for i in range(len(w) - 2)]
    return {
        "worlds": len(envs),
        "tools": tools,
        "tool_signatures": len(signatures),
        "tool_skeletons": len(skeletons),
        "tasks_sampled": len(instructions),
        "plan_shapes": len(shapes),
        "tool_sequences": len(sequences),
        "instructions_distinct": len(set(instructions)),
        "distinct_3gram_ratio": round(len(set(grams)) / len(grams), 4) if grams else 0.0,
    }


def measure_structure(
    structures: Sequence[Structure], tags: Sequence[Sequence[str]] = ()
) -> dict[str, Any]:
    """The structural figures of a set of worlds (``tags``: each world's grammar tags)."""
    digests = Counter(s.digest for s in structures)
    figures: dict[str, Any] = {
        "worlds": len(structures),
        "distinct_structures": len(digests),
        "distinct_ratio": round(len(digests) / len(structures), 4) if structures else 0.0,
        "largest_same_structure": max(digests.values(), default=0),
        # worlds still told apart with their tables and tools ignored: padding a schema with
        # fields or tools cannot raise this one
        "distinct_behaviours": len({tuple(s.components[c] for c in BEHAVIOUR) for s in structures}),
        "distinct": {c: len({s.components[c] for s in structures}) for c in COMPONENTS},
        "lifecycle_shapes": count_worlds(s.lifecycles for s in structures),
        "constraint_kinds": count_worlds(s.rule_kinds for s in structures),
        "constraint_shapes": count_worlds(s.constraints for s in structures),
    }
    if any(tags):
        figures["tags"] = dict(Counter(t for world in tags for t in world).most_common())
    return figures


def _read_world(path: Path) -> tuple[Structure, list[str]]:
    """A world file's structure and grammar tags (its ``patterns``), from its JSON alone."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DomainError(f"{path}: {exc}") from None
    tags = data.get("patterns") or []
    if not isinstance(data.get("domain"), dict) or not isinstance(tags, list):
        raise DomainError(f"{path}: a library world holds a `domain` mapping")
    return structure(data["domain"], str(path)), [str(t) for t in tags]


def library_structure(folder: str | Path, limit: int | None = None) -> dict[str, Any]:
    """The structural figures of a library folder's worlds (its first ``limit``), with a
    progress bar on a terminal; worlds the engine refuses are counted, with their reasons."""
    if not Path(folder).is_dir():
        raise DomainError(f"{folder}: no such library folder")
    files = world_files(folder)[:limit]
    console = Console(stderr=True)
    columns = (TextColumn("structures"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    found: list[tuple[Structure, list[str]]] = []
    refused: list[str] = []
    with Progress(
        *columns, console=console, transient=True, disable=not console.is_terminal
    ) as bar:
        for path in bar.track(files):
            try:
                found.append(_read_world(path))
            except DomainError as exc:
                refused.append(str(exc))
    figures = measure_structure([s for s, _ in found], [t for _, t in found])
    if refused:
        figures["refused"] = {"worlds": len(refused), "first": refused[:5]}
    return figures


def composed_structure(n: int, seed: int = 0) -> dict[str, Any]:
    """The structural figures of the composer's worlds 0..n-1 of library ``seed``, composed
    here (not audited), tagged with their ``patterns``."""
    from envfactory.synth.compose import synthesize

    made = [synthesize(i, seed) for i in range(n)]
    return measure_structure([structure(m.domain) for m in made], [m.patterns for m in made])


def hand_written_structure() -> dict[str, Any]:
    """The structural figures of the built-in domains (``src/envfactory/domains/*.yaml``)."""
    return measure_structure([structure(load_domain(p)) for p in builtin_domain_files()])


def _print_table(report: dict[str, Any]) -> None:
    table = Table("figure", "library", "hand-written")
    lib, hand = report["library"]["structure"], report["hand_written"]["structure"]
    for key in ("worlds", "distinct_structures", "distinct_ratio", "distinct_behaviours"):
        table.add_row(key, str(lib[key]), str(hand[key]))
    for c in COMPONENTS:
        table.add_row(f"distinct {c}", str(lib["distinct"][c]), str(hand["distinct"][c]))
    tasks, hand_tasks = report["library"].get("tasks", {}), report["hand_written"].get("tasks")
    for key, value in tasks.items():
        table.add_row(f"tasks: {key}", str(value), str(hand_tasks[key]))
    Console().print(table)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--library", help="A folder of library worlds.")
    source.add_argument(
        "--composed", type=int, metavar="N", help="The composer's first N worlds (no audit)."
    )
    parser.add_argument("--limit", type=int, default=None, help="Only its first N worlds.")
    parser.add_argument("--tasks-per-level", type=int, default=10)
    parser.add_argument(
        "--no-tasks", action="store_true", help="The structure only: build no world, draw no task."
    )
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = parser.parse_args(argv)
    try:
        report = _report(args)
    except DomainError as exc:
        sys.exit(f"error: {exc}")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_table(report)


def _report(args: argparse.Namespace) -> dict[str, Any]:
    if args.composed is not None:
        figures = composed_structure(args.composed)
    else:
        figures = library_structure(args.library, args.limit)
    report: dict[str, Any] = {
        "library": {"structure": figures},
        "hand_written": {"structure": hand_written_structure()},
    }
    if args.library is not None and not args.no_tasks:
        from envfactory.openapi.library import register_library
        from envfactory.registry import list_envs, make

        ids = sorted(register_library(args.library))[: args.limit]
        hand = [e for e in list_envs() if make(e).kind == "db"]
        report["library"]["tasks"] = measure([make(e) for e in ids], args.tasks_per_level)
        report["hand_written"]["tasks"] = measure([make(e) for e in hand], args.tasks_per_level)
        report["tasks_per_level"] = args.tasks_per_level
    return report


if __name__ == "__main__":
    main()
