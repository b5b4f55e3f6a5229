"""Terminal worlds: procedural shell tasks in a rootless bubblewrap sandbox."""

from envfactory.terminal.environment import TerminalEnvironment
from envfactory.terminal.episode import TerminalEpisode
from envfactory.terminal.sandbox import Limits, Sandbox, SandboxUnavailable, unavailable_reason

__all__ = [
    "Limits",
    "Sandbox",
    "SandboxUnavailable",
    "TerminalEnvironment",
    "TerminalEpisode",
    "unavailable_reason",
]
