"""The state diff against the target, recomputed for the episode viewer.

A record holds neither the target (it is hidden from agents) nor the rows the episode changed;
the dashboard is the researcher's own tool, so it rebuilds both here: it regenerates the task
from the record's task id, replays the record's tool calls on a fresh episode of it, and matches
the episode's changes to the target with the verifier's own matching
(:func:`envfactory.verify.matching.match_rows`).

The replay is only trusted when it is faithful: after every step its state hash must be the
one the record has, and so must the final one. Messages to the user are not replayed (they
never change the database), nor are tool calls the world's noise faulted (a faulted call does
not run); anything else that makes the replay differ (a world changed since the run, an edited
record) is reported instead of a diff.

Only database worlds (``db``, ``openapi``, ``synth``, imported tau2 worlds: a
:class:`~envfactory.db.environment.DatabaseEnvironment` whose episodes are
:class:`~envfactory.db.episode.DatabaseEpisode`) have a target of rows; for other kinds the
view says why there is no diff.
"""

from __future__ import annotations

import json
from typing import Any

from envfactory.contract.actions import Message, parse_action
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.tasks import Task
from envfactory.db.environment import DatabaseEnvironment
from envfactory.db.episode import DatabaseEpisode
from envfactory.episode.noise import FAULT_CODES
from envfactory.registry import make
from envfactory.rollout.types import TaskRef
from envfactory.trajectory.record import EpisodeRecord
from envfactory.verify.matching import RowMatch, match_rows, same_value
from envfactory.world.state import RowChange

#: Error codes of faults the world's noise injects: such a call did not run, so the replay
#: skips it.
INJECTED = frozenset(FAULT_CODES.values())

#: What the other kinds of world are checked against, instead of rows.
NO_ROWS = {
    "terminal": "a terminal world is checked by commands run in its container, not rows",
    "research": "a research world is checked on the answer, not on a database",
    "repo": "a repository world is checked by its tests, not rows",
    "web": "a web world's state is a browser session over a site, not replayed here",
    "multiagent": "a multi-agent episode is played by several seats; it is not replayed here",
    "campaign": "a campaign is judged request by request: see its requests above",
}


def _short(h: str | None) -> str:
    return (h or "none")[:12]


def _label(action: dict[str, Any]) -> str:
    if action.get("type") == "tool_call":
        args = action.get("arguments", {})
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        return f"{action.get('tool', '?')}({text})"
    return "a message"


def _target_row(m: RowMatch, new_ids: set[str]) -> dict[str, Any]:
    """One required change: made, missing (its row is as the episode started, or no inserted
    row stands for it) or wrong, with its fields: the target's value against the episode's."""
    t, c = m.target, m.change
    op = "insert" if t.before is None else ("delete" if t.after is None else "update")
    actual = c.after if c is not None else (t.before if op != "insert" else None)
    if m.ok:
        status = "made"
    elif c is None:
        status = "missing"
    else:
        status = "wrong"
    fields = []
    if op == "delete":
        if actual is not None:
            fields.append({"field": "(row)", "before": "present", "target": "deleted",
                           "actual": "present", "ok": False})  # fmt: skip
    else:
        want = t.after or {}
        required = sorted(k for k in want if t.before is None or t.before.get(k) != want[k])
        have = actual or {}
        names = required + sorted(
            k for k in have if k not in required and not same_value(want.get(k), have[k])
        )
        for k in names:
            got = actual.get(k) if actual is not None else None
            if m.ok:
                ok: bool | None = True
            elif actual is None:
                ok = False
            elif isinstance(want.get(k), str) and want[k] in new_ids:
                ok = None  # a new row's id: the matching compares it up to renaming
            else:
                ok = same_value(want.get(k), got)
            fields.append({
                "field": k,
                "before": None if t.before is None else t.before.get(k),
                "target": want.get(k),
                "actual": got,
                "ok": ok,
            })  # fmt: skip
    return {
        "table": t.table,
        "id": t.id,
        "row": c.key if c is not None else None,
        "op": op,
        "status": status,
        "fields": fields,
    }


def _collateral(c: RowChange) -> dict[str, Any]:
    before, after = c.before or {}, c.after or {}
    return {
        "table": c.table,
        "id": c.key,
        "op": c.op,
        "fields": [
            {"field": k, "before": before.get(k), "after": after.get(k)} for k in c.changed_fields()
        ],
    }


