"""``envfactory serve`` and ``envfactory bench-serve``."""

from __future__ import annotations

import typer

from envfactory.cli.common import err_console, fail, require_safe_bind, world_ids

SERVE_EXTRA = "serving needs the 'serve' extra: pip install 'envfactory[serve]'"


def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind."),
    port: int = typer.Option(8000, "--port", help="Port to listen on."),
    envs: str = typer.Option(
        "", "--envs", help="Comma-separated ids, domain files or folders of worlds (default all)."
    ),
    token: str = typer.Option(
        "",
        "--token",
        envvar="ENVFACTORY_TOKEN",
        help="Require this bearer token on every route "
        "but /health (needed to bind beyond loopback).",
    ),
    trainer_token: str = typer.Option(
        "",
        "--trainer-token",
        envvar="ENVFACTORY_TRAINER_TOKEN",
        help="Serve the trainer's routes (full verdicts with rubric) behind this token, "
        "sent as X-Trainer-Token; it must differ from --token.",
    ),
    max_sessions: int = typer.Option(4096, "--max-sessions", help="Live sessions at most."),
    idle_timeout: float = typer.Option(
        900.0, "--idle-timeout", help="Seconds without a call before a session expires."
    ),
    max_steps: int = typer.Option(60, "--max-steps", help="Turn limit of each episode."),
    log_level: str = typer.Option("info", "--log-level"),
    curriculum: str | None = typer.Option(
        None, "--curriculum", help="Serve a curriculum from this SQLite file (next-task route)."
    ),
) -> None:
    """Serve environments over HTTP (Open Reward Standard), WebSocket (OpenEnv) and MCP."""
    try:
        from envfactory.serving import ServeConfig
        from envfactory.serving import serve as run_server
    except ImportError:
        raise fail(SERVE_EXTRA) from None
    require_safe_bind(host, token, SERVE_EXTRA)
    ids = tuple(world_ids(e.strip() for e in envs.split(",") if e.strip()))
    try:
        config = ServeConfig(
            envs=ids,
            token=token or None,
            trainer_token=trainer_token or None,
            max_sessions=max_sessions,
            idle_timeout=idle_timeout,
            max_steps=max_steps,
            curriculum=curriculum,
        )
    except ValueError as exc:
        raise fail(str(exc)) from None
    err_console.print(f"envfactory serving on http://{host}:{port} (OpenAPI: /openapi.json)")
    run_server(config, host=host, port=port, log_level=log_level)


def bench_serve(
    env_id: str = typer.Option("retail", "--env", help="Environment our server hosts."),
    sessions: int = typer.Option(2000, "--sessions", help="Live sessions to open and hold."),
    concurrent: int = typer.Option(1000, "--concurrent", help="Sessions issuing tool calls."),
    seconds: float = typer.Option(8.0, "--seconds", help="Duration of each load phase."),
    think_ms: float = typer.Option(
        1000.0, "--think-ms", help="Mean pause of a session between calls (latency phase)."
    ),
    peer: bool = typer.Option(True, "--peer/--no-peer", help="Also load OpenEnv's server."),
    client_procs: int | None = typer.Option(
        None,
        "--client-procs",
        min=1,
        help="Processes the load client is spread over (default: the CPU count; 1: this one).",
    ),
    json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Load a server on loopback: live sessions, latency under load, throughput vs OpenEnv
    (= `envfactory bench serve`)."""
    from envfactory.cli.bench import show

    settings = dict(env_id=env_id, sessions=sessions, concurrent=concurrent, seconds=seconds,
                    think_ms=think_ms, peer=peer, client_procs=client_procs)  # fmt: skip
    show("serve", settings, json)
