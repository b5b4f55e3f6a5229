"""``envfactory dashboard``: a web page over trajectory stores and training runs, live while
runs write them."""

from __future__ import annotations

from pathlib import Path

import typer

from envfactory.cli.common import err_console, fail, require_safe_bind

SERVE_EXTRA = "the dashboard needs the 'serve' extra: pip install 'envfactory[serve]'"


def dashboard(
    stores: list[Path] = typer.Argument(
        ...,
        help="Trajectory store folders (rollout --out), one run each, and training runs "
        "(train's --save folder, or its result OUT/NAME.json).",
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind."),
    port: int = typer.Option(8050, "--port", help="Port to listen on."),
    token: str = typer.Option(
        "",
        "--token",
        envvar="ENVFACTORY_TOKEN",
        help="Require this token (needed to bind beyond loopback); open the page with "
        "?token=TOKEN once.",
    ),
    curriculum: list[Path] | None = typer.Option(
        None,
        "--curriculum",
        help="A curriculum's SQLite file whose frontiers to show (repeatable; default: those "
        "found beside the curriculum runs).",
    ),
    refresh: float = typer.Option(
        2.0, "--refresh", min=0.2, help="Seconds between the page's updates."
    ),
    log_level: str = typer.Option("warning", "--log-level"),
) -> None:
    """Serve a dashboard of runs: curves, world × difficulty tables, statuses, frontiers,
    episodes; and of training runs: reward by step, held-out success before and after."""
    if missing := [str(s) for s in stores if not s.exists()]:
        raise fail(f"no trajectory store or training run at {', '.join(missing)}")
    if bad := [str(c) for c in curriculum or [] if not c.is_file()]:
        raise fail(f"--curriculum: no file {', '.join(bad)}")
    require_safe_bind(host, token, SERVE_EXTRA)
    try:
        from envfactory.dashboard.app import Dashboard
        from envfactory.dashboard.server import serve
    except ImportError:
        raise fail(SERVE_EXTRA) from None
    from envfactory.dashboard.training import NotARun

    try:
        board = Dashboard.open(stores, curriculum or [], refresh_s=refresh)
    except NotARun as exc:
        raise fail(exc) from None
    names = ", ".join([r.name for r in board.runs] + [t.name for t in board.trainings])
    err_console.print(f"envfactory dashboard of {names} on http://{host}:{port}")
    serve(board, host=host, port=port, token=token or None, log_level=log_level)