def _answer(status: str, reason: str | None, **extra: Any) -> dict[str, Any]:
    return {"status": status, "reason": reason, **extra}


def state_diff(record: EpisodeRecord) -> dict[str, Any]:
    """The episode's final state against its task's target, row by row and field by field.

    ``status`` is ``ok`` (``rows``: every required change, ``made``, ``missing`` or ``wrong``;
    ``collateral``: changed rows the target does not name; ``summary``: the counts),
    ``not_replayable`` (the replay's state hash differs from the record's: ``reason`` says
    where), ``not_applicable`` (a world of another kind) or ``unavailable`` (the world or the
    task cannot be made in this process)."""
    if record.actor is not None or record.episode is not None:
        return _answer("not_applicable", NO_ROWS["multiagent"], kind="multiagent")
    try:
        ref = TaskRef.parse(record.task_id)
    except ValueError as exc:
        return _answer("unavailable", f"the task id cannot be read: {exc}")
    try:
        env = make(record.env_id)
    except Exception as exc:  # unknown, unavailable here, or a world that fails to build
        return _answer(
            "unavailable",
            f"the world {record.env_id!r} cannot be made in the dashboard's process "
            f"({type(exc).__name__}: {exc}); register it (e.g. ENVFACTORY_LIBRARY) to see "
            "the diff",
        )
    kind = str(getattr(env, "kind", "?"))
    if not isinstance(env, DatabaseEnvironment):
        why = NO_ROWS.get(kind, f"a world of kind {kind!r} has no target of database rows")
        return _answer("not_applicable", why, kind=kind)
    try:
        task = env.task(ref.split, ref.difficulty, ref.index)
    except Exception as exc:
        return _answer("unavailable", f"task {record.task_id} cannot be made: {exc}", kind=kind)
    if task.task_id != record.task_id:
        return _answer(
            "unavailable", f"the world makes {task.task_id} at {record.task_id}", kind=kind
        )
    episode = env.episode(EpisodeConfig(max_steps=10**9))
    try:
        if not isinstance(episode, DatabaseEpisode):
            return _answer(
                "not_applicable", f"{kind} episodes are not database episodes", kind=kind
            )
        return _replay(record, task, episode, kind)
    finally:
        episode.close()


def _replay(
    record: EpisodeRecord, task: Task, episode: DatabaseEpisode, kind: str
) -> dict[str, Any]:
    """Replay the record's tool calls on ``episode``, checking the state hash after each."""
    target = task.hidden.target
    episode.reset(task)
    replayed = skipped = 0
    for i, s in enumerate(record.steps):
        action = parse_action(s.action)
        if isinstance(action, Message):
            pass  # a message to the user never changes the database
        elif s.error in INJECTED:
            skipped += 1  # faulted by the world's noise: the call did not run
        else:
            episode.step(s.action)
            replayed += 1
        got = episode.state_hash()
        if got != s.state_hash:
            return _answer(
                "not_replayable",
                f"replaying step {i} ({_label(s.action)[:120]}) gives state {_short(got)}; "
                f"the record has {_short(s.state_hash)}, so a diff would not be this "
                "episode's (the world changed since the run, or the record was edited)",
                kind=kind,
                step=i,
            )
    final = episode.state_hash()
    if record.state_hash is not None and final != record.state_hash:
        return _answer(
            "not_replayable",
            f"the replay ends in state {_short(final)}; the record ends in "
            f"{_short(record.state_hash)}",
            kind=kind,
        )
    match = match_rows(target, episode.changes())
    new_ids = {t.id for t in target if t.before is None}
    rows = [_target_row(m, new_ids) for m in match.rows]
    return _answer(
        "ok",
        None,
        kind=kind,
        state_hash=final,
        replayed=replayed,
        skipped_faults=skipped,
        summary={
            "required": len(rows),
            "made": sum(r["status"] == "made" for r in rows),
            "missing": sum(r["status"] == "missing" for r in rows),
            "wrong": sum(r["status"] == "wrong" for r in rows),
            "collateral": len(match.collateral),
        },
        rows=rows,
        collateral=[_collateral(c) for c in match.collateral],
    )
