"""The episode of a web world: a real headless browser on the world's website.

The database, the tools behind the forms, the user simulator and the verdict are those of the
domain's own episode (``inner``); the agent reaches them only through the browser.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urljoin, urlsplit

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.episode import ToolEpisode, error_observation, unknown_tool
from envfactory.contract.errors import EpisodeError
from envfactory.contract.results import ToolError, ToolFailure
from envfactory.contract.tasks import Task
from envfactory.contract.verdict import Verdict
from envfactory.db.environment import DatabaseEnvironment
from envfactory.tools.params import validate
from envfactory.web import browser
from envfactory.web.actions import ACTIONS, BID_PATTERN, key_names
from envfactory.web.guide import follows, next_hint
from envfactory.web.site import Session, site
from envfactory.web.tasks import WebHidden, clutter_of, domain_task
from envfactory.world.state import RowChange

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement


class WebSetting(Protocol):
    """What a web episode reads from its world (a ``WebEnvironment``)."""

    id: str
    domain: DatabaseEnvironment


# A gold plan takes about four browser actions per tool call (open the page, fill, submit), so
# a web episode allows ACTIONS_PER_STEP browser actions per step of the configured limit: the
# harnesses' limits (set for tool calls) keep their meaning.
ACTIONS_PER_STEP = 4
ELEMENT = re.compile(r"^\s*\[([^\]\s]+)\] (\w+)", re.M)  # "[bid] role 'name'" lines of a page
FIELDS = {"fill": ("textbox",), "press": ("textbox",), "select_option": ("combobox",)}

FIND_JS = """
const el = document.querySelector('[bid="' + arguments[0] + '"]');
if (!el) return null;
const s = getComputedStyle(el);
if (s.display === 'none' || s.visibility === 'hidden' || !el.getClientRects().length) return null;
return [el, el.tagName.toLowerCase()];
"""

SELECT_JS = """
const el = arguments[0], want = arguments[1];
for (const by of ['text', 'value']) {
  for (let i = 0; i < el.options.length; i++) {
    const o = el.options[i];
    if ((by === 'text' ? o.text : o.value) === want) {
      el.focus(); el.selectedIndex = i;
      el.dispatchEvent(new Event('input', {bubbles: true}));
      el.dispatchEvent(new Event('change', {bubbles: true}));
      return null;
    }
  }
}
return Array.from(el.options).map(o => "'" + o.text + "'").join(', ');
"""

SET_VALUE_JS = """
const el = arguments[0];
el.focus(); el.value = arguments[1];
el.dispatchEvent(new Event('input', {bubbles: true}));
el.dispatchEvent(new Event('change', {bubbles: true}));
"""


class WebEpisode(ToolEpisode):
    """One live episode: its own database state, site session and browser tab."""

    fork_refusal = "its state includes a live browser tab and site session, which cannot be copied"

    def __init__(
        self, env: WebSetting, config: EpisodeConfig | None = None, screenshot: bool = False
    ) -> None:
        self.env = env
        given = config or EpisodeConfig()
        self.config = replace(given, max_steps=given.max_steps * ACTIONS_PER_STEP)
        self.inner = env.domain.episode(given)
        self.screenshot = screenshot
        self.tab: browser.Tab | None = None
        self.session: Session | None = None
        self.doc: Any = None  # the mark of the page last observed
        self.task: Task | None = None
        self.steps = 0
        self.taken = 0  # gold steps followed in order (the guided level's tour)
        self.done = False
        self.status = "truncated"

    @property
    def driver(self) -> WebDriver:
        """The browser of this episode's tab (act on it only inside ``self.tab.use()``)."""
        assert self.tab is not None, "call reset(task) first"
        return self.tab.browser.driver

    # -- lifecycle ---------------------------------------------------------------------------

    def reset(self, task: Task) -> Observation:
        """The task's initial database (a snapshot) and a fresh browser tab on the site."""
        if task.public.env_id != self.env.id:
            raise EpisodeError(f"task {task.task_id} belongs to {task.public.env_id}")
        self.inner.reset(domain_task(task))
        home = site()
        if self.session is not None:
            home.close(self.session)
        self.session = home.open(self.inner, clutter_of(task))
        if self.tab is not None and self.tab.browser.broken:
            browser.POOL.close_tab(self.tab)
            self.tab = None
        if self.tab is None:
            self.tab = browser.POOL.open_tab()
        self.doc = None
        self.task = task
        self.steps = 0
        self.taken = 0
        self.done, self.status = False, "truncated"
        with self.tab.use():
            browser.fresh_tab(self.driver, home.base(self.session))
            page = self._page(None)
        return Observation(
            kind="task",
            content=f"{task.public.instruction}\n\n{page.content}",
            data={**task.public.model_dump(), "page": page.data, "choices": page.data["choices"]},
        )

    def close(self) -> None:
        if self.session is not None:
            site().close(self.session)
            self.session = None
        if self.tab is not None:
            browser.POOL.close_tab(self.tab)
            self.tab = None
        self.inner.close()

    # -- acting ------------------------------------------------------------------------------

    def _message(self, msg: Message) -> Observation:
        obs = self.inner._message(msg)
        self._sync()
        return obs

    def _call(self, call: ToolCall) -> Observation:
        spec = ACTIONS.get(call.tool)
        if spec is None:
            return error_observation(unknown_tool(call.tool, ACTIONS))
        arguments = _as_text(call.tool, call.arguments)
        try:
            args = validate(call.tool, spec[1], arguments)
        except ToolFailure as exc:
            return _refused(call.tool, exc)
        if call.tool == "send_msg_to_user":
            return self._message(Message(content=args["text"], final=True))
        assert self.session is not None and self.tab is not None
        before = self.session.submissions
        act = getattr(self, f"_{call.tool}")
        try:
            with self.tab.use():
                try:
                    act(**{k: v for k, v in args.items() if v is not None})
                except ToolFailure as exc:
                    return _refused(call.tool, exc)
                self._follow(call.tool, args)
                return self._page(before)
        except Exception as exc:  # the browser itself failed: not the agent's doing
            return self._fault(exc)

    def _guided(self) -> WebHidden | None:
        hidden = self.task.hidden if self.task is not None else None
        return hidden if isinstance(hidden, WebHidden) and hidden.guided else None

    def _follow(self, tool: str, args: dict[str, Any]) -> None:
        """Count the action if it is the guided tour's next step."""
        hidden = self._guided()
        if hidden is not None and self.taken < len(hidden.gold_plan):
            self.taken += follows(hidden.gold_plan[self.taken], tool, args)

    def _fault(self, exc: Exception) -> Observation:
        from selenium.common.exceptions import WebDriverException

        if isinstance(exc, WebDriverException):
            reason = _browser_problem(exc)
            if reason is not None:  # the element refused the action: the agent's to fix
                return error_observation(ToolError(code="precondition_failed", message=reason))
        self.done, self.status = True, "infra_error"
        if self.tab is not None:
            self.tab.break_browser()
        msg = f"the browser failed: {type(exc).__name__}"
        return error_observation(ToolError(code="tool_failed", message=msg), done=True)

    def _sync(self) -> None:
        """The domain episode ended (a final reply, the user stopping, a tool's own fault)."""
        if self.inner.done and not self.done:
            self.done, self.status = True, self.inner.status

    def _page(self, submissions: int | None) -> Observation:
        """The page once the action's navigation has finished, with what a form sent since
        ``submissions`` was counted (the server has answered by the time the page loaded)."""
        assert self.session is not None
        page = browser.observe(self.driver, self.doc)
        self.doc = page.doc
        self._sync()
        sent = submissions is not None and self.session.submissions > submissions
        sub = self.session.last if sent else None
        base = site().base(self.session)
        url = page.url.removeprefix(base) if page.url.startswith(base) else page.url
        data: dict[str, Any] = {
            "url": url,
            "title": page.title,
            "page": page.text,
            "choices": page_choices(page.text),
        }
        if sub is not None:
            data["submitted"] = {"form": sub.tool, "ok": sub.error is None}
        if self.screenshot:
            data["screenshot"] = browser.screenshot(self.driver)
        content = f"URL: {url or '(home)'}\nTitle: {page.title}\n{page.text}"
        hidden = self._guided()
        hint = hidden and next_hint(hidden.gold_plan, bool(hidden.answers), self.taken)
        if hint:
            content += f"\n\n{hint}"
        error = sub.error if sub is not None else None
        return Observation(
            kind="tool_result", content=content, data=data, error=error, done=self.done
        )

    # -- the browser actions -----------------------------------------------------------------

    def _element(self, bid: str, tags: tuple[str, ...] = (), what: str = "") -> WebElement:
        """The shown element ``[bid]`` (one round trip); ``tags`` the kinds it must be."""
        if not BID_PATTERN.match(bid):
            raise ToolFailure("not_found", f"there is no element [{bid[:60]}]", field="bid")
        found = self.driver.execute_script(FIND_JS, bid)
        if not found:
            raise ToolFailure("not_found", f"there is no element [{bid}] on this page", field="bid")
        element, tag = found
        if tags and tag not in tags:
            raise ToolFailure("precondition_failed", f"[{bid}] is not {what}", field="bid")
        return element  # type: ignore[no-any-return]

    def _click(self, bid: str) -> None:
        self._element(bid).click()

    def _fill(self, bid: str, value: str) -> None:
        el = self._element(bid, ("input", "textarea"), "a text field")
        self.driver.execute_script(SET_VALUE_JS, el, value)

    def _select_option(self, bid: str, options: str) -> None:
        el = self._element(bid, ("select",), "a drop-down list")
        shown = self.driver.execute_script(SELECT_JS, el, options)
        if shown is not None:
            why = f"[{bid}] has no option {options[:60]!r}; its options are {shown}"
            raise ToolFailure("not_found", why, field="options")

    def _press(self, bid: str, key_comb: str) -> None:
        from selenium.webdriver.common.keys import Keys

        names = key_names(key_comb)
        if names is None:
            why = f"unknown key in {key_comb!r}; use names such as Enter, Tab, Control+a"
            raise ToolFailure("invalid_arguments", why, field="key_comb")
        keys = [getattr(Keys, n) if len(n) > 1 else n for n in names]
        self._element(bid).send_keys(*keys)  # modifiers are held to the end

    def _scroll(self, delta_x: float, delta_y: float) -> None:
        self.driver.execute_script("window.scrollBy(arguments[0], arguments[1])", delta_x, delta_y)

    def _goto(self, url: str) -> None:
        assert self.session is not None
        base = site().base(self.session)
        parts = urlsplit(url.strip())
        if parts.scheme or parts.netloc:
            target = url.strip()
            if not target.startswith(base):
                why = "only this website's pages can be opened"
                raise ToolFailure("precondition_failed", why, field="url")
        else:
            target = urljoin(base, url.strip().lstrip("/"))
            if not target.startswith(base):
                raise ToolFailure(
                    "precondition_failed", "only this website's pages can be opened", field="url"
                )
        self.driver.get(target)

    def _go_back(self) -> None:
        self.driver.back()

    # -- judging -----------------------------------------------------------------------------

    def changes(self) -> list[RowChange]:
        return self.inner.changes()

    def state_hash(self) -> str:
        return self.inner.state_hash()

    def evaluate(self) -> Verdict:
        """The domain's verdict on the database the site changed."""
        if self.task is None:
            raise EpisodeError("call reset(task) before evaluate()")
        self.inner.status = self.status
        return self.inner.evaluate()

    def page_screenshot(self) -> bytes:
        """The current viewport as PNG bytes."""
        if self.tab is None:
            raise EpisodeError("call reset(task) first")
        with self.tab.use() as driver:
            return driver.get_screenshot_as_png()


