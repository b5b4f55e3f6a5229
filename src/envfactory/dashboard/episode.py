"""One episode as the viewer shows it: the conversation with each tool call beside its result,
the rubric items behind the reward, and the state as the record has it.

The record holds no row-level diff (the target is hidden and never recorded); what it says
about the state against the target is in the rubric (the ``state``, ``no_collateral`` and
``rules`` items name the rows that are not as required) and in the canonical state hash after
every step, which shows which actions changed the state. The rows themselves are recomputed by
replaying the episode (:mod:`envfactory.dashboard.diff`, a route of its own).
"""

from __future__ import annotations

import json
from typing import Any

from envfactory.trajectory.record import EpisodeRecord

STATE_ITEMS = ("state", "no_collateral", "rules", "answer")


def _text(content: Any) -> str:
    """A message's content as text (content parts are joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                parts.append(str(part.get("text", part.get("content", ""))))
            else:
                parts.append(str(part))
        return "\n".join(parts)
    return json.dumps(content, default=str)


def _pretty(text: str) -> str:
    """JSON text re-spaced on one line (the page wraps it); anything else as it is."""
    try:
        return json.dumps(json.loads(text), ensure_ascii=False)
    except (ValueError, TypeError):
        return text


def conversation(record: EpisodeRecord) -> list[dict[str, Any]]:
    """The transcript: each tool call with its arguments, and each tool result with the name of
    the call it answers."""
    names: dict[str, str] = {}
    out = []
    for i, m in enumerate(record.messages):
        role = str(m.get("role", "?"))
        entry: dict[str, Any] = {"index": i, "role": role, "content": _text(m.get("content"))}
        if m.get("name"):
            entry["name"] = str(m["name"])
        calls = []
        for c in m.get("tool_calls") or []:
            fn = c.get("function") or {}
            args = fn.get("arguments", "")
            args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            call_id = str(c.get("id", ""))
            names[call_id] = str(fn.get("name", "?"))
            calls.append({"id": call_id, "name": names[call_id], "arguments": _pretty(args)})
        if calls:
            entry["tool_calls"] = calls
        if role == "tool":
            call_id = str(m.get("tool_call_id", ""))
            entry["tool_call_id"] = call_id
            entry["tool"] = names.get(call_id, m.get("name"))
            entry["content"] = _pretty(entry["content"])
        out.append(entry)
    return out


def steps(record: EpisodeRecord) -> list[dict[str, Any]]:
    """Each environment step: the action, what came back, the state hash after it and whether
    it changed the state (the first step is compared with nothing)."""
    out = []
    previous: str | None = None
    for i, s in enumerate(record.steps):
        action = s.action
        if action.get("type") == "tool_call":
            args = action.get("arguments", {})
            text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            label = f"{action.get('tool', '?')}({text})"
        else:
            label = f"message: {_text(action.get('content'))}"
        out.append(
            {
                "index": i,
                "actor": s.actor,
                "action": label,
                "kind": s.kind,
                "error": s.error,
                "reward": s.reward,
                "state_hash": s.state_hash,
                "changed": previous is not None and s.state_hash != previous,
            }
        )
        previous = s.state_hash
    return out


def view(record: EpisodeRecord, run: str) -> dict[str, Any]:
    """Everything the episode viewer shows."""
    rubric = [item.model_dump(mode="json") for item in record.rubric]
    return {
        "run": run,
        "episode_id": record.episode_id,
        "meta": {
            "task_id": record.task_id,
            "group_id": record.group_id,
            "env_id": record.env_id,
            "split": record.split,
            "difficulty": record.difficulty,
            "sample_index": record.sample_index,
            "status": record.status,
            "reward": record.reward,
            "advantage": record.advantage,
            "error": record.error,
            "model": record.model.name,
            "provider": record.model.provider,
            "actor": record.actor,
            "wall_s": record.timing.wall_s,
            "policy_s": record.timing.policy_s,
            "env_s": record.timing.env_s,
            "calls": len(record.calls),
        },
        "metrics": record.metrics,
        "rubric": rubric,
        "against_target": [i for i in rubric if i["name"] in STATE_ITEMS],
        "conversation": conversation(record),
        "steps": steps(record),
        "state_hash": record.state_hash,
        "calls": [
            {
                "index": c.index,
                "actor": c.actor,
                "finish_reason": c.finish_reason,
                "prompt_tokens": c.prompt_tokens,
                "completion_tokens": c.completion_tokens,
                "latency_s": c.latency_s,
                "attempts": c.attempts,
                "token_ids": c.output_ids is not None,
            }
            for c in record.calls
        ],
    }
