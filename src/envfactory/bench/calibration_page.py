"""The generated part of a calibration page.

From the cells kept in a calibration file: how many of the cells there are to measure (every
single-agent world at every difficulty) are measured within reach, success by difficulty (web
worlds apart), what remains to measure, the heat map and the table. It is written between two
markers of a Markdown page, so the prose around it stays hand-written and the numbers always
come from the file: ``python -m envfactory.bench.calibration_page CELLS --page PAGE``
(:func:`render_page`).
"""

from __future__ import annotations

import argparse
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from envfactory.bench.calibration import (
    CalibrationCell,
    load_cells,
    markdown_table,
    plot_calibration,
    single_agent_worlds,
)
from envfactory.registry import make

BEGIN = "<!-- calibration:begin (generated from the calibration file; edit around it) -->"
END = "<!-- calibration:end -->"


class PageError(ValueError):
    """The page has no place for the generated section."""


def expected_cells() -> dict[str, list[int]]:
    """Every single-agent world and its difficulties: the cells a full calibration measures."""
    return {env: list(make(env).difficulties) for env in single_agent_worlds()}


def remaining(
    cells: Sequence[CalibrationCell], expected: Mapping[str, Sequence[int]]
) -> dict[str, list[int]]:
    """The levels of each world not yet measured whole (no row, or a row whose budget was too
    short for some gold plan, or with episodes not scored)."""
    done = {(c.env, c.difficulty) for c in cells if c.whole}
    left = {env: [d for d in levels if (env, d) not in done] for env, levels in expected.items()}
    return {env: levels for env, levels in left.items() if levels}


def level_table(cells: Sequence[CalibrationCell], calls: str) -> str:
    """Success by difficulty over ``cells``: episodes, the share of ``calls`` the world ran,
    and the cells where the model succeeded at least once."""
    rows = [
        f"| difficulty | cells | success (episodes) | {calls} the world ran | where it succeeded |",
        "|---|---|---|---|---|",
    ]
    by_level: dict[int, list[CalibrationCell]] = defaultdict(list)
    for c in cells:
        by_level[c.difficulty].append(c)
    for level, group in sorted(by_level.items()):
        episodes = sum(c.tasks for c in group)
        wins = sum(round(c.success * c.tasks) for c in group)
        attempted = sum(c.calls_attempted for c in group)
        ran = sum(round((c.tool_call_valid_rate or 0) * c.calls_attempted) for c in group)
        ran_text = f"{ran}/{attempted} ({ran / attempted:.0%})" if attempted else "-"
        rows.append(
            f"| {level} | {len(group)} | {wins}/{episodes} ({wins / max(episodes, 1):.3f}) "
            f"| {ran_text} | {_successes(group)} |"
        )
    return "\n".join(rows)


def _successes(cells: Sequence[CalibrationCell]) -> str:
    won = sorted((c for c in cells if c.success > 0), key=lambda c: (-c.success, c.env))
    return ", ".join(f"{c.env} {round(c.success * c.tasks)}/{c.tasks}" for c in won) or "none"


def section(
    cells: Sequence[CalibrationCell],
    expected: Mapping[str, Sequence[int]],
    image: str,
) -> str:
    """The generated Markdown: coverage, success by difficulty, what remains, the heat map
    (at ``image``, relative to the page) and the table of every cell."""
    within = [c for c in cells if c.whole and c.env in expected]
    web = [c for c in within if c.env.startswith("web-")]
    total = sum(len(levels) for levels in expected.values())
    left = remaining(cells, expected)
    todo = "; ".join(f"{env} ({', '.join(map(str, levels))})" for env, levels in left.items())
    scope = (
        "(every single-agent world at every difficulty) are measured within reach, "
        "every episode scored"
    )
    coverage = (
        f"**{len(within)} of the {total} cells** {scope}; {total - len(within)} remain."
        if left
        else f"**All {total} cells** {scope}."
    )
    parts = [
        coverage,
        "Cells within reach, by difficulty, every world:",
        level_table(within, "calls"),
        "The web worlds alone (one model call per browser action):",
        level_table(web, "browser actions") if web else "(none measured yet)",
        *([f"Still to measure within reach: {todo}."] if left else []),
        f"![calibration heat map]({image})",
        markdown_table(cells),
    ]
    return "\n\n".join(parts)


def render_page(data: Path, page: Path, image: Path | None = None) -> None:
    """Rewrite ``page``'s generated section from the cells in ``data``, with the heat map at
    ``image`` (default: the page's ``images/<data's name>.png``)."""
    doc = page.read_text()
    start, end = doc.find(BEGIN), doc.find(END)
    if start < 0 or end < start:
        raise PageError(f"{page} has no {BEGIN!r} ... {END!r} section to write")
    cells = load_cells(data)
    image = image or page.parent / "images" / f"{data.stem}.png"
    image.parent.mkdir(parents=True, exist_ok=True)
    plot_calibration(cells, str(image))
    text = section(cells, expected_cells(), os.path.relpath(image, page.parent))
    page.write_text(doc[: start + len(BEGIN)] + "\n\n" + text + "\n\n" + doc[end:])


def main(argv: list[str] | None = None) -> None:
    """``python -m envfactory.bench.calibration_page CELLS.jsonl [--plot PNG] [--page PAGE]``:
    the table of a calibration file (as ``bench calibration --out`` appends it) in Markdown,
    and its heat map; with ``--page``, the generated section of that Markdown page rewritten,
    its heat map in the page's ``images/``."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("cells", type=Path)
    parser.add_argument("--plot")
    parser.add_argument("--page", type=Path)
    args = parser.parse_args(argv)
    if args.page is not None:
        render_page(args.cells, args.page, Path(args.plot) if args.plot else None)
        return
    cells = load_cells(args.cells)
    if args.plot:
        plot_calibration(cells, args.plot)
    print(markdown_table(cells))


if __name__ == "__main__":
    main()
