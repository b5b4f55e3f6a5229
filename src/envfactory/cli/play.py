"""``envfactory play``: a person plays an episode at the terminal."""

from __future__ import annotations

import json as jsonlib
import shlex

import typer
from rich.panel import Panel
from rich.table import Table

from envfactory.cli.common import SplitName, console, load_env
from envfactory.contract.actions import Message, ToolCall

HELP = """Commands:
  TOOL {"arg": "value"}   call a tool with JSON arguments (or TOOL arg=value ...)
  say TEXT                 tell the user something (the episode goes on)
  done TEXT                give your final reply and end the episode
  tools                    list the tools and their parameters
  help                     this help
  quit                     give up (the episode is judged as it stands)"""


def _tools_table(tools: list[dict[str, object]]) -> Table:
    table = Table(title="tools")
    table.add_column("tool")
    table.add_column("parameters")
    table.add_column("description")
    for t in tools:
        schema = t["inputSchema"]
        assert isinstance(schema, dict)
        required = set(schema.get("required", []))
        params = ", ".join(p + ("" if p in required else "?") for p in schema["properties"])
        table.add_row(str(t["name"]), params, str(t["description"]))
    return table


def _parse(line: str) -> ToolCall | Message | str:
    head, _, rest = line.strip().partition(" ")
    if head in ("say", "done"):
        return Message(content=rest, final=head == "done")
    if head in ("help", "tools", "quit", ""):
        return head
    rest = rest.strip()
    if rest.startswith("{") or not rest:
        return ToolCall(tool=head, arguments=rest or {})
    args = {}
    for part in shlex.split(rest):
        key, _, value = part.partition("=")
        try:
            args[key] = jsonlib.loads(value)
        except ValueError:
            args[key] = value
    return ToolCall(tool=head, arguments=args)


def play(
    env_id: str = typer.Argument(..., metavar="ENV", help="Environment id."),
    split: SplitName = typer.Option(SplitName.train, help="Which split."),
    difficulty: int = typer.Option(1, help="Difficulty level."),
    index: int = typer.Option(0, help="Task index."),
) -> None:
    """Play one episode by hand: you are the agent."""
    env = load_env(env_id)
    task = env.task(split.as_split, difficulty, index)
    episode = env.episode()
    obs = episode.reset(task)
    console.print(Panel("\n".join(task.public.rules), title=task.public.persona, expand=False))
    console.print(Panel(obs.content, title=f"user ({task.task_id})", expand=False))
    console.print(HELP)
    while not obs.done:
        try:
            line = console.input("[bold]> [/bold]")
        except EOFError:
            break
        action = _parse(line)
        if action == "quit":
            break
        if action == "help" or action == "":
            console.print(HELP)
            continue
        if action == "tools":
            console.print(_tools_table(env.tools("mcp")))
            continue
        obs = episode.step(action)
        style = "red" if obs.error else "green"
        console.print(Panel(obs.content, title=obs.kind, border_style=style, expand=False))
    verdict = episode.evaluate()
    table = Table(title=f"reward {verdict.reward} ({verdict.status})")
    for col in ("item", "kind", "weight", "score", "why"):
        table.add_column(col)
    for item in verdict.items:
        table.add_row(item.name, item.kind, str(item.weight), str(item.score), item.reason)
    console.print(table)
