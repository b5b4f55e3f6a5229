"""Headless Chromium (Debian's package and its chromedriver, driven with Selenium): a pool of
browsers, the page as an observation with element ids, and BrowserGym's actions.

Starting a browser takes about a second, so a process keeps idle ones: an episode borrows one
for its life and gives it back on ``close()``. A reset opens a fresh tab (no history) after
clearing cookies and storage, so nothing of an earlier episode is left.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import shutil
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envfactory.errors import EnvironmentUnavailable

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

WIDTH, HEIGHT = 1280, 900
MAX_IDLE = 8

# The page as text: one line per element an agent can see, [bid] before the interactive ones.
OBSERVE_JS = r"""
const out = [];
const q = s => "'" + String(s).replace(/\s+/g, ' ').trim().slice(0, 300) + "'";
function shown(el) {
  const s = getComputedStyle(el);
  return s.display !== 'none' && s.visibility !== 'hidden';
}
function walk(el, depth) {
  if (!shown(el)) return;
  const tag = el.tagName.toLowerCase();
  if (['script', 'style', 'head', 'label'].includes(tag)) return;
  const bid = el.getAttribute('bid');
  const pre = '  '.repeat(depth) + (bid ? '[' + bid + '] ' : '');
  const text = (el.innerText || el.textContent || '');
  if (tag === 'a') { out.push(pre + 'link ' + q(text)); return; }
  if (tag === 'button') { out.push(pre + 'button ' + q(text)); return; }
  if (tag === 'input') {
    out.push(pre + 'textbox ' + q(el.getAttribute('aria-label') || el.name) + ' value=' +
             q(el.value) + (el.placeholder ? ' placeholder=' + q(el.placeholder) : ''));
    return;
  }
  if (tag === 'select') {
    const opts = Array.from(el.options).map(o => o.text);
    const sel = el.selectedIndex >= 0 ? el.options[el.selectedIndex].text : '';
    out.push(pre + 'combobox ' + q(el.getAttribute('aria-label') || el.name) + ' selected=' +
             q(sel) + ' options=[' + opts.map(q).join(', ') + ']');
    return;
  }
  if (/^h[1-6]$/.test(tag)) { out.push(pre + 'heading ' + q(text)); return; }
  if (tag === 'tr') {
    const cells = Array.from(el.children).map(c => (c.innerText || '').trim());
    out.push(pre + 'row ' + q(cells.join(' | ')));
    return;
  }
  const role = el.getAttribute('role');
  if (role === 'alert' || role === 'status' || role === 'dialog') {
    if (role !== 'dialog') { out.push(pre + role + ' ' + q(text)); return; }
    out.push(pre + 'dialog');
  }
  for (const n of el.childNodes) {
    if (n.nodeType === 3) {
      const t = n.textContent.replace(/\s+/g, ' ').trim();
      if (t) out.push('  '.repeat(depth + 1) + 'StaticText ' + q(t));
    } else if (n.nodeType === 1) {
      walk(n, depth + 1);
    }
  }
}
if (document.body) walk(document.body, 0);
return {url: location.href, title: document.title, text: out.join('\n'),
        ready: document.readyState, scroll: [window.scrollX, window.scrollY],
        doc: window.__envf_doc === undefined ? null : window.__envf_doc,
        leaving: !!window.__envf_leaving};
"""


def available() -> str | None:
    """None when a browser can start here, else why not."""
    missing = [b for b in ("chromium", "chromedriver") if shutil.which(b) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (make system-test installs them)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install 'envfactory[web]')"
    return None


def launch() -> WebDriver:
    """A new headless Chromium; raises :class:`EnvironmentUnavailable` when none can start."""
    why = available()
    if why is not None:
        raise EnvironmentUnavailable(f"web worlds need a browser: {why}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or ""
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-sync",
        "--no-first-run",
        "--mute-audio",
        "--proxy-server=direct://",
        "--proxy-bypass-list=*",
        f"--window-size={WIDTH},{HEIGHT}",
    ):
        options.add_argument(arg)
    service = Service(shutil.which("chromedriver") or "")
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(15)
    driver.set_script_timeout(10)
    return driver


class BrowserPool:
    """Idle browsers of this process; quit at exit."""

    def __init__(self, max_idle: int = MAX_IDLE) -> None:
        self.max_idle = max_idle
        self.idle: list[WebDriver] = []
        self.live: set[int] = set()
        self.lock = threading.Lock()
        self.launched = 0

    def acquire(self) -> WebDriver:
        with self.lock:
            driver = self.idle.pop() if self.idle else None
        if driver is None:
            driver = launch()
            with self.lock:
                self.launched += 1
        return driver

    def release(self, driver: WebDriver) -> None:
        try:
            driver.delete_all_cookies()
            driver.get("about:blank")
        except Exception:
            quit_quietly(driver)
            return
        with self.lock:
            if len(self.idle) < self.max_idle:
                self.idle.append(driver)
                return
        quit_quietly(driver)

    def close(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
        for driver in idle:
            quit_quietly(driver)


def quit_quietly(driver: WebDriver) -> None:
    with contextlib.suppress(Exception):
        driver.quit()


POOL = BrowserPool()
atexit.register(POOL.close)


@dataclass
class Page:
    url: str
    title: str
    text: str
    scroll: tuple[int, int]
    doc: Any = None


def fresh_tab(driver: WebDriver, url: str) -> None:
    """The tab at ``url`` with no history of an earlier episode (the site keeps its state on
    the server, by session, and sets no cookies; a returned browser's are cleared)."""
    driver.get(url)
    driver.execute_cdp_cmd("Page.resetNavigationHistory", {})


def observe(driver: WebDriver, before: Any = None, timeout_s: float = 10.0) -> Page:
    """The current page once loaded: when the last action left the document marked
    ``before``, the new one."""
    deadline = time.monotonic() + timeout_s
    while True:
        got: dict[str, Any] = driver.execute_script(OBSERVE_JS)
        moved = before is None or got.get("doc") != before
        loaded = got.get("ready") == "complete"
        if (moved and loaded) or not (moved or got.get("leaving")) or time.monotonic() > deadline:
            break
        time.sleep(0.005)
    x, y = got.get("scroll") or (0, 0)
    return Page(
        str(got["url"]), str(got["title"]), str(got["text"]), (int(x), int(y)), got.get("doc")
    )


def screenshot(driver: WebDriver) -> str:
    """The viewport as base64 PNG."""
    return base64.b64encode(driver.get_screenshot_as_png()).decode("ascii")