def _refused(tool: str, exc: ToolFailure) -> Observation:
    err = ToolError(code=exc.code, message=exc.message, tool=tool, field=exc.field)
    return error_observation(err)


def _as_text(tool: str, arguments: Any) -> Any:
    """A number or yes/no typed into a field or chosen in a list is its text."""
    key = {"fill": "value", "select_option": "options"}.get(tool)
    if key is None or not isinstance(arguments, dict):
        return arguments
    value = arguments.get(key)
    if isinstance(value, bool):
        return {**arguments, key: "true" if value else "false"}
    if isinstance(value, int):
        return {**arguments, key: str(value)}
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return {**arguments, key: repr(value)}
    if key == "options" and isinstance(value, list) and len(value) == 1:
        return {**arguments, key: value[0]}
    return arguments


def _browser_problem(exc: Exception) -> str | None:
    """What an element's refusal means to the agent; None for a browser fault."""
    from selenium.common import exceptions as ex

    if isinstance(exc, ex.ElementClickInterceptedException):
        return "the element is covered by another one (a pop-up?): close that first"
    if isinstance(exc, ex.ElementNotInteractableException | ex.InvalidElementStateException):
        return "the element cannot take this action now"
    if isinstance(exc, ex.StaleElementReferenceException | ex.NoSuchElementException):
        return "the element is gone: the page changed"
    if isinstance(exc, ex.UnexpectedAlertPresentException):
        return "a dialog is open"
    return None


def page_choices(text: str) -> dict[str, list[str]]:
    """The element ids a browser action can name on a page: any for ``bid``; text boxes to
    fill or press keys in, lists to choose from, and the rest to click."""
    found = ELEMENT.findall(text)
    fields = {role for roles in FIELDS.values() for role in roles}
    choices = {"bid": [bid for bid, _ in found]}
    choices["click.bid"] = [bid for bid, role in found if role not in fields]
    for tool, roles in FIELDS.items():
        choices[f"{tool}.bid"] = [bid for bid, role in found if role in roles]
    return choices
