"""Headless Chromium (Debian's package and its chromedriver, driven with Selenium): a pool of
browsers, the page as an observation with element ids, and BrowserGym's actions.

Starting a browser takes about a second and each holds hundreds of megabytes, so a process
keeps a few (:class:`BrowserPool`) and an episode holds a tab in one for its life, closed on
``close()``. A reset sends the tab to the site and clears its history, so nothing of an
earlier episode is left (the site keeps its state on the server, by session, and stores
nothing in the browser).
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import os
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envfactory.contract.errors import EnvironmentUnavailable

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

WIDTH, HEIGHT = 1280, 900

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


class Browser:
    """One Chromium and the tabs episodes hold in it. Selenium drives one tab at a time, so an
    action takes the browser's lock and switches to its tab; a blank first window keeps the
    browser open when no episode holds a tab."""

    def __init__(self, driver: WebDriver) -> None:
        self.driver = driver
        self.lock = threading.RLock()
        self.current = driver.current_window_handle
        self.tabs = 0
        self.broken = False


class Tab:
    """An episode's tab: ``with tab.use() as driver`` acts on it alone."""

    def __init__(self, browser: Browser, handle: str) -> None:
        self.browser = browser
        self.handle = handle

    @contextlib.contextmanager
    def use(self) -> Iterator[WebDriver]:
        b = self.browser
        with b.lock:
            if b.current != self.handle:
                b.driver.switch_to.window(self.handle)
                b.current = self.handle
            yield b.driver

    def break_browser(self) -> None:
        """The browser failed: no new tab goes to it, and it quits when its last tab closes."""
        self.browser.broken = True


class BrowserPool:
    """At most ``max_browsers`` Chromiums for the whole process, their tabs spread evenly:
    a new episode opens a tab in the least-busy browser (starting another only while under the
    cap), so any number of live episodes costs a bounded number of browsers and never waits
    for one. Quit at exit."""

    def __init__(self, max_browsers: int | None = None) -> None:
        self.max_browsers = max_browsers or _max_browsers()
        self.browsers: list[Browser] = []
        self.starting = 0
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)  # a browser started, failed or left
        self.launched = 0

    def open_tab(self) -> Tab:
        browser = self._least_busy() or self._start()
        try:
            with browser.lock:
                browser.driver.switch_to.new_window("tab")
                browser.current = browser.driver.current_window_handle
                return Tab(browser, browser.current)
        except Exception:
            browser.broken = True
            self._forget(browser)
            raise

    def _least_busy(self) -> Browser | None:
        """The live browser with the fewest tabs, counted as one more; None: start another
        (every browser has a tab and the cap allows one more). While a browser is starting,
        waits for it rather than piling more tabs on the running ones."""
        with self.changed:
            while True:
                live = [b for b in self.browsers if not b.broken]
                least = min(live, key=lambda b: b.tabs, default=None)
                room = len(live) + self.starting < self.max_browsers
                if room and (least is None or least.tabs > 0):
                    self.starting += 1
                    return None
                if least is not None and (least.tabs == 0 or not self.starting):
                    least.tabs += 1
                    return least
                self.changed.wait()  # for a browser still starting: it will be the least busy

    def _start(self) -> Browser:
        try:
            browser = Browser(launch())
        except BaseException:
            with self.changed:
                self.starting -= 1
                self.changed.notify_all()
            raise
        with self.changed:
            self.starting -= 1
            browser.tabs = 1
            self.browsers.append(browser)
            self.launched += 1
            self.changed.notify_all()
        return browser

    def close_tab(self, tab: Tab) -> None:
        b = tab.browser
        if not b.broken:
            try:
                with b.lock:
                    b.driver.switch_to.window(tab.handle)
                    b.driver.close()
                    b.current = b.driver.window_handles[0]
                    b.driver.switch_to.window(b.current)
            except Exception:
                b.broken = True
        self._forget(b)

    def _forget(self, b: Browser) -> None:
        """One tab fewer in ``b``; a broken browser quits when no episode holds a tab in it."""
        with self.lock:
            b.tabs -= 1
            gone = b.broken and b.tabs <= 0 and b in self.browsers
            if gone:
                self.browsers.remove(b)
        if gone:
            quit_quietly(b.driver)

    def close(self) -> None:
        with self.lock:
            browsers, self.browsers = self.browsers, []
        for b in browsers:
            quit_quietly(b.driver)


def _max_browsers() -> int:
    """``ENVFACTORY_MAX_BROWSERS``, else two per CPU."""
    given = os.environ.get("ENVFACTORY_MAX_BROWSERS", "")
    return int(given) if given.isdigit() and int(given) > 0 else 2 * (os.cpu_count() or 1)


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
    """The tab at ``url`` with no history of an earlier episode."""
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
