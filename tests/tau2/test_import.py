"""The import: tau2's data, tools, policy and tasks arrive whole, with their ids and split."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envfactory.contract.errors import SynthesisError
from envfactory.episode.runner import run_episode
from envfactory.peers.tau2.data import DATA_ENV, load
from envfactory.peers.tau2.environment import Tau2RetailEnvironment
from envfactory.peers.tau2.peer import export, normalise
from envfactory.peers.tau2.tasks import Imported, reproducible
from envfactory.peers.tau2.tools import ENFORCED_RULES
from envfactory.policies.exploits import ReplayTrain
from envfactory.policies.scripted import Oracle
from envfactory.quality.play import play

# tau2-bench's retail toolkit: tool names and parameters, in order (facts of its API).
TAU2_TOOLS = {
    "calculate": ["expression"],
    "cancel_pending_order": ["order_id", "reason"],
    "exchange_delivered_order_items": ["order_id", "item_ids", "new_item_ids", "payment_method_id"],
    "find_user_id_by_name_zip": ["first_name", "last_name", "zip"],
    "find_user_id_by_email": ["email"],
    "get_order_details": ["order_id"],
    "get_product_details": ["product_id"],
    "get_item_details": ["item_id"],
    "get_user_details": ["user_id"],
    "list_all_product_types": [],
    "modify_pending_order_address": [
        "order_id", "address1", "address2", "city", "state", "country", "zip"
    ],
    "modify_pending_order_items": ["order_id", "item_ids", "new_item_ids", "payment_method_id"],
    "modify_pending_order_payment": ["order_id", "payment_method_id"],
    "modify_user_address": ["user_id", "address1", "address2", "city", "state", "country", "zip"],
    "return_delivered_order_items": ["order_id", "item_ids", "payment_method_id"],
    "think": ["thought"],
    "transfer_to_human_agents": ["summary"],
}  # fmt: skip
ROOT = Path(__file__).resolve().parents[2]
# tau2 ids of the test tasks whose work train material reproduces (docs/tau2.md)
MOVED = ["12", "36", "42", "62", "68", "71", "86", "94", "97"]


def _check_split(env: Tau2RetailEnvironment, split: dict[str, list[str]]) -> None:
    """``env`` serves ``split`` (tau2 ids by split name), in order, and nothing else."""
    assert env.splits == ("train", "test") and env.finite and env.difficulties == [1]
    for name in env.splits:
        tasks = env.tasks(name, 1, n=env.capacity(name, 1) or 0)
        assert [env.tau2_id(t) for t in tasks] == split[name]
        assert [t.task_id for t in tasks] == [f"{env.id}/{name}/1/{i}" for i in range(len(tasks))]
        for t in tasks:
            assert env.locate(env.tau2_id(t)) is t
            assert t.public.split == name
    with pytest.raises(SynthesisError, match="splits"):
        env.task("validation", 1, 0)
    with pytest.raises(SynthesisError):
        env.task("test", 1, len(split["test"]))
    with pytest.raises(SynthesisError, match=r"left out.*nothing to check"):
        env.locate("57")
    with pytest.raises(SynthesisError):
        env.task("train", 2, 0)
    assert env.capacity("validation", 1) == 0


def test_tau2_retail_keeps_tau2s_split(tau2: Tau2RetailEnvironment) -> None:
    """tau2's own split exactly, less the two tasks no check can tell done from doing nothing
    (left out, tests/tau2/test_reward.py): its 40 test tasks, so scores on it compare with
    anyone's on tau2's."""
    listed = {name: [str(i) for i in ids] for name, ids in load().split.items()}
    assert set(tau2.excluded) == {"50", "57"} and set(tau2.excluded) <= set(listed["train"])
    assert tau2.id == "tau2-retail" and tau2.moved_to_train == []
    _check_split(tau2, {n: [i for i in ids if i not in tau2.excluded] for n, ids in listed.items()})
    assert (tau2.capacity("train", 1), tau2.capacity("test", 1)) == (72, 40)
    assert reproducible(tau2.cells["train"], tau2.cells["test"]) == MOVED


def test_the_strict_variant_holds_its_test_split_out(strict: Tau2RetailEnvironment) -> None:
    """``tau2-retail-strict``: tau2's split with the nine test tasks whose work train tasks
    reproduce moved to train (tests/test_splits.py)."""
    listed = {name: [str(i) for i in ids] for name, ids in load().split.items()}
    assert strict.id == "tau2-retail-strict" and set(strict.excluded) == {"50", "57"}
    assert strict.moved_to_train == strict.reproducible_from_train == MOVED
    assert set(MOVED) <= set(listed["test"])
    _check_split(
        strict,
        {
            "train": [i for i in listed["train"] if i not in strict.excluded] + MOVED,
            "test": [i for i in listed["test"] if i not in MOVED],
        },
    )
    assert (strict.capacity("train", 1), strict.capacity("test", 1)) == (81, 31)


def test_no_strict_test_task_is_reproducible_from_train(strict: Tau2RetailEnvironment) -> None:
    """No test task's deciding check is met by train material: its row changes, or (changing
    nothing) the values it must say, or (saying nothing) its gold calls. In tau2's split, test
    tasks 62 and 68 change nothing and ask for values train tasks 63 and 67 say (the train-plan
    replay scores 1.0 on 68), and test task 12 makes the same calls as train task 10."""
    train, test = strict.cells["train"], strict.cells["test"]
    assert reproducible(train, test) == []
    attack = ReplayTrain(strict)
    episode = strict.episode()
    assert [play(strict, m.task, attack, episode) for m in test] == [0.0] * len(test)
    episode.close()


def test_gold_plans_and_answers_are_tau2s(
    tau2: Tau2RetailEnvironment, imported: list[Imported]
) -> None:
    by_id = {str(t["id"]): t for t in load().tasks}
    assert len(imported) + len(tau2.excluded) == len(by_id) == 114
    for m in imported:
        criteria = by_id[m.tau2_id]["evaluation_criteria"]
        plan = m.task.hidden.gold_plan
        assert [(s.tool, s.arguments) for s in plan] == [
            (a["name"], a["arguments"]) for a in criteria["actions"]
        ]
        assert m.task.hidden.answers == criteria["communicate_info"]


def test_records_round_trip_through_the_tables(tau2: Tau2RetailEnvironment) -> None:
    """Every user, product and order of db.json, rebuilt from its rows, is the record."""
    store = tau2.world.new_store()
    assert export(store) == normalise(load().db)
    store.close()
    counts = {t: len(rows) for t, rows in tau2.world.base.rows.items()}
    assert counts["users"] == 500 and counts["products"] == 50 and counts["orders"] == 1000


def test_the_seventeen_tools_have_tau2s_names_and_arguments(tau2: Tau2RetailEnvironment) -> None:
    tools = {t["function"]["name"]: t["function"] for t in tau2.tools("openai")}
    assert {n: list(f["parameters"]["properties"]) for n, f in tools.items()} == TAU2_TOOLS
    for fn in tools.values():
        props = fn["parameters"]["properties"]
        assert fn["parameters"]["required"] == list(props)
        for name, schema in props.items():
            want = "array" if name.endswith("item_ids") else "string"
            assert schema["type"] == want, (fn["name"], name)
    writes = {n for n, t in tau2.world.tools.items() if t.kind == "write"}
    assert writes == {
        n for n in TAU2_TOOLS if n.startswith(("cancel", "exchange", "modify", "return"))
    }


def test_the_policy_is_the_rules_text(tau2: Tau2RetailEnvironment) -> None:
    policy = load().policy
    rules = tau2.task("train", 1, 0).public.rules
    assert " ".join("\n\n".join(rules).split()) == " ".join(policy.split())
    ids = {r.id for r in tau2.spec.rules}
    assert set(ENFORCED_RULES) <= ids


def test_the_user_holds_its_identity_back(
    tau2: Tau2RetailEnvironment, imported: list[Imported]
) -> None:
    held = [m for m in imported if m.task.hidden.profile]
    assert len(held) >= 50  # 60: the tasks whose gold plan looks the user up, one way
    for m in held:
        hidden, public = m.task.hidden, m.task.public
        for value in hidden.profile.values():
            assert value not in public.instruction
        assert hidden.asks and set(hidden.asks[0].facts) <= set(hidden.profile)
    task = held[0].task
    asked = run_episode(tau2, task, Oracle())
    blind = run_episode(tau2, task, Oracle(ask=False))
    assert asked.item("asked_user").score == 1.0 and blind.item("asked_user").score == 0.0
    assert asked.reward == blind.reward == 1.0  # tau2's reward does not count asking


def test_import_runs_in_under_thirty_seconds() -> None:
    """The issue's bound, on a fresh process: read the data, build both worlds, import the 114
    tasks (replaying their gold actions) and make a procedural task."""
    script = (
        "import time; t = time.perf_counter()\n"
        "from envfactory.peers.tau2.environment import Tau2RetailEnvironment, make_procedural\n"
        "Tau2RetailEnvironment(); make_procedural().task('train', 5, 0)\n"
        "print(time.perf_counter() - t)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert float(done.stdout.strip().splitlines()[-1]) < 30.0


def test_without_the_data_the_environments_say_where_they_looked(tmp_path: Path) -> None:
    env = {**os.environ, DATA_ENV: str(tmp_path / "nowhere")}
    script = (
        "import json, envfactory\n"
        "from envfactory.contract.errors import EnvironmentUnavailable\n"
        "out = {'listed': [e for e in envfactory.list_envs() if e.startswith('tau2')]}\n"
        "for env_id in ('tau2-retail', 'tau2-retail-strict', 'tau2-retail-procedural'):\n"
        "    try:\n"
        "        envfactory.make(env_id)\n"
        "    except EnvironmentUnavailable as exc:\n"
        "        out[env_id] = str(exc)\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    out = json.loads(done.stdout)
    assert out["listed"] == []
    for env_id in ("tau2-retail", "tau2-retail-strict", "tau2-retail-procedural"):
        assert DATA_ENV in out[env_id] and "nowhere" in out[env_id]
    cli = subprocess.run(
        [sys.executable, "-m", "envfactory", "check", "tau2-retail", "--json"],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert cli.returncode == 2 and DATA_ENV in cli.stderr
