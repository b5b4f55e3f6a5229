"""A Python client for an envfactory server, sync and async, shaped like the in-process API.

    env = connect("http://127.0.0.1:8000", "retail")      # like envfactory.make("retail")
    episode = env.episode()
    obs = episode.reset(env.task("train", 1, 0))           # a PublicTask, or a task id
    obs = episode.step(ToolCall(tool="get_order", arguments={"order_id": "ORD-00001"}))
    verdict = episode.evaluate()
    episode.close()

``AsyncRemoteEnvironment`` / ``AsyncRemoteEpisode`` are the same with ``await``. Server errors
come back as the serving error types (``SessionExpired``, ``EpisodeFinished``, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

import httpx
from pydantic import BaseModel

from envfactory.contract.actions import EpisodeStatus, Message, Observation, ToolCall
from envfactory.contract.environment import EnvInfo
from envfactory.contract.tasks import PublicTask, Task
from envfactory.contract.verdict import Verdict
from envfactory.serving import errors
from envfactory.serving.models import Forked, Opened, SessionState, StepOut

T = TypeVar("T")
TaskLike = PublicTask | Task | str
Fmt = Literal["openai", "mcp"]

_ERRORS: dict[str, type[errors.ServingError]] = {
    cls.code: cls
    for cls in (
        errors.BadRequest,
        errors.Unauthorized,
        errors.NotFound,
        errors.SessionUnknown,
        errors.SessionExpired,
        errors.Conflict,
        errors.EpisodeFinished,
        errors.CapacityReached,
        errors.NotForkable,
    )
}


@dataclass(frozen=True)
class _Req(Generic[T]):
    """One call: what to send, and how to read the answer."""

    method: str
    path: str
    parse: Callable[[Any], T]
    json: Any = None


def _raise_for(response: httpx.Response) -> None:
    if response.is_success:
        return
    try:
        body = response.json()
        detail, code = str(body.get("detail")), str(body.get("error", ""))
    except (ValueError, AttributeError):
        detail, code = response.text[:500], ""
    cls = _ERRORS.get(code, errors.ServingError)
    exc = cls(f"{response.status_code}: {detail}")
    exc.status = response.status_code
    raise exc


def _headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _action(action: Any) -> Any:
    return action.model_dump() if isinstance(action, BaseModel) else action


def _open_body(task: TaskLike) -> dict[str, Any]:
    if isinstance(task, Task):
        task = task.public
    return {"task_id": task.task_id if isinstance(task, PublicTask) else task}


class _Calls:
    """The requests of the client API, shared by the sync and async clients."""

    def __init__(self, env_id: str) -> None:
        self.env_id = env_id
        self.base = f"/envfactory/envs/{env_id}"

    def info(self) -> _Req[EnvInfo]:
        return _Req("GET", self.base, EnvInfo.model_validate)

    def tools(self, fmt: Fmt) -> _Req[list[dict[str, Any]]]:
        return _Req("GET", f"{self.base}/tools?format={fmt}", list)

    def task(self, split: str, difficulty: int, index: int) -> _Req[PublicTask]:
        path = f"{self.base}/tasks/{split}/{difficulty}/{index}"
        return _Req("GET", path, PublicTask.model_validate)

    @staticmethod
    def open(task: TaskLike) -> _Req[Opened]:
        return _Req("POST", "/envfactory/sessions", Opened.model_validate, _open_body(task))

    @staticmethod
    def step(sid: str, action: Any) -> _Req[StepOut]:
        path = f"/envfactory/sessions/{sid}/step"
        return _Req("POST", path, StepOut.model_validate, _action(action))

    @staticmethod
    def fork(sid: str) -> _Req[Forked]:
        return _Req("POST", f"/envfactory/sessions/{sid}/fork", Forked.model_validate)

    @staticmethod
    def verdict(sid: str) -> _Req[Verdict]:
        return _Req("GET", f"/envfactory/sessions/{sid}/verdict", Verdict.model_validate)

    @staticmethod
    def state(sid: str) -> _Req[SessionState]:
        return _Req("GET", f"/envfactory/sessions/{sid}", SessionState.model_validate)

    @staticmethod
    def close(sid: str) -> _Req[Any]:
        return _Req("DELETE", f"/envfactory/sessions/{sid}", dict)


@dataclass
class _EpisodeView:
    """What an episode handle remembers between calls (mirrors ``Episode``'s attributes)."""

    task: PublicTask | None = None
    session_id: str | None = None
    done: bool = False
    status: EpisodeStatus = "truncated"
    steps: int = 0
    last: StepOut | None = field(default=None, repr=False)

    def opened(self, o: Opened) -> Observation:
        self.task, self.session_id = o.task, o.session_id
        self.done, self.status, self.steps, self.last = False, "truncated", 0, None
        return o.observation

    def stepped(self, out: StepOut) -> Observation:
        self.steps += 1
        self.done, self.last = out.finished, out
        if out.status is not None:
            self.status = out.status
        return out.observation

    def forked(self, f: Forked, status: EpisodeStatus) -> _EpisodeView:
        """The view of a fork of this episode (the parent's status: the fork starts equal)."""
        return _EpisodeView(f.task, f.session_id, f.finished, status, f.steps)

    def sid(self) -> str:
        if self.session_id is None:
            raise errors.BadRequest("call reset(task) before using the episode")
        return self.session_id


# -- sync ---------------------------------------------------------------------------------------


class _EpisodeAttrs:
    """``task``, ``session_id``, ``done``, ``status``, ``steps``, as on an in-process episode."""

    view: _EpisodeView

    @property
    def task(self) -> PublicTask | None:
        return self.view.task

    @property
    def session_id(self) -> str | None:
        return self.view.session_id

    @property
    def done(self) -> bool:
        return self.view.done

    @property
    def status(self) -> EpisodeStatus:
        return self.view.status

    @property
    def steps(self) -> int:
        return self.view.steps


class RemoteEpisode(_EpisodeAttrs):
    """An episode on a server: ``reset``, ``step``, ``evaluate``, ``state_hash``, ``close``."""

    def __init__(self, env: RemoteEnvironment) -> None:
        self.env = env
        self.view = _EpisodeView()

    def reset(self, task: TaskLike) -> Observation:
        if self.view.session_id is not None:
            self.close()
        return self.view.opened(self.env.call(_Calls.open(task)))

    def step(self, action: ToolCall | Message | dict[str, Any]) -> Observation:
        return self.view.stepped(self.env.call(_Calls.step(self.view.sid(), action)))

    def fork(self) -> RemoteEpisode:
        """A new session holding an independent copy of this one (``NotForkable`` for a kind
        of world that cannot fork); close it like any episode."""
        child = RemoteEpisode(self.env)
        child.view = self.view.forked(self.env.call(_Calls.fork(self.view.sid())), self.status)
        return child

    def evaluate(self) -> Verdict:
        """Reward, status and state hash once finished, no rubric (``Conflict`` before)."""
        return self.env.call(_Calls.verdict(self.view.sid()))

    def state_hash(self) -> str:
        return self.env.call(_Calls.state(self.view.sid())).state_hash

    def close(self) -> None:
        if self.view.session_id is not None:
            self.env.call(_Calls.close(self.view.session_id))
            self.view.session_id = None

    def __enter__(self) -> RemoteEpisode:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class RemoteEnvironment:
    """An environment on a server, read like ``envfactory.make(env_id)``."""

    def __init__(
        self,
        base_url: str,
        env_id: str,
        token: str | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        self.id = env_id
        self.calls = _Calls(env_id)
        self.http = http or httpx.Client(base_url=base_url, headers=_headers(token), timeout=60)

    def call(self, req: _Req[T]) -> T:
        response = self.http.request(req.method, req.path, json=req.json)
        _raise_for(response)
        return req.parse(response.json())

    def info(self) -> EnvInfo:
        return self.call(self.calls.info())

    def tools(self, fmt: Fmt = "openai") -> list[dict[str, Any]]:
        return self.call(self.calls.tools(fmt))

    def task(self, split: str = "train", difficulty: int = 1, index: int = 0) -> PublicTask:
        return self.call(self.calls.task(split, difficulty, index))

    def episode(self) -> RemoteEpisode:
        return RemoteEpisode(self)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> RemoteEnvironment:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def connect(base_url: str, env_id: str, token: str | None = None) -> RemoteEnvironment:
    """The environment ``env_id`` of the server at ``base_url``."""
    return RemoteEnvironment(base_url, env_id, token)


# -- async --------------------------------------------------------------------------------------


class AsyncRemoteEpisode(_EpisodeAttrs):
    """:class:`RemoteEpisode` with ``await``."""

    def __init__(self, env: AsyncRemoteEnvironment) -> None:
        self.env = env
        self.view = _EpisodeView()

    async def reset(self, task: TaskLike) -> Observation:
        if self.view.session_id is not None:
            await self.close()
        return self.view.opened(await self.env.call(_Calls.open(task)))

    async def step(self, action: ToolCall | Message | dict[str, Any]) -> Observation:
        return self.view.stepped(await self.env.call(_Calls.step(self.view.sid(), action)))

    async def fork(self) -> AsyncRemoteEpisode:
        """:meth:`RemoteEpisode.fork` with ``await``."""
        child = AsyncRemoteEpisode(self.env)
        forked = await self.env.call(_Calls.fork(self.view.sid()))
        child.view = self.view.forked(forked, self.status)
        return child

    async def evaluate(self) -> Verdict:
        """Reward, status and state hash once finished, no rubric (``Conflict`` before)."""
        return await self.env.call(_Calls.verdict(self.view.sid()))

    async def state_hash(self) -> str:
        return (await self.env.call(_Calls.state(self.view.sid()))).state_hash

    async def close(self) -> None:
        if self.view.session_id is not None:
            await self.env.call(_Calls.close(self.view.session_id))
            self.view.session_id = None

    async def __aenter__(self) -> AsyncRemoteEpisode:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()


class AsyncRemoteEnvironment:
    """:class:`RemoteEnvironment` with ``await``."""

    def __init__(
        self,
        base_url: str,
        env_id: str,
        token: str | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.id = env_id
        self.calls = _Calls(env_id)
        self.http = http or httpx.AsyncClient(
            base_url=base_url, headers=_headers(token), timeout=60
        )

    async def call(self, req: _Req[T]) -> T:
        response = await self.http.request(req.method, req.path, json=req.json)
        _raise_for(response)
        return req.parse(response.json())

    async def info(self) -> EnvInfo:
        return await self.call(self.calls.info())

    async def tools(self, fmt: Fmt = "openai") -> list[dict[str, Any]]:
        return await self.call(self.calls.tools(fmt))

    async def task(self, split: str = "train", difficulty: int = 1, index: int = 0) -> PublicTask:
        return await self.call(self.calls.task(split, difficulty, index))

    def episode(self) -> AsyncRemoteEpisode:
        return AsyncRemoteEpisode(self)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncRemoteEnvironment:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()
