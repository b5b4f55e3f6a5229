"""Diversity of a set of worlds, measured: what tools they offer and what their tasks ask.

For a set of environments (a synthesised library, the hand-written domains) it counts

- **tool signatures**: distinct (read/write, parameter names and types) across the set, and
  their **skeletons** (read/write and parameter types only, names dropped): how many kinds of
  call an agent meets, beside how many differently named ones;
- **plan shapes**: distinct gold-plan skeletons (each step's read/write and arity) over a
  sample of tasks at every difficulty, and distinct tool sequences;
- **instructions**: distinct instructions, and the distinct-n-gram ratio of their words
  (distinct 3-grams / all 3-grams, the usual "distinct-n"), over the same sample.

``python -m envfactory.synth.diversity --library DIR`` prints the figures for the library and
for the built-in database domains side by side, as JSON.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from typing import Any

from envfactory.contract.environment import Environment
from envfactory.contract.tasks import Split

SPLIT: Split = "train"


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


def main(argv: list[str] | None = None) -> None:
    from envfactory.openapi.library import register_library
    from envfactory.registry import list_envs, make

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", required=True, help="A folder of synthesised worlds.")
    parser.add_argument("--limit", type=int, default=None, help="Only its first N worlds.")
    parser.add_argument("--tasks-per-level", type=int, default=10)
    args = parser.parse_args(argv)
    ids = sorted(register_library(args.library))[: args.limit]
    hand = [e for e in list_envs() if make(e).kind == "db"]
    print(
        json.dumps(
            {
                "library": measure([make(e) for e in ids], args.tasks_per_level),
                "hand_written": measure([make(e) for e in hand], args.tasks_per_level),
                "tasks_per_level": args.tasks_per_level,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
