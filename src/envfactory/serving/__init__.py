"""Serving: one engine behind every protocol (Open Reward Standard HTTP, OpenEnv WebSocket,
MCP, envfactory's JSON routes). Needs the ``serve`` extra: ``pip install 'envfactory[serve]'``."""

from envfactory.serving.app import create_app
from envfactory.serving.config import ServeConfig, check_bind
from envfactory.serving.engine import Engine
from envfactory.serving.server import running, serve

__all__ = ["Engine", "ServeConfig", "check_bind", "create_app", "running", "serve"]
