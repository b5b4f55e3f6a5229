"""The one engine behind every protocol: environments, task addresses, sessions, and acting.

Protocols translate their messages into :meth:`Engine.open`, :meth:`Engine.act` and
:meth:`Engine.evaluate`; nothing else touches an episode. Two actions that are not world tools
are exposed as tools wherever a protocol only speaks tools: ``message_user`` (a message that
does not end the episode, e.g. a question) and ``finish`` (the final reply, which ends it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio.to_thread

from envfactory.contract.actions import Observation
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import Environment
from envfactory.contract.errors import ForkUnsupported, UnknownEnvironment
from envfactory.contract.tasks import PublicTask
from envfactory.contract.verdict import Verdict
from envfactory.gc_tuning import CollectAfter
from envfactory.registry import list_envs, make
from envfactory.serving.catalog import TaskCatalog, TaskRef
from envfactory.serving.config import ServeConfig
from envfactory.serving.errors import Conflict, EpisodeFinished, NotForkable, NotFound
from envfactory.serving.sessions import Session, SessionStore

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one action did: the observation, the reward, and whether the episode is over."""

    observation: Observation
    reward: float | None
    finished: bool
    verdict: Verdict | None


@dataclass(frozen=True, slots=True)
class Reserved:
    """The names of the two non-world actions in one environment (renamed on a clash)."""

    finish: str
    message: str

    @staticmethod
    def for_tools(world_tools: set[str]) -> Reserved:
        def free(name: str) -> str:
            return name if name not in world_tools else f"envfactory_{name}"

        return Reserved(finish=free("finish"), message=free("message_user"))

    def specs(self) -> list[dict[str, Any]]:
        """MCP-shaped schemas of ``message_user`` and ``finish``."""
        return [
            _spec(
                self.message,
                "Send a message to the user without ending the conversation, for instance to "
                "ask for information only they have. Their answer comes back.",
                "content",
                "What to say to the user.",
            ),
            _spec(
                self.finish,
                "End the conversation with your final reply to the user, including any answer "
                "they asked for. No further actions are possible afterwards.",
                "message",
                "Your final reply to the user.",
            ),
        ]


def _spec(name: str, description: str, arg: str, arg_doc: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {arg: {"type": "string", "description": arg_doc}},
            "required": [arg],
            "additionalProperties": False,
        },
    }


def render_prompt(task: PublicTask) -> tuple[str, str]:
    """The system text (persona and policy) and the user's request."""
    rules = "\n".join(f"- {r}" for r in task.rules)
    system = f"{task.persona}\n\nPolicy:\n{rules}" if rules else task.persona
    return system, task.instruction


