"""The website of a database world: one loopback HTTP server per process, one session per
episode (its address holds the session's secret token).

Every page is generated from the domain: a form per action the task offers (read actions are
searches whose results list rows, with pagination; write actions are forms with a button).
Submitting a form calls the episode's own tool, so preconditions, rules and error messages are
the domain's, shown as page feedback. Clutter (0-4) adds a promotional banner, look-alike
buttons, a pop-up that covers the page until dismissed, and shorter result pages.
"""

from __future__ import annotations

import html
import math
import re
import secrets
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from envfactory.contract.actions import ToolCall
from envfactory.contract.results import ToolError

if TYPE_CHECKING:
    from envfactory.db.episode import DatabaseEpisode

MAX_BODY = 64 * 1024
PAGE_SIZE = 20
SHORT_PAGE = 5  # clutter 4: long lists spread over more pages
_INT = re.compile(r"^-?\d{1,18}$")

# Each page marks its document, and that it is being left (a form sent, a link followed), so
# the episode knows when an action's navigation has finished.
MARK = (
    "window.__envf_doc=Math.random();window.__envf_leaving=false;"
    "addEventListener('submit',()=>{window.__envf_leaving=true});"
    "addEventListener('beforeunload',()=>{window.__envf_leaving=true});"
    "addEventListener('click',e=>{const a=e.target.closest&&e.target.closest('a[href]');"
    "if(a)window.__envf_leaving=true});"
)

STYLE = """
body{font-family:sans-serif;margin:0;color:#222}
header{background:#24476b;color:#fff;padding:10px 16px}header a{color:#fff;font-weight:bold}
.banner{background:#ffe9a8;padding:8px 16px;border-bottom:1px solid #d9b740}
.wrap{display:flex}nav{width:230px;padding:8px 16px;background:#f3f5f8;min-height:90vh}
nav a{display:block;padding:2px 0}nav h2{font-size:14px;margin:12px 0 4px;color:#555}
main{padding:8px 24px;flex:1}label{display:block;margin-top:8px;font-size:13px}
input,select{padding:4px;min-width:260px}button{margin:12px 8px 0 0;padding:6px 14px}
.feedback{margin:12px 0;padding:8px;border-radius:4px}.ok{background:#e3f6e3}
.error{background:#fde2e2}table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}
.overlay{position:fixed;inset:0;background:rgba(0,0,0,.55);display:flex;align-items:center;
justify-content:center}.popup{background:#fff;padding:24px;width:380px;border-radius:6px}
"""


def label(name: str) -> str:
    """``cancel_order`` -> ``Cancel order``."""
    text = name.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


@dataclass
class Submission:
    """A form's last submission in a session: its data or its error."""

    tool: str
    values: dict[str, str]
    data: Any = None
    error: ToolError | None = None


@dataclass
class Session:
    """One episode's view of the site."""

    token: str
    episode: DatabaseEpisode
    clutter: int = 0
    popup: bool = False
    submissions: int = 0
    last: Submission | None = None
    results: dict[str, Submission] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def page_size(self) -> int:
        return SHORT_PAGE if self.clutter >= 4 else PAGE_SIZE

    def tools(self) -> list[str]:
        task = self.episode.task
        return list(task.public.tools) if task is not None else []

    def submit(self, tool: str, form: dict[str, str]) -> Submission:
        """Run ``tool`` with the form's fields through the episode (the domain's own tool)."""
        spec = self.episode.env.world.tools.get(tool)
        props = spec.schema.get("properties", {}) if spec is not None else {}
        args = {k: typed(v, props.get(k, {})) for k, v in form.items() if v != ""}
        obs = self.episode._call(ToolCall(tool=tool, arguments=args))
        sub = Submission(tool=tool, values=form, data=obs.data, error=obs.error)
        self.submissions += 1
        self.last = sub
        self.results[tool] = sub
        return sub


def typed(value: str, schema: dict[str, Any]) -> Any:
    """A form field's text as the parameter's JSON type, when it reads as one (else the text,
    which the tool refuses with its own message)."""
    kind = schema.get("type")
    text = value.strip()
    if kind == "integer" and _INT.match(text):
        return int(text)
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            return value
        return number if math.isfinite(number) else value
    if kind == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    return value


class Site:
    """The loopback server and its sessions."""

    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(
            target=self.server.serve_forever, name="envfactory-web", daemon=True
        )
        self.thread.start()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def open(self, episode: DatabaseEpisode, clutter: int) -> Session:
        session = Session(secrets.token_hex(16), episode, clutter=clutter, popup=clutter >= 3)
        with self.lock:
            self.sessions[session.token] = session
        return session

    def close(self, session: Session) -> None:
        with self.lock:
            self.sessions.pop(session.token, None)

    def base(self, session: Session) -> str:
        return f"{self.origin}/s/{session.token}/"

    def shutdown(self) -> None:
        self.server.shutdown()
        self.server.server_close()


