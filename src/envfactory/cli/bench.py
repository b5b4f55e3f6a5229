"""``envfactory bench``: the benchmarks, one named section each
(:mod:`envfactory.bench.sections`).

``envfactory bench SECTION [options]`` runs one and prints its JSON record; ``--all`` runs
every section that can run here as one JSON document; ``--list`` names them. The older flags
stay as aliases with the same records: ``bench --json`` is ``bench world``, ``bench --web`` is
``bench web`` and so on (without ``--json`` they print a table).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Literal

import typer
import typer.main
from rich.table import Table
from typer.core import TyperCommand, TyperGroup, TyperOption

from envfactory.bench.sections import SECTIONS, Option, Section
from envfactory.cli.common import console, err_console, fail, print_json
from envfactory.contract.errors import EnvFactoryError


def run_section(name: str, arguments: dict[str, Any]) -> Any:
    """Run the section ``name`` with a status line on stderr; its record. Exits 2 with the
    reason when it cannot run here or refuses its arguments."""
    try:
        with err_console.status(f"benchmarking: {name}"):
            return SECTIONS[name](**arguments)
    except EnvFactoryError as exc:  # Unavailable, an unknown world, a model not found
        raise fail(exc) from None


def show(name: str, arguments: dict[str, Any], json: bool) -> None:
    """Run a section and print its record: JSON, or a table for people."""
    record = run_section(name, arguments)
    if json:
        print_json(record)
    else:
        console.print(_table(SECTIONS[name], record))


def _table(section: Section, record: Any) -> Table:
    table = Table(title=f"bench {section.name}")
    if isinstance(record, dict):
        table.add_column("measure")
        table.add_column("value", justify="right")
        for key, value in record.items():
            table.add_row(key, str(value))
        return table
    columns = section.columns or (tuple(record[0]) if record else ())
    for column in columns:
        table.add_column(column)
    for row in record:
        table.add_row(*(str(row.get(c, "")) for c in columns))
    return table


class _SectionCommand(TyperCommand):
    """A section's command; its help shows the run function's defaults (importing it)."""

    section: Section

    def format_help(self, ctx: Any, formatter: Any) -> None:
        defaults = self.section.defaults()
        for param in self.params:
            value = defaults.get(param.name or "")
            if isinstance(param, TyperOption) and value not in (None, ()):
                shown = ",".join(map(str, value)) if isinstance(value, tuple | list) else value
                param.default, param.show_default = shown, True
        super().format_help(ctx, formatter)


_TYPES: dict[str, Any] = {"int": int, "float": float, "str": str, "bool": bool}


def _parameter(option: Option) -> inspect.Parameter:
    flag = option.cli_flag
    if option.kind == "bool":
        flag = f"{flag}/--no-{flag.removeprefix('--')}"
    kind = Literal[option.choices] if option.choices else _TYPES.get(option.kind, str)
    default = typer.Option(None, flag, help=option.help, show_default=False)
    return inspect.Parameter(
        option.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind | None
    )


def section_command(section: Section) -> TyperCommand:
    """The command of ``section``: its options (the ``ints`` and ``strs`` ones
    comma-separated), and ``--json`` for symmetry with the aliases (it always prints JSON)."""

    def run(**given: Any) -> None:
        given.pop("json")
        arguments = {k: v for k, v in given.items() if v is not None}
        for option in section.options:
            if option.kind in ("ints", "strs") and option.name in arguments:
                arguments[option.name] = option.parse(arguments[option.name])
        show(section.name, arguments, json=True)

    flag = typer.Option(False, "--json", hidden=True)
    params = [_parameter(o) for o in section.options]
    params.append(inspect.Parameter("json", inspect.Parameter.KEYWORD_ONLY, default=flag))
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    one = typer.Typer(add_completion=False)
    one.command(
        section.name,
        cls=_SectionCommand,
        help=f"{section.description} Prints its JSON record.",
        short_help=section.description,
    )(run)
    command = typer.main.get_command(one)
    assert isinstance(command, _SectionCommand)
    command.section = section
    return command


class SectionGroup(TyperGroup):
    """``bench``'s subcommands are the sections, made from their table when asked for."""

    def list_commands(self, ctx: object) -> list[str]:
        return list(SECTIONS)

    def get_command(self, ctx: object, cmd_name: str) -> TyperCommand | None:
        section = SECTIONS.get(cmd_name)
        return None if section is None else section_command(section)


app = typer.Typer(cls=SectionGroup, invoke_without_command=True)
ALIAS = "Aliases: the older flags (--web is bench web)"