class Engine:
    """Environments by id, their task catalogs, the session store, and the acting loop."""

    def __init__(self, config: ServeConfig, envs: Mapping[str, Environment] | None = None) -> None:
        self.config = config
        if envs is None:
            envs = {e: make(e) for e in (config.envs or tuple(list_envs()))}
        if not envs:
            raise ValueError("a server needs at least one environment")
        self.envs: dict[str, Environment] = dict(envs)
        self.catalogs = {k: TaskCatalog(e, config.task_block) for k, e in self.envs.items()}
        self.reserved = {
            k: Reserved.for_tools({t["name"] for t in e.tools("mcp")}) for k, e in self.envs.items()
        }
        self.store = SessionStore(config.max_sessions, config.idle_timeout)
        self.episode_config = EpisodeConfig(max_steps=config.max_steps)

    # -- environments ------------------------------------------------------------------------

    @property
    def default_env(self) -> str:
        return next(iter(self.envs))

    def env(self, env_id: str) -> Environment:
        env = self.envs.get(env_id) or self.envs.get(env_id.lower())
        if env is None:
            raise NotFound(
                str(
                    UnknownEnvironment(
                        f"no environment {env_id[:80]!r}; this server hosts: {', '.join(self.envs)}"
                    )
                )
            )
        return env

    def catalog(self, env_id: str) -> TaskCatalog:
        return self.catalogs[self.env(env_id).id]

    def tool_specs(self, env_id: str, names: list[str] | None = None) -> list[dict[str, Any]]:
        """MCP-shaped schemas of the world's tools (``names`` only, when given)."""
        tools = self.env(env_id).tools("mcp")
        if names is not None:
            allowed = set(names)
            tools = [t for t in tools if t["name"] in allowed]
        return tools

    def action(self, env_id: str, name: str, arguments: Any) -> dict[str, Any]:
        """The engine action for a protocol's tool call named ``name``."""
        reserved = self.reserved[self.env(env_id).id]
        args = arguments if isinstance(arguments, dict) else {}
        if name == reserved.finish:
            return {"type": "message", "content": args.get("message"), "final": True}
        if name == reserved.message:
            return {"type": "message", "content": args.get("content"), "final": False}
        return {"type": "tool_call", "tool": name, "arguments": arguments}

    # -- sessions ----------------------------------------------------------------------------

    async def _run(self, session_env: Environment, fn: Callable[..., T], *args: Any) -> T:
        if not session_env.blocking or session_env.kind in self.config.inline_kinds:
            return fn(*args)
        return await anyio.to_thread.run_sync(fn, *args)

    async def open(
        self, ref: TaskRef, protocol: str, sid: str | None = None
    ) -> tuple[Session, Observation]:
        """Start a new episode of ``ref`` in a new session."""
        sid = sid or self.store.new_id()
        if sid in self.store:
            raise Conflict(f"session {sid[:64]!r} already exists")
        self.store.check_room()
        env = self.env(ref.env_id)
        task = self.catalog(ref.env_id).task(ref)
        episode = env.episode(self.episode_config)
        try:
            obs = await self._run(env, episode.reset, task)
        except BaseException:
            episode.close()
            raise
        session = Session(id=sid, env=env, episode=episode, task=task, protocol=protocol)
        try:
            self.store.add(session)
        except BaseException:
            episode.close()
            raise
        return session, obs

    async def fork(self, session: Session, protocol: str) -> Session:
        """A new session holding an independent copy of ``session``'s live episode (its final
        verdict too, once it has finished)."""
        self.store.check_room()
        async with session.lock:
            try:
                episode = await self._run(session.env, session.episode.fork)
            except ForkUnsupported as exc:
                raise NotForkable(str(exc)) from None
        child = Session(
            id=self.store.new_id(),
            env=session.env,
            episode=episode,
            task=session.task,
            protocol=protocol,
            verdict=session.verdict,
        )
        try:
            return self.store.add(child)
        except BaseException:
            episode.close()
            raise

    async def act(self, session: Session, action: Any) -> Outcome:
        """Apply one action; when the episode ends, judge it and keep the verdict."""
        async with session.lock:
            if session.verdict is not None:
                raise EpisodeFinished(
                    f"the episode of session {session.id[:64]!r} has finished "
                    f"(reward {session.verdict.reward}); no further actions are accepted"
                )
            obs = await self._run(session.env, session.episode.step, action)
            if not obs.done:
                return Outcome(obs, obs.reward, False, None)
            verdict = await self._run(session.env, session.episode.evaluate)
            session.verdict = verdict
            return Outcome(obs, verdict.reward, True, verdict)

    async def evaluate(self, session: Session) -> Verdict:
        """The full verdict, final once the episode has finished, provisional before: for the
        trainer only (see :meth:`agent_verdict` for what an agent's session sees)."""
        if session.verdict is not None:
            return session.verdict
        async with session.lock:
            return await self._run(session.env, session.episode.evaluate)

    def agent_verdict(self, session: Session) -> Verdict:
        """What an agent's session may see of its verdict: once the episode has finished, the
        reward, status and state hash, and no rubric (its reasons name the target's rows, which
        would solve the same task when it is opened again). Before the end nothing: 409."""
        final = session.verdict
        if final is None:
            raise Conflict(
                f"the episode of session {session.id[:64]!r} is still running: its verdict is "
                "given once it has finished"
            )
        return final.model_copy(update={"items": []})

    def close(self, sid: str) -> bool:
        return self.store.pop(sid) is not None

    async def reap_forever(self) -> None:
        """Expire idle sessions every ``reap_interval`` seconds, and collect the garbage of
        closed ones when enough have closed."""
        collector = CollectAfter(self.config.collect_after_closed if self.config.gc_tuning else 0)
        while True:
            await asyncio.sleep(self.config.reap_interval)
            self.store.expire_idle()
            collector.maybe_collect(self.store.closed_total)
