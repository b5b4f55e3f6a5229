"""``python -m envfactory`` is the ``envfactory`` command."""

from envfactory.cli.main import app

app()