@app.callback()
def bench(
    ctx: typer.Context,
    env_id: str = typer.Option("retail", "--env", help="The world to measure."),
    json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    every: bool = typer.Option(
        False,
        "--all",
        help="Every section that runs here as one JSON document, the load average beside each; "
        "about 10-15 minutes on a quiet 2-core machine. Not calibration.",
    ),
    only: str = typer.Option("", "--only", help="--all: these sections (comma-separated)."),
    quick: bool = typer.Option(
        False, "--quick", help="--all: tiny sizes, seconds per section (the shape, not figures)."
    ),
    listed: bool = typer.Option(False, "--list", help="List the sections."),
    sandbox: bool = typer.Option(
        False, "--sandbox", help="= bench sandbox.", rich_help_panel=ALIAS
    ),
    rollout: bool = typer.Option(
        False, "--rollout", help="= bench rollout.", rich_help_panel=ALIAS
    ),
    tau2: bool = typer.Option(False, "--tau2", help="= bench tau2.", rich_help_panel=ALIAS),
    fork: bool = typer.Option(False, "--fork", help="= bench fork.", rich_help_panel=ALIAS),
    ray: bool = typer.Option(False, "--ray", help="= bench ray.", rich_help_panel=ALIAS),
    research: bool = typer.Option(
        False, "--research", help="= bench research.", rich_help_panel=ALIAS
    ),
    repo: bool = typer.Option(
        False, "--repo", help="= bench repo (--env repo-*).", rich_help_panel=ALIAS
    ),
    sample: int = typer.Option(
        0, "--sample", min=0, help="--repo: candidates to verify.", rich_help_panel=ALIAS
    ),
    web: bool = typer.Option(
        False, "--web", help="= bench web (--env web-*).", rich_help_panel=ALIAS
    ),
    decode: bool = typer.Option(False, "--decode", help="= bench decode.", rich_help_panel=ALIAS),
    calibration: bool = typer.Option(
        False, "--calibration", help="= bench calibration.", rich_help_panel=ALIAS
    ),
    tasks: int = typer.Option(
        20, "--tasks", min=1, help="--calibration: tasks per cell.", rich_help_panel=ALIAS
    ),
    envs: str = typer.Option(
        "", "--envs", help="--calibration: worlds (default: all).", rich_help_panel=ALIAS
    ),
    difficulties: str = typer.Option(
        "", "--difficulties", help="--calibration: levels.", rich_help_panel=ALIAS
    ),
    model: str = typer.Option(
        "default",
        "--model",
        help="--calibration: a folder, a .gguf or scripted:NAME (noisy-oracle, oracle, ...).",
        rich_help_panel=ALIAS,
    ),
    max_turns: int = typer.Option(
        4, "--max-turns", min=1, help="--calibration: calls, at least.", rich_help_panel=ALIAS
    ),
    fixed_turns: bool = typer.Option(
        False,
        "--fixed-turns",
        help="--calibration: exactly --max-turns calls, even too few.",
        rich_help_panel=ALIAS,
    ),
    max_tokens: int = typer.Option(
        128, "--max-tokens", min=1, help="--calibration: per call.", rich_help_panel=ALIAS
    ),
    plot: str | None = typer.Option(
        None, "--plot", help="--calibration: a heat map PNG.", rich_help_panel=ALIAS
    ),
    out: Path | None = typer.Option(
        None, "--out", help="--calibration: JSON-lines cells.", rich_help_panel=ALIAS
    ),
    jobs: int = typer.Option(
        1, "--jobs", min=1, help="--calibration: cells at once.", rich_help_panel=ALIAS
    ),
    tool_format: str = typer.Option(
        "grammar", "--tool-format", help="--calibration: text or grammar.", rich_help_panel=ALIAS
    ),
) -> None:
    """Benchmarks, one named section each: `envfactory bench SECTION OPTIONS` prints its
    JSON; `--all` every section that runs here; `--list` names them. Without a section:
    the episode API's costs (`bench world`)."""
    if ctx.invoked_subcommand is not None:
        return
    if listed:
        _list(json)
        return
    if every:
        _all(only, quick)
        return
    flags = {"sandbox": sandbox, "rollout": rollout, "tau2": tau2, "ray": ray,
             "research": research, "repo": repo, "web": web, "decode": decode,
             "calibration": calibration, "fork": fork}  # fmt: skip
    chosen = [name for name, on in flags.items() if on]
    if len(chosen) > 1:
        raise fail(f"one section at a time, not {', '.join('--' + c for c in chosen)}")
    name = chosen[0] if chosen else "world"
    per_alias: dict[str, dict[str, Any]] = {
        "world": {"env_id": env_id},
        "fork": {"env_id": env_id},
        "rollout": {"env_id": env_id},
        "ray": {"env_id": env_id},
        "repo": {
            "env_id": env_id if env_id.startswith("repo-") else "repo-python",
            "sample": sample,
            "level_sample": sample,
        },
        "web": {"env_id": env_id if env_id.startswith("web-") else "web-retail"},
        "calibration": {
            "tasks": tasks,
            "envs": [e.strip() for e in envs.split(",") if e.strip()],
            "difficulties": [int(d) for d in difficulties.split(",") if d.strip()],
            "model": model,
            "max_turns": max_turns,
            "fixed_turns": fixed_turns,
            "max_tokens": max_tokens,
            "plot": plot,
            "out": str(out) if out else None,
            "jobs": jobs,
            "tool_format": tool_format,
        },
    }
    arguments = per_alias.get(name, {})
    if name == "calibration" and tool_format not in ("text", "grammar"):
        raise fail("--tool-format is text or grammar")
    show(name, arguments, json)


def _list(json: bool) -> None:
    if json:
        print_json(
            [{"section": s.name, "description": s.description, "in_all": s.in_all}
             for s in SECTIONS.values()]
        )  # fmt: skip
        return
    table = Table(title="envfactory bench SECTION")
    for column in ("section", "description", "in --all"):
        table.add_column(column)
    for s in SECTIONS.values():
        table.add_row(s.name, s.description, "yes" if s.in_all else "no")
    console.print(table)


def _all(only: str, quick: bool) -> None:
    """``--all``: the document goes to stdout (always JSON); the exit status is 1 when a
    section failed (skipped ones are not failures)."""
    from envfactory.bench.all import run_all

    sections = [s.strip() for s in only.split(",") if s.strip()] or None
    with err_console.status("benchmarking") as status:
        try:
            doc = run_all(sections, quick, lambda name: status.update(f"benchmarking: {name}"))
        except ValueError as exc:  # an unknown section
            raise fail(str(exc)) from None
    print_json(doc)
    if any(s["status"] == "failed" for s in doc["sections"].values()):
        raise typer.Exit(1)
