"""``envfactory openapi import``: compile OpenAPI documents into audited worlds."""

from __future__ import annotations

import json as jsonlib
import os
from pathlib import Path

import typer

from envfactory.cli.common import console, fail, print_json, print_yield, yield_bar
from envfactory.journal import JournalError
from envfactory.openapi.corpus import CorpusError, documents, fetch_directory
from envfactory.openapi.pipeline import Settings, run_import
from envfactory.quality.audit import SHAPES_MIN

app = typer.Typer(
    name="openapi",
    help="Worlds from real API documents (OpenAPI 2 and 3).",
    no_args_is_help=True,
)


def _items(source: str, limit: int | None) -> list[tuple[Path, str]]:
    """(path, source name) pairs for a file, a folder or ``directory``."""
    if source == "directory":
        try:
            root = fetch_directory()
        except CorpusError as exc:
            raise fail(exc) from None
    else:
        root = Path(source)
        if root.is_file():
            return [(root, root.name)]
        if not root.is_dir():
            raise fail(f"{source}: no such file or folder (or 'directory')")
    items = [(p, p.relative_to(root).as_posix()) for p in documents(root)]
    return items[:limit] if limit is not None else items


@app.command("import")
def import_cmd(
    source: str = typer.Argument(
        ..., help="A document, a folder of documents, or 'directory' (the APIs-guru corpus)."
    ),
    out: Path = typer.Option(Path("worlds"), "--out", help="Where passing worlds are saved."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Import the first N only."),
    jobs: int = typer.Option(os.cpu_count() or 1, "--jobs", min=1, help="Processes."),
    n: int = typer.Option(100, "-n", min=10, help="Audit tasks per world (baselines)."),
    diversity: int = typer.Option(
        150,
        "--diversity",
        min=SHAPES_MIN,
        max=1000,
        help=f"Tasks sampled for the diversity checks (at least {SHAPES_MIN}: a world needs "
        f"{SHAPES_MIN} plan shapes among them).",
    ),
    timeout: float = typer.Option(120.0, "--timeout", help="CPU seconds allowed per document."),
    json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object."),
    compact: Path | None = typer.Option(
        None, "--summary", help="Also write a compact report (one short row per document)."
    ),
    fresh: bool = typer.Option(
        False, "--fresh", help="Discard OUT's journal (and the worlds it saved); start over."
    ),
) -> None:
    """Compile documents into worlds, audit each, keep those that pass, report the yield. A
    stopped run goes on where it left off when started again with the same --out."""
    items = _items(source, limit)
    settings = Settings(out=out, n=n, diversity=diversity, timeout=timeout)
    with yield_bar("importing", len(items), transient=json) as advance:
        try:
            report = run_import(
                items, settings, jobs=jobs, progress=lambda r: advance(r.passed), fresh=fresh
            )
        except JournalError as exc:
            raise fail(exc) from None
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.json"
    path.write_text(jsonlib.dumps(report.model_dump(mode="json"), indent=1))
    if compact is not None:
        compact.parent.mkdir(parents=True, exist_ok=True)
        compact.write_text(jsonlib.dumps(report.compact(), separators=(",", ":")) + "\n")
    summary = {**report.summary(), "out": str(out), "report": str(path)}
    if json:
        print_json(summary)
        return
    print_yield("envfactory openapi import", "documents", report.passed_audit, report.failures)
    console.print(
        f"{report.specs} documents, {report.compiled} compiled, {report.passed_audit} kept in "
        f"{out}; median {report.median_seconds:.2f} s per document; report: {path}"
    )
