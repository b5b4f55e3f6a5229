"""The episode of a repository world: the project in a sandbox, four tools, its own tests.

Reset lays the project out by hard links (the source copied, with the task's bugs in it).
The verdict runs the project's pristine tests, in a fresh sandbox, against the agent's
source files only: nothing else the agent wrote (tests, ``conftest.py``, a ``pytest.py``, a
``sitecustomize.py``, configuration) is in the tree the tests run in, and the test driver is
passed inline to an isolated interpreter with the runner first on its path. The source
itself runs inside the tests' process, so the edits are confined
(:mod:`envfactory.repo.confine`): a change outside the bugs' functions, or one that reaches
a name or attribute the pristine function did not, is collateral and earns nothing; and a gate
(:mod:`envfactory.repo.gate`) compares each edited file with the pristine one by syntax tree
and refuses what could reach the runner (a new import, dunder, builtin, attribute or string
outside small safe sets, or any change to a scope that uses ``getattr``, ``sys``, ``type``,
``exec``...).
"""

from __future__ import annotations

import json
from typing import Protocol

from envfactory.contract.actions import Observation, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.episode import error_observation
from envfactory.contract.errors import EpisodeError
from envfactory.contract.results import ToolError, ToolFailure
from envfactory.contract.tasks import Task
from envfactory.contract.verdict import RubricItem, Verdict, combine
from envfactory.repo import projects
from envfactory.repo.confine import collateral
from envfactory.repo.gate import tamper_names
from envfactory.repo.projects import Project
from envfactory.repo.runner import DriverFailed, agent_env, binds, drive, layout, store
from envfactory.repo.tasks import RepoHidden, source_hash
from envfactory.repo.tools import TOOLS
from envfactory.repo.verify import baseline
from envfactory.terminal import fs
from envfactory.terminal.episode import TerminalEpisode, TerminalSetting, _fault, gate
from envfactory.terminal.sandbox import Sandbox, SandboxError, SandboxUnavailable
from envfactory.tools.params import validate


class RepoSetting(TerminalSetting, Protocol):
    """What a repository episode reads from its world (a ``RepoEnvironment``)."""

    run_cache: dict[str, tuple[set[str], str]]

    def project(self, key: str) -> Project: ...


MAX_SOURCE = 4 << 20


