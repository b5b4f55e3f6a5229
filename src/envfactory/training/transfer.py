"""The transfer experiment's report (issue 45): the main run (trained on synthesised worlds,
judged on hand-written ones it never saw) and its ablations at the same step budget (one
synthesised world; the judged worlds' own train tasks), as one JSON of the contract and one
plot of success per world.

    python -m envfactory.training.transfer runs/transfer/transfer-grpo-cpu.json \\
        --ablation one_world=runs/ablation-one/ablation-one-world.json \\
        --ablation in_domain=runs/ablation-indomain/ablation-in-domain.json \\
        --out docs/results/transfer-grpo-cpu.json

Each input is a result ``envfactory train`` wrote (the main run's may be an earlier report).
The report refuses runs that are not comparable: judged on worlds the main run was not judged
on, other tasks or levels, or trained for another number of steps. An ablation judged on some
of the main run's worlds carries the main run's figures pooled over those worlds beside it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envfactory.contract.errors import EnvFactoryError
from envfactory.training.grpo_cpu import JUDGING
from envfactory.training.judge import Held, repooled

KEPT = ("train_worlds", "eval_worlds", "model", "minutes", "before", "after", "per_world")
MORE = (
    "model_path", "separated", "in_domain", "train_minutes", "curve", "episodes", "frontier",
    "settings",
)  # fmt: skip
SAME = (*JUDGING, "steps", "prompts_per_step", "group_size")  # what runs compared share


class NotComparable(EnvFactoryError):
    """An ablation was judged or trained otherwise than the main run."""


def comparable(main: Mapping[str, Any], name: str, other: Mapping[str, Any]) -> None:
    """Raise :class:`NotComparable` naming what differs between ``other`` and ``main``; an
    ablation may be judged on some of the main run's worlds (it is compared on those)."""
    differs = [k for k in SAME if other["settings"][k] != main["settings"][k]]
    differs += ["the judged worlds"] * (not set(other["eval_worlds"]) <= set(main["eval_worlds"]))
    differs += ["the model"] * (other["model"] != main["model"])
    if differs:
        raise NotComparable(
            f"ablation {name}: not comparable with the main run ({', '.join(differs)})"
        )


def report(main: Mapping[str, Any], ablations: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The contract's keys from ``main`` (with the rest of its record), and under ``ablation``
    each comparable ablation's runs, by name."""
    for name, other in ablations.items():
        comparable(main, name, other)
    kept = {k: main[k] for k in (*KEPT, *MORE) if k in main}
    return kept | {
        "ablation": {
            name: {k: other[k] for k in (*KEPT, *MORE) if k in other and k != "settings"}
            | _main_on(main, other["eval_worlds"])
            for name, other in ablations.items()
        }
    }


def _main_on(main: Mapping[str, Any], worlds: list[str]) -> dict[str, Any]:
    """For an ablation judged on fewer worlds than the main run: the main run's before and
    after pooled over those worlds (``main_on_its_worlds``), to compare like with like."""
    if set(worlds) == set(main["eval_worlds"]):
        return {}
    return {"main_on_its_worlds": {k: _pooled(main, k, worlds) for k in ("before", "after")}}


def _pooled(run: Mapping[str, Any], key: str, worlds: list[str]) -> dict[str, Any]:
    held = [Held.model_validate(run["per_world"][w][key]) for w in worlds]
    return repooled(held).model_dump(mode="json")


def plot(result: Mapping[str, Any], path: str) -> str:
    """Test success per judged world and pooled over the worlds every run was judged on:
    before, and after each run, with the pooled 95% intervals."""
    from matplotlib.figure import Figure

    runs = {"main (synthesised worlds)": result} | dict(result["ablation"])
    worlds = list(result["per_world"])
    common = [w for w in worlds if all(w in r["per_world"] for r in runs.values())]
    rows = [f"pooled, {len(common)} worlds", *worlds]
    fig = Figure(figsize=(9, 0.42 * len(rows) + 1.6), dpi=110)
    ax = fig.subplots()
    bars = [("before", result, "before")] + [(f"after: {n}", r, "after") for n, r in runs.items()]
    height = 0.8 / len(bars)
    for i, (label, run, key) in enumerate(bars):
        ys = [row + (i - (len(bars) - 1) / 2) * height for row in range(len(rows))]
        pooled = _pooled(run, key, common)
        held = [pooled] + [run["per_world"].get(w, {}).get(key) for w in worlds]
        shown = [(y, h["success"]) for y, h in zip(ys, held, strict=True) if h is not None]
        ax.barh([y for y, _ in shown], [s for _, s in shown], height, label=label)
        low, high = pooled["ci95"]
        ax.errorbar(
            [pooled["success"]],
            ys[:1],
            xerr=[[pooled["success"] - low], [high - pooled["success"]]],
            fmt="none",
            ecolor="black",
            capsize=3,
        )
    tasks = [sum(result["per_world"][w]["after"]["tasks"] for w in common)] + [
        result["per_world"][w]["after"]["tasks"] for w in worlds
    ]
    ax.set_yticks(range(len(rows)), [f"{w} ({n})" for w, n in zip(rows, tasks, strict=True)])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("greedy test success (tasks; pooled with its 95% interval)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8)
    fig.suptitle(f"Transfer: {result['model']}, {result['settings']['steps']} GRPO steps each")
    fig.tight_layout()
    fig.savefig(path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("main", type=Path, help="the main run's result (train's OUT/NAME.json)")
    parser.add_argument(
        "--ablation", action="append", default=[], metavar="NAME=RESULT", help="an ablation run"
    )
    parser.add_argument("--out", type=Path, required=True, help="the report (a .png beside it)")
    args = parser.parse_args()
    named = dict(a.split("=", 1) for a in args.ablation)
    ablations = {n: json.loads(Path(p).read_text()) for n, p in named.items()}
    try:
        result = report(json.loads(args.main.read_text()), ablations)
    except NotComparable as exc:
        parser.exit(2, f"{exc}\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        json.dumps(
            {"report": str(args.out), "plot": plot(result, str(args.out.with_suffix(".png")))}
        )
    )


if __name__ == "__main__":
    main()
