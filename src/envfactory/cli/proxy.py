"""``envfactory proxy``: record the exact tokens of episodes run by any agent harness."""

from __future__ import annotations

from pathlib import Path

import typer

from envfactory.cli.common import err_console, fail, require_safe_bind

EXTRA = "the proxy needs the 'serve' extra: pip install 'envfactory[serve]'"


def proxy(
    upstream: str = typer.Option(
        ..., "--upstream", help="The inference server's OpenAI-compatible base URL (…/v1)."
    ),
    out: Path = typer.Option(..., "--out", help="Folder of the trajectory store."),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind."),
    port: int = typer.Option(8100, "--port", help="Port to listen on."),
    api_key: str = typer.Option(
        "", "--api-key", envvar="UPSTREAM_API_KEY", help="The upstream server's API key."
    ),
    session_header: str = typer.Option(
        "X-Session-ID", "--session-header", help="The header that names an episode."
    ),
    token: str = typer.Option(
        "",
        "--token",
        envvar="ENVFACTORY_TOKEN",
        help="Require this token in X-Envfactory-Token (needed to bind beyond loopback).",
    ),
    log_level: str = typer.Option("info", "--log-level"),
) -> None:
    """Proxy chat completions to UPSTREAM, storing each episode's token ids and logprobs."""
    try:
        from envfactory.integrations.proxy import run_proxy
    except ImportError:
        raise fail(EXTRA) from None
    require_safe_bind(host, token, EXTRA)
    err_console.print(
        f"capture proxy on http://{host}:{port}/v1 -> {upstream}; episodes in {out}/episodes.jsonl"
    )
    run_proxy(
        upstream,
        out,
        host=host,
        port=port,
        api_key=api_key or None,
        session_header=session_header,
        token=token or None,
        log_level=log_level,
    )