class RepoEpisode(TerminalEpisode):
    """One live episode over a project tree with the task's bugs in it."""

    def __init__(self, env: RepoSetting, config: EpisodeConfig | None = None) -> None:
        super().__init__(env, config)
        self.repo = env
        self._verdicts: dict[str, tuple[set[str], int]] = {}

    def reset(self, task: Task) -> Observation:
        hidden = task.hidden
        if task.public.env_id != self.env.id or not isinstance(hidden, RepoHidden):
            raise EpisodeError(f"task {task.task_id} does not belong to {self.env.id}")
        self.close()
        self.task = task
        self.steps = self.commands = 0
        self.done, self.status, self.fault, self.over_quota = False, "truncated", None, False
        try:
            p = self.repo.project(hidden.project)
            s = store(p)
            self.sandbox = Sandbox(self.env.limits, env=agent_env(s))
            layout(s, self.sandbox.path, self._initial(), self.sandbox.owner)
            self.sandbox.binds = tuple(binds(s, self.sandbox.path))
        except (SandboxUnavailable, SandboxError, OSError) as exc:
            return self._infra(f"the sandbox could not start: {exc}")
        return Observation(
            kind="task", content=task.public.instruction, data=task.public.model_dump()
        )

    def _initial(self) -> dict[str, bytes]:
        assert self.task is not None and isinstance(self.task.hidden, RepoHidden)
        hidden = self.task.hidden
        s = store(self.repo.project(hidden.project))
        out: dict[str, bytes] = {}
        for m in sorted(hidden.mutations, key=lambda m: -int(m["start"])):
            data = out.get(m["file"]) or s.read(m["file"])
            out[m["file"]] = data[: m["start"]] + m["new"].encode() + data[m["end"] :]
        return out

    # -- acting ------------------------------------------------------------------------------

    def _call(self, call: ToolCall) -> Observation:
        assert self.sandbox is not None and self.task is not None
        if call.tool != "edit_file" or "edit_file" not in self.task.public.tools:
            return super()._call(call)
        try:
            args = validate(call.tool, TOOLS["edit_file"][1], call.arguments)
            data, size = fs.read_file(self.sandbox.path, args["path"], MAX_SOURCE)
            if size > len(data):
                raise ToolFailure("invalid_arguments", "the file is too large to edit")
            text = data.decode("utf-8", "replace")
            found = text.count(args["old"]) if args["old"] else 0
            if found != 1:
                why = "does not occur" if found == 0 else f"occurs {found} times"
                raise ToolFailure(
                    "invalid_arguments", f"`old` {why} in {args['path']}", field="old"
                )
            new = text.replace(args["old"], args["new"])
            wrote = fs.write_file(self.sandbox.path, args["path"], new.encode(), self.sandbox.owner)
            obs = Observation(kind="tool_result", content=f"edited {wrote}", data={"path": wrote})
            return self._quota(obs)
        except ToolFailure as exc:
            err = ToolError(code=exc.code, message=exc.message, tool=call.tool, field=exc.field)
            return error_observation(err)
        except OSError as exc:
            return self._infra(f"the sandbox failed: {exc}")

    # -- judging -----------------------------------------------------------------------------

    def _sources(self) -> dict[str, bytes]:
        assert self.sandbox is not None and self.task is not None
        assert isinstance(self.task.hidden, RepoHidden)
        s = store(self.repo.project(self.task.hidden.project))
        out = {}
        for rel in s.sources:
            try:
                data, size = fs.read_file(self.sandbox.path, rel, MAX_SOURCE)
                out[rel] = data if size <= len(data) else b""
            except ToolFailure:
                out[rel] = b""  # missing, a link or not a file: it cannot be imported
        return out

    def state_hash(self) -> str:
        if self.sandbox is None or self.task is None:
            return ""
        assert isinstance(self.task.hidden, RepoHidden)
        return source_hash(self.repo.project(self.task.hidden.project), self._sources())

    def evaluate(self) -> Verdict:
        """Run the pristine tests against the agent's source files as they are now."""
        early = self._unjudgeable()
        if early is not None:
            return early
        assert self.task is not None and self.sandbox is not None
        hidden = self.task.hidden
        assert isinstance(hidden, RepoHidden)
        p = self.repo.project(hidden.project)
        s = store(p)
        current = self._sources()
        state = source_hash(p, current)
        changed = {rel for rel, data in current.items() if data != s.read(rel)}
        reached: set[str] = set()
        outside: set[str] = set()
        for rel in changed:
            functions = {b.qualname for b in hidden.bugs if b.file == rel}
            reached.update(tamper_names(s.read(rel), current[rel]))
            outside.update(collateral(s.read(rel), current[rel], functions))
        tampered = sorted(reached)
        failing_all = {t for b in hidden.bugs for t in b.failing}
        if not changed:
            not_passed, why = set(), "the source is the project's own"
        elif state == self.task.initial_hash:
            not_passed, why = set(failing_all), "the source is as the task started"
        else:
            try:
                not_passed, why = self._test_run(p, current, changed, failing_all)
            except (SandboxUnavailable, SandboxError, OSError) as exc:
                return _fault("infra_error", f"a check sandbox failed: {exc}", state)
        items = []
        for i, b in enumerate(hidden.bugs):
            still = sorted(set(b.failing) & not_passed)
            n = len(b.failing)
            items.append(
                RubricItem(
                    name=f"bug_{i + 1}_fixed",
                    kind="score",
                    weight=1.0,
                    score=0.0 if still else 1.0,
                    reason=f"{len(still)} of its {n} failing test(s) still fail"
                    if still
                    else f"its {n} failing test(s) pass",
                )
            )
        broken = sorted(not_passed - failing_all)
        items += [
            gate(
                "suite_passes",
                not broken,
                f"no previously passing test fails ({why})",
                f"{len(broken)} previously passing test(s) fail ({why})",
            ),
            gate(
                "edits_confined",
                not outside,
                "every edit lies inside a bug's function and reaches nothing new",
                f"collateral edits: {'; '.join(sorted(outside)[:3])}",
            ),
            gate(
                "runner_untouched",
                not tampered,
                "the source reaches for nothing of the test runner's",
                f"the source newly uses {', '.join(tampered[:5])}",
            ),
            self._quota_item(),
        ]
        return Verdict(reward=combine(items), status=self.status, items=items, state_hash=state)

    def _test_run(
        self, p: projects.Project, current: dict[str, bytes], changed: set[str], failing: set[str]
    ) -> tuple[set[str], str]:
        """The tests (of the test modules that run a changed file, and the task's failing
        ones) that do not pass; cached per source state."""
        state = source_hash(p, current)
        cached = self.repo.run_cache.get(state)
        base = baseline(p)
        modules = set(base.modules_touching(changed)) | {t.split("::", 1)[0] for t in failing}
        select = [t for t in base.tests if t.split("::", 1)[0] in modules]
        if cached is None:
            spec = {"mode": "run", "select": select, "files_to_collect": sorted(modules)}
            try:
                line, _ = drive(store(p), {r: current[r] for r in changed}, spec)
                doc = json.loads(line)
                bad = set(doc["not_passed"])
                if int(doc["failed"]) > len(bad):  # the list was cut: count every test failed
                    bad = set(select)
                cached = (bad, "tests run")
            except DriverFailed as exc:
                cached = (set(select), f"the tests gave no result: {exc.limit or 'crashed'}")
            except (ValueError, KeyError):
                cached = (set(select), "the tests gave no readable result")
            self.repo.run_cache[state] = cached
        return cached
