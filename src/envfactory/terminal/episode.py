"""The episode of a terminal world: a sandboxed working directory, three tools, and tests."""

from __future__ import annotations

import json
from typing import Protocol

from envfactory.contract.actions import EpisodeStatus, Message, Observation, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.episode import ToolEpisode, error_observation, unknown_tool
from envfactory.contract.errors import EpisodeError
from envfactory.contract.results import ToolError, ToolFailure
from envfactory.contract.tasks import Task
from envfactory.contract.verdict import RubricItem, Verdict, combine
from envfactory.terminal import fs
from envfactory.terminal.checks import rubric
from envfactory.terminal.family import TerminalHidden
from envfactory.terminal.sandbox import (
    Limits,
    RunResult,
    Sandbox,
    SandboxError,
    SandboxUnavailable,
)
from envfactory.terminal.tools import READ_LIMIT, TOOLS
from envfactory.tools.params import validate


class TerminalSetting(Protocol):
    """What a terminal episode reads from its world (a ``TerminalEnvironment``)."""

    id: str
    limits: Limits


NOTHING_TO_ADD = "I have nothing to add. Please go ahead with my request."


class TerminalEpisode(ToolEpisode):
    """One live episode over its own sandboxed working directory."""

    fork_refusal = (
        "its state is a sandboxed directory and the processes run in it, outside Python; "
        "copying them is neither cheap nor exact"
    )

    def __init__(self, env: TerminalSetting, config: EpisodeConfig | None = None) -> None:
        self.env = env
        self.config = config or EpisodeConfig()
        self.sandbox: Sandbox | None = None
        self.task: Task | None = None
        self.steps = 0
        self.done = False
        self.status: EpisodeStatus = "truncated"
        self.fault: str | None = None
        self.over_quota = False
        self.commands = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def reset(self, task: Task) -> Observation:
        """Start ``task`` in a fresh working directory holding its initial files."""
        if task.public.env_id != self.env.id or not isinstance(task.hidden, TerminalHidden):
            raise EpisodeError(f"task {task.task_id} does not belong to {self.env.id}")
        self.close()
        self.task = task
        self.steps = self.commands = 0
        self.done, self.status, self.fault, self.over_quota = False, "truncated", None, False
        try:
            self.sandbox = Sandbox(self.env.limits)
            fs.materialize(fs.tree_of(task.hidden.files), self.sandbox.path, self.sandbox.owner)
        except (SandboxUnavailable, SandboxError, OSError) as exc:
            return self._infra(f"the sandbox could not start: {exc}")
        return Observation(
            kind="task", content=task.public.instruction, data=task.public.model_dump()
        )

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None

    def _infra(self, why: str) -> Observation:
        self.done, self.status, self.fault = True, "infra_error", why
        err = ToolError(code="tool_failed", message=why)
        return Observation(kind="tool_error", content=why, error=err, done=True)

    # -- acting ------------------------------------------------------------------------------

    def _message(self, msg: Message) -> Observation:
        return self._end() if msg.final else Observation(kind="user", content=NOTHING_TO_ADD)

    def _call(self, call: ToolCall) -> Observation:
        assert self.sandbox is not None and self.task is not None
        shown = self.task.public.tools  # the starter level shows only the call it asks for
        spec = TOOLS.get(call.tool) if call.tool in shown else None
        if spec is None:
            return error_observation(unknown_tool(call.tool, shown))
        try:
            args = validate(call.tool, spec[1], call.arguments)
            if call.tool == "run_command":
                return self._run(args["command"])
            if call.tool == "read_file":
                data, size = fs.read_file(self.sandbox.path, args["path"], READ_LIMIT)
                text = data.decode("utf-8", "replace")
                if size > len(data):
                    text += f"\n[... {size - len(data)} more bytes not shown ...]"
                return Observation(kind="tool_result", content=text, data={"size": size})
            wrote = fs.write_file(
                self.sandbox.path, args["path"], args["content"].encode(), self.sandbox.owner
            )
            return self._quota(
                Observation(kind="tool_result", content=f"wrote {wrote}", data={"path": wrote})
            )
        except ToolFailure as exc:
            err = ToolError(code=exc.code, message=exc.message, tool=call.tool, field=exc.field)
            return error_observation(err)
        except (SandboxError, OSError) as exc:
            return self._infra(f"the sandbox failed: {exc}")

    def _run(self, command: str) -> Observation:
        assert self.sandbox is not None
        self.commands += 1
        result = self.sandbox.run(command)
        data = {
            "exit_code": result.exit_code,
            "output": result.output,
            "truncated": result.truncated,
            "limit": result.limit,
        }
        return self._quota(Observation(kind="tool_result", content=_shown(result), data=data))

    def _quota(self, obs: Observation) -> Observation:
        assert self.sandbox is not None
        if self.sandbox.usage() <= self.env.limits.disk_mb << 20:
            return obs
        self.over_quota = True
        self.done, self.status = True, "truncated"
        why = f"the working directory is over its {self.env.limits.disk_mb} MB quota"
        return error_observation(ToolError(code="rule_violation", message=why), done=True)

    # -- judging -----------------------------------------------------------------------------

    def state_hash(self) -> str:
        if self.sandbox is None:
            return ""
        return fs.tree_hash(fs.snapshot(self.sandbox.path))

    def evaluate(self) -> Verdict:
        """Run the completion tests on the files as they are now."""
        early = self._unjudgeable()
        if early is not None:
            return early
        assert self.task is not None and self.sandbox is not None
        hidden = self.task.hidden
        assert isinstance(hidden, TerminalHidden)
        tree = fs.snapshot(self.sandbox.path)
        state = fs.tree_hash(tree)
        cache: dict[str, RunResult] = {}

        def runner(command: str, files: dict[str, str]) -> RunResult:
            key = json.dumps([command, files], sort_keys=True)
            if key not in cache:
                cache[key] = self._check_run(tree, command, files)
            return cache[key]

        # Every score test fails on the initial files (tasks are made so): when nothing
        # changed, the tests that run commands are not run.
        unchanged = state == self.task.initial_hash
        try:
            items = rubric(hidden.tests, tree, None if unchanged else runner)
        except (SandboxUnavailable, SandboxError, OSError) as exc:
            return _fault("infra_error", f"a check sandbox failed: {exc}", state)
        items.append(self._quota_item())
        return Verdict(reward=combine(items), status=self.status, items=items, state_hash=state)

    def _unjudgeable(self) -> Verdict | None:
        """The verdict of an episode with nothing to judge (a fault, no sandbox), else None;
        an episode never reset is the caller's error."""
        if self.task is None:
            raise EpisodeError("call reset(task) before evaluate()")
        if self.fault is not None or self.sandbox is None:
            return _fault(self.status, self.fault or "no sandbox")
        return None

    def _quota_item(self) -> RubricItem:
        """The gate on the working directory's disk quota."""
        return gate("disk_quota", not self.over_quota, "within quota", "over quota")

    def _check_run(self, tree: fs.Tree, command: str, files: dict[str, str]) -> RunResult:
        """``command`` in a fresh sandbox over a copy of ``tree`` with ``files`` laid over."""
        with Sandbox(self.env.limits) as box:
            copy = {**tree, **fs.tree_of([fs.file(p, t) for p, t in files.items()])}
            fs.materialize(copy, box.path, box.owner)
            return box.run(command)


def _shown(r: RunResult) -> str:
    tail = f"[exit code {r.exit_code}]"
    if r.limit == "wall_time":
        tail = "[killed: the command ran past its time limit]"
    elif r.limit == "output":
        tail = "[killed: the command printed too much]"
    return f"{r.output}{'' if not r.output or r.output.endswith(chr(10)) else chr(10)}{tail}"


def gate(name: str, ok: bool, passed: str, failed: str) -> RubricItem:
    """A gate item: score 1 with the ``passed`` reason when ``ok``, else 0 with ``failed``."""
    return RubricItem(
        name=name,
        kind="gate",
        weight=0.0,
        score=1.0 if ok else 0.0,
        reason=passed if ok else failed,
    )


def _fault(status: EpisodeStatus, why: str, state: str = "") -> Verdict:
    status = status if status in ("env_error", "infra_error") else "infra_error"
    item = RubricItem(name="fault", kind="gate", weight=0, score=0, reason=why[:300])
    return Verdict(reward=None, status=status, items=[item], state_hash=state)
