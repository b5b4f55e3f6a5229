"""The browser actions of a web world, named and shaped as BrowserGym names them.

``click(bid)``, ``fill(bid, value)``, ``select_option(bid, options)``, ``press(bid, key_comb)``,
``scroll(delta_x, delta_y)``, ``goto(url)``, ``go_back()``, ``send_msg_to_user(text)``. An
element id (``bid``) is the ``[id]`` an observation shows before an element.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from envfactory.domain.spec import ParamSpec
from envfactory.tools.params import tool_schemas

BID = ParamSpec(description="an element id, as shown in [brackets] in the page", max_length=100)
BID_PATTERN = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")
MAX_FILL = 2000  # characters typed into one field

ACTIONS: dict[str, tuple[str, dict[str, ParamSpec]]] = {
    "click": ("Click an element (a link, a button, a field).", {"bid": BID}),
    "fill": (
        "Clear a text field and type a value into it.",
        {"bid": BID, "value": ParamSpec(description="the text to type", max_length=MAX_FILL)},
    ),
    "select_option": (
        "Choose an option of a drop-down list, by its text or value.",
        {"bid": BID, "options": ParamSpec(description="the option to choose")},
    ),
    "press": (
        "Focus an element and press a key or a combination, e.g. Enter, Tab, Control+a.",
        {"bid": BID, "key_comb": ParamSpec(description="a key or keys joined by +", max_length=60)},
    ),
    "scroll": (
        "Scroll the page by a number of pixels (negative values scroll up or left).",
        {
            "delta_x": ParamSpec(
                type="number", description="pixels right", minimum=-1e5, maximum=1e5
            ),
            "delta_y": ParamSpec(
                type="number", description="pixels down", minimum=-1e5, maximum=1e5
            ),
        },
    ),
    "goto": (
        "Open a page of this website by its address (a path such as 'act/get_order' or a full "
        "address on this site).",
        {"url": ParamSpec(description="the address", max_length=500)},
    ),
    "go_back": ("Go back to the previous page.", {}),
    "send_msg_to_user": (
        "Send your reply to the user: the answer they asked for, or that the work is done. "
        "It ends the episode. (To ask the user something and go on, send a message that is "
        "not final.)",
        {"text": ParamSpec(description="the message", max_length=4000)},
    ),
}
READ_ONLY = frozenset({"scroll", "goto", "go_back", "send_msg_to_user"})

KEYS = {
    "enter": "ENTER",
    "return": "RETURN",
    "tab": "TAB",
    "escape": "ESCAPE",
    "esc": "ESCAPE",
    "backspace": "BACKSPACE",
    "delete": "DELETE",
    "space": "SPACE",
    "arrowup": "ARROW_UP",
    "arrowdown": "ARROW_DOWN",
    "arrowleft": "ARROW_LEFT",
    "arrowright": "ARROW_RIGHT",
    "home": "HOME",
    "end": "END",
    "pageup": "PAGE_UP",
    "pagedown": "PAGE_DOWN",
    "control": "CONTROL",
    "ctrl": "CONTROL",
    "shift": "SHIFT",
    "alt": "ALT",
    "meta": "META",
}


def schemas(fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
    """The browser actions' schemas (OpenAI functions or MCP tools)."""
    return tool_schemas(
        ACTIONS, fmt, lambda name: {"readOnlyHint": name in READ_ONLY, "destructiveHint": False}
    )


def key_names(key_comb: str) -> list[str] | None:
    """Selenium key names (or single characters) of ``Control+a``; None when one is unknown."""
    out: list[str] = []
    for part in key_comb.split("+"):
        part = part.strip()
        if len(part) == 1:
            out.append(part)
        elif part.lower() in KEYS:
            out.append(KEYS[part.lower()])
        else:
            return None
    return out or None