_SITE: Site | None = None
_SITE_LOCK = threading.Lock()


def site() -> Site:
    """This process's site (started on first use)."""
    global _SITE
    with _SITE_LOCK:
        if _SITE is None:
            _SITE = Site()
        return _SITE


# -- pages -----------------------------------------------------------------------------------


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def page(session: Session, title: str, body: str) -> str:
    env = session.episode.env
    name = env.world.spec.name
    tools = env.world.tools
    shown = [t for t in session.tools() if t in tools]
    reads = [t for t in shown if tools[t].kind == "read"]
    writes = [t for t in shown if tools[t].kind != "read"]
    nav = "".join(
        f"<h2>{heading}</h2>"
        + "".join(f'<a bid="nav-{_e(t)}" href="act/{_e(t)}">{_e(label(t))}</a>' for t in group)
        for heading, group in (("Look up", reads), ("Actions", writes))
        if group
    )
    banner = (
        '<div class="banner">Spring sale: 20% off selected items this week! '
        '<a bid="promo" href="promo">See the offers</a></div>'
        if session.clutter >= 1
        else ""
    )
    popup = (
        '<div class="overlay" id="popup"><div class="popup" role="dialog">'
        "<h2>Stay in the loop</h2><p>Subscribe to our newsletter for news and offers.</p>"
        '<button bid="popup-subscribe" type="button">Subscribe</button>'
        '<button bid="popup-dismiss" type="button" onclick="var x=new XMLHttpRequest();'
        "x.open('POST','dismiss',false);x.send();"
        "document.getElementById('popup').remove()\">No thanks</button></div></div>"
        if session.popup
        else ""
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<base href='/s/{session.token}/'><title>{_e(name)} | {_e(title)}</title>"
        f"<style>{STYLE}</style><script>{MARK}</script></head><body>{banner}"
        f'<header><a bid="home" href="./">{_e(name)}</a> staff portal</header>'
        f'<div class="wrap"><nav>{nav}</nav><main>{body}</main></div>{popup}</body></html>'
    )


def home(session: Session) -> str:
    spec = session.episode.env.world.spec
    body = (
        f"<h1>{_e(spec.name)}</h1><p>{_e(spec.description)}</p>"
        "<p>Choose a page on the left to look records up or to act on them.</p>"
    )
    return page(session, "Home", body)


def form(session: Session, tool: str, sub: Submission | None, page_no: int = 1) -> str:
    spec = session.episode.env.world.tools[tool]
    props: dict[str, Any] = spec.schema.get("properties", {})
    required = set(spec.schema.get("required", []))
    values = sub.values if sub is not None else {}
    fields = []
    for name, schema in props.items():
        bid = f"{tool}-{name}"
        text = label(name) + ("" if name in required else " (optional)")
        current = values.get(name, "")
        hint = _e(schema.get("description", ""))
        if "enum" in schema or schema.get("type") == "boolean":
            choices = [str(c) for c in schema.get("enum", ["true", "false"])]
            opts = '<option value="">(choose)</option>' + "".join(
                f'<option value="{_e(c)}"{" selected" if c == current else ""}>{_e(c)}</option>'
                for c in choices
            )
            fields.append(
                f'<label for="{_e(bid)}">{_e(text)}</label>'
                f'<select id="{_e(bid)}" bid="{_e(bid)}" name="{_e(name)}" aria-label="{_e(text)}"'
                f' title="{hint}">{opts}</select>'
            )
        else:
            kind = "date" if schema.get("format") == "date" else "text"
            fields.append(
                f'<label for="{_e(bid)}">{_e(text)}</label>'
                f'<input type="text" id="{_e(bid)}" bid="{_e(bid)}" name="{_e(name)}" '
                f'aria-label="{_e(text)}" placeholder="{"YYYY-MM-DD" if kind == "date" else ""}"'
                f' title="{hint}" value="{_e(current)}">'
            )
    decoy = (
        f'<button type="button" bid="{_e(tool)}-draft" onclick="document.getElementById('
        "'draft').textContent='Draft saved.'\">Save draft</button><span id=\"draft\"></span>"
        if session.clutter >= 2
        else ""
    )
    verb = "Search" if spec.kind == "read" else label(tool)
    body = (
        f"<h1>{_e(label(tool))}</h1><p>{_e(spec.description)}</p>"
        f'<form method="post" action="act/{_e(tool)}">{"".join(fields)}<div>{decoy}'
        f'<button type="submit" bid="{_e(tool)}-submit">{_e(verb)}</button></div></form>'
        + (result(session, tool, sub, page_no) if sub is not None else "")
    )
    return page(session, label(tool), body)


