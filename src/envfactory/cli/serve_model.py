"""``envfactory serve-model``: a local model behind an OpenAI-compatible API."""

from __future__ import annotations

import typer

from envfactory.cli.common import err_console, fail, require_safe_bind
from envfactory.contract.errors import EnvFactoryError

SERVE_EXTRA = "serving needs the 'serve' extra: pip install 'envfactory[serve]'"


def serve_model(
    model: str | None = typer.Option(
        None, "--model", help="A model folder or .gguf file (default: the embedded model)."
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind."),
    port: int = typer.Option(8000, "--port", help="Port to listen on."),
    max_batch: int = typer.Option(16, "--max-batch", min=1, help="Requests generated together."),
    max_tokens: int = typer.Option(
        512, "--max-tokens", min=1, help="Tokens per reply at most (and when none is asked)."
    ),
    token: str = typer.Option(
        "",
        "--token",
        envvar="ENVFACTORY_TOKEN",
        help="Require this bearer token on every route but /health "
        "(needed to bind beyond loopback).",
    ),
    log_level: str = typer.Option("info", "--log-level"),
) -> None:
    """Serve the embedded model (or --model) as an OpenAI-compatible chat-completions API."""
    require_safe_bind(host, token, SERVE_EXTRA)
    try:
        from envfactory.serving.model_server import ModelPool
        from envfactory.serving.model_server import serve_model as run_server
    except ImportError:
        raise fail(SERVE_EXTRA) from None
    try:
        with err_console.status(f"loading {model or 'the embedded model'}"):
            pool = ModelPool.load(model, max_batch=max_batch, max_tokens=max_tokens)
    except ImportError as exc:
        raise fail(f"serve-model needs torch and transformers (make setup): {exc}") from None
    except EnvFactoryError as exc:
        raise fail(str(exc)) from None
    err_console.print(
        f"serving {pool.name} on http://{host}:{port}/v1 (OpenAI chat completions; "
        f"batches of up to {max_batch})"
    )
    run_server(pool, host=host, port=port, token=token or None, log_level=log_level)
