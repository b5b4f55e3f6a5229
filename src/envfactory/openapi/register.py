"""Imported by the registry with the built-in worlds: registers the compiled worlds of the
library folders that ``ENVFACTORY_LIBRARY`` names (none when it is unset)."""

from __future__ import annotations

from envfactory.openapi.library import register_from_environment

register_from_environment()