def result(session: Session, tool: str, sub: Submission, page_no: int) -> str:
    if sub.error is not None:
        return (
            f'<div class="feedback error" role="alert">Error ({_e(sub.error.code)}): '
            f"{_e(sub.error.message)}</div>"
        )
    pager: list[str] = []
    shown = render(sub.data, session.page_size, page_no, tool, pager)
    done = "Results" if session.episode.env.world.tools[tool].kind == "read" else "Done"
    return f'<div class="feedback ok" role="status">{done}.</div>{shown}' + "".join(pager[:1])


def render(data: Any, size: int, page_no: int, tool: str, pager: list[str], depth: int = 0) -> str:
    """A value as HTML: a record as a two-column table, a list of records as a table (its
    first list paginated), other values as text."""
    if isinstance(data, dict):
        scalars = {k: v for k, v in data.items() if not isinstance(v, (dict, list))}
        nested = {k: v for k, v in data.items() if isinstance(v, (dict, list))}
        rows = "".join(
            f"<tr><th>{_e(label(k))}</th><td>{_e(_cell(v))}</td></tr>" for k, v in scalars.items()
        )
        out = f"<table>{rows}</table>" if rows else ""
        for k, v in nested.items():
            out += f"<h3>{_e(label(k))}</h3>" + render(v, size, page_no, tool, pager, depth + 1)
        return out
    if isinstance(data, list):
        if not data:
            return "<p>No records.</p>"
        pages = max(1, math.ceil(len(data) / size))
        if not pager:
            page_no = min(max(1, page_no), pages)
            chunk = data[(page_no - 1) * size : page_no * size]
            links = []
            at = f'href="act/{_e(tool)}?page='
            if page_no > 1:
                links.append(f'<a bid="{_e(tool)}-prev" {at}{page_no - 1}">Previous</a>')
            if page_no < pages:
                links.append(f'<a bid="{_e(tool)}-next" {at}{page_no + 1}">Next</a>')
            pager.append(
                f"<p>Page {page_no} of {pages} ({len(data)} records) {' '.join(links)}</p>"
            )
        else:
            chunk = data[:size]
        if all(isinstance(r, dict) for r in chunk):
            cols = list(dict.fromkeys(k for r in chunk for k in r))
            head = "".join(f"<th>{_e(label(c))}</th>" for c in cols)
            body = "".join(
                "<tr>" + "".join(f"<td>{_e(_cell(r.get(c)))}</td>" for c in cols) + "</tr>"
                for r in chunk
            )
            return f"<table><tr>{head}</tr>{body}</table>"
        return "<ul>" + "".join(f"<li>{_e(_cell(v))}</li>" for v in chunk) + "</ul>"
    return f"<p>{_e(_cell(data))}</p>"


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def promo(session: Session) -> str:
    return page(session, "Offers", "<h1>Offers</h1><p>No offers apply to staff accounts.</p>")


def missing(session: Session | None, what: str) -> str:
    if session is None:
        return (
            "<!doctype html><html><head><title>Session ended</title></head><body>"
            "<h1>This session has ended.</h1></body></html>"
        )
    return page(session, "Not found", f"<h1>Not found</h1><p>There is no page {_e(what)}.</p>")


def _handler(owner: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: pages are not logged."""

        def _send(self, status: int, text: str) -> None:
            body = text.encode("utf-8", "replace")
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def _route(self) -> tuple[Session | None, str, dict[str, list[str]]]:
            parts = urlsplit(self.path)
            m = re.match(r"^/s/([0-9a-f]{32})/(.*)$", parts.path)
            if m is None:
                return None, parts.path, {}
            with owner.lock:
                session = owner.sessions.get(m.group(1))
            return session, m.group(2), parse_qs(parts.query)

        def do_GET(self) -> None:
            session, rest, query = self._route()
            if session is None:
                return self._send(404, missing(None, rest))
            with session.lock:
                if rest == "":
                    return self._send(200, home(session))
                if rest == "promo":
                    return self._send(200, promo(session))
                tool = rest.removeprefix("act/")
                if rest.startswith("act/") and tool in session.tools():
                    try:
                        page_no = int(query.get("page", ["1"])[0])
                    except ValueError:
                        page_no = 1
                    sub = session.results.get(tool) if "page" in query else None
                    return self._send(200, form(session, tool, sub, page_no))
                return self._send(404, missing(session, rest))

        def do_POST(self) -> None:
            session, rest, _ = self._route()
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(min(length, MAX_BODY)) if length > 0 else b""
            if session is None:
                return self._send(404, missing(None, rest))
            with session.lock:
                if rest == "dismiss":
                    session.popup = False
                    return self._send(200, "")
                tool = rest.removeprefix("act/")
                if not (rest.startswith("act/") and tool in session.tools()):
                    return self._send(404, missing(session, rest))
                fields = parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True)
                values = {k: v[-1] for k, v in fields.items()}
                sub = session.submit(tool, values)
                return self._send(200, form(session, tool, sub))

    return Handler
