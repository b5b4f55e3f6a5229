"""Nothing hidden crosses the public boundary: task views, observations, errors."""

from __future__ import annotations

import json
import re

from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.tasks import SPLITS, PublicTask
from envfactory.db.environment import DatabaseEnvironment as Environment

_ID = re.compile(r"^[A-Z]+-\d{5}$")


def _secrets(task_instruction: str, hidden_values: list[object]) -> set[str]:
    out = set()
    for v in hidden_values:
        text = f"{v:.2f}" if isinstance(v, float) else str(v)
        if text and text not in task_instruction:
            out.add(text)
    return out


def test_public_views_and_observations_hold_no_hidden_value(db_env: Environment) -> None:
    ep = db_env.episode()
    checked = 0
    for split in SPLITS:
        for d in db_env.difficulties:
            for i in range(8):
                task = db_env.task(split, d, i)
                hidden = task.hidden
                gold_ids = [
                    v
                    for s in hidden.gold_plan
                    for v in s.arguments.values()
                    if isinstance(v, str) and _ID.match(v)
                ]
                target_ids = [c.id for c in hidden.target]
                secrets = _secrets(task.public.instruction, gold_ids + target_ids + hidden.answers)
                texts = [task.public.model_dump_json()]
                obs = ep.reset(task)
                texts.append(obs.model_dump_json())
                for bad in (
                    ToolCall(tool="no_such_tool", arguments={}),
                    ToolCall(tool=hidden.gold_plan[-1].tool, arguments="{not json"),
                    ToolCall(tool=hidden.gold_plan[-1].tool, arguments={"zzz": 1}),
                    {"type": "launch_missiles"},
                ):
                    texts.append(ep.step(bad).model_dump_json())
                texts.append(ep.step(Message(content="I cannot help.")).model_dump_json())
                blob = "\n".join(texts)
                leaked = [s for s in secrets if s in blob]
                assert not leaked, f"{task.task_id} leaks {leaked}"
                checked += 1
    assert checked == 3 * len(db_env.difficulties) * 8


def test_public_task_type_has_no_hidden_fields() -> None:
    fields = set(PublicTask.model_fields)
    assert not fields & {"gold_plan", "target", "answers", "fingerprint", "goals"}


def test_answers_are_not_in_the_instruction(db_env: Environment) -> None:
    for d in db_env.difficulties:
        for i in range(30):
            task = db_env.task("train", d, i)
            for a in task.hidden.answers:
                text = f"{a:.2f}" if isinstance(a, float) else str(a)
                assert text.lower() not in task.public.instruction.lower()
    json.dumps([db_env.task("test", 1, 0).public.model_dump()])
