"""tau2's reward, reproduced: the gold replay scores 1 on every task, mutated gold plans score
0 under the database check (as tau2's own approach scores them), and the communicate and action
checks hold."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.verdict import Verdict
from envfactory.episode.runner import run_episode
from envfactory.peers.tau2.data import load
from envfactory.peers.tau2.environment import Tau2RetailEnvironment
from envfactory.peers.tau2.peer import PeerRetail
from envfactory.peers.tau2.tasks import Imported
from envfactory.peers.tau2.tools import WRITES
from envfactory.policies.scripted import NoOp, Oracle, answer_text
from envfactory.verify.answers import kind_of

Actions = list[dict[str, Any]]


def replay(
    env: Tau2RetailEnvironment,
    m: Imported,
    actions: Actions,
    say: bool = True,
    extra: Sequence[str] = (),
) -> Verdict:
    """Play ``actions`` through the public episode API, then say the answers (and ``extra``
    values beside them)."""
    ep = env.episode()
    ep.reset(m.task)
    for a in actions:
        ep.step(ToolCall(tool=a["name"], arguments=a["arguments"]))
    ep.step(Message(content=answer_text([*m.communicate, *extra]) if say else "Done."))
    verdict = ep.evaluate()
    ep.close()
    return verdict


def test_gold_replay_scores_one_on_every_task(
    tau2: Tau2RetailEnvironment, imported: list[Imported]
) -> None:
    for m in imported:
        verdict = replay(tau2, m, list(m.actions))
        assert verdict.reward == 1.0, (m.tau2_id, verdict.items)
        assert verdict.item("tau2_db").score == verdict.item("tau2_communicate").score == 1.0
        oracle = run_episode(tau2, m.task, Oracle())  # asks the user, then the same calls
        assert oracle.reward == 1.0 and oracle.state_hash == m.gold_hash


def _order(db: dict[str, Any], order_id: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = db["orders"].get(order_id)
    return found


def effective_writes(env: Tau2RetailEnvironment, m: Imported) -> list[int]:
    """The gold writes that change the state when they run (some of tau2's gold writes set
    what is already there: leaving those out is no mistake)."""
    store = env.world.new_store()
    out = []
    for i, a in enumerate(m.actions):
        before = store.state_hash()
        env.world.tools[a["name"]](store, a["arguments"])
        if a["name"] in WRITES and store.state_hash() != before:
            out.append(i)
    store.close()
    return out


def mutations(db: dict[str, Any], m: Imported, writes: list[int]) -> Iterator[tuple[str, Actions]]:
    """Wrong item, wrong payment method, missing step and extra write, for each gold write."""
    actions = [dict(a, arguments=dict(a["arguments"])) for a in m.actions]
    for i in writes:
        args = actions[i]["arguments"]
        order = _order(db, args.get("order_id", ""))
        if not _superseded(actions, i):
            yield "missing step", actions[:i] + actions[i + 1 :]
        if order is not None and "payment_method_id" in args:
            methods = sorted(db["users"][order["user_id"]]["payment_methods"])
            other = [p for p in methods if p != args["payment_method_id"]]
            if other:
                yield "wrong payment", _with(actions, i, payment_method_id=other[0])
        if order is not None and args.get("new_item_ids"):
            old = args["item_ids"][0]
            product = next(it["product_id"] for it in order["items"] if it["item_id"] == old)
            variants = db["products"][product]["variants"].values()
            other = sorted(
                v["item_id"]
                for v in variants
                if v["available"] and v["item_id"] not in (old, args["new_item_ids"][0])
            )
            if other:
                yield (
                    "wrong item",
                    _with(actions, i, new_item_ids=[other[0], *args["new_item_ids"][1:]]),
                )
        elif order is not None and args.get("item_ids"):
            other = sorted({it["item_id"] for it in order["items"]} - set(args["item_ids"]))
            if other:
                yield "wrong item", _with(actions, i, item_ids=[other[0], *args["item_ids"][1:]])
    if writes:
        user = _order(db, actions[writes[0]]["arguments"].get("order_id", ""))
        user_id = user["user_id"] if user else actions[writes[0]]["arguments"].get("user_id")
        extra = {
            "name": "modify_user_address",
            "arguments": {
                "user_id": user_id,
                "address1": "1 Mutation Road",
                "address2": "",
                "city": "Nowhere",
                "state": "NV",
                "country": "USA",
                "zip": "89001",
            },
        }
        yield "extra write", [*actions, extra]


def _target(action: dict[str, Any]) -> tuple[str, Any]:
    args = action["arguments"]
    return action["name"], args.get("order_id", args.get("user_id"))


def _superseded(actions: Actions, i: int) -> bool:
    """A later gold write redoes this one (tau2's task 22 moves a user and moves them back):
    leaving it out changes nothing, so it is no mistake."""
    return any(_target(a) == _target(actions[i]) for a in actions[i + 1 :])


def _with(actions: Actions, i: int, **changes: Any) -> Actions:
    out = list(actions)
    out[i] = dict(out[i], arguments={**out[i]["arguments"], **changes})
    return out


def test_mutated_gold_plans_score_zero(
    tau2: Tau2RetailEnvironment, imported: list[Imported]
) -> None:
    db = load().db
    peer = PeerRetail(db)
    kinds: dict[str, int] = {}
    n = 0
    for m in imported:
        for kind, actions in mutations(db, m, effective_writes(tau2, m)):
            verdict = replay(tau2, m, actions)
            assert verdict.item("tau2_db").score == 0.0, (m.tau2_id, kind)
            assert verdict.reward == 0.0, (m.tau2_id, kind)
            if n % 20 == 0:  # tau2's approach (deep copy, replay, whole-database hash) agrees
                peer.reset()
                for a in actions:
                    peer.step(a["name"], a["arguments"])
                assert peer.reward(list(m.actions)) == 0.0, (m.tau2_id, kind)
            kinds[kind] = kinds.get(kind, 0) + 1
            n += 1
    assert n >= 200, kinds
    assert set(kinds) == {"missing step", "wrong payment", "wrong item", "extra write"}


def test_the_answers_must_be_said(tau2: Tau2RetailEnvironment, imported: list[Imported]) -> None:
    asked = [m for m in imported if m.communicate]
    assert len(asked) >= 30
    for m in asked:
        silent = replay(tau2, m, list(m.actions), say=False)
        assert silent.item("tau2_db").score == 1.0
        assert silent.item("tau2_communicate").score == 0.0 and silent.reward == 0.0
    m = next(m for m in asked if any("." in c for c in m.communicate))
    ep = tau2.episode()
    ep.reset(m.task)
    for a in m.actions:
        ep.step(ToolCall(tool=a["name"], arguments=a["arguments"]))
    # Said earlier in the conversation, with thousands separators: tau2 drops the commas.
    spaced = " and ".join(f"{float(c):,.2f}" if _number(c) else c for c in m.communicate)
    ep.step(Message(content=f"Here you are: {spaced}.", final=False))
    ep.step(Message(content="Anything else?"))
    assert ep.evaluate().reward == 1.0


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return "." in text


def blind(env: Tau2RetailEnvironment, m: Imported) -> Verdict:
    """An agent that knows nothing of the task: every tool once with no arguments, then a
    report. tau2's action check counts such a call as any gold call of its tool (it compares
    the arguments the call has), which paid 1.0 on tau2's tasks 10, 12, 25, 65 and 105."""
    ep = env.episode()
    ep.reset(m.task)
    for tool in env.world.tools:
        ep.step(ToolCall(tool=tool, arguments={}))
    ep.step(Message(content="Done."))
    verdict = ep.evaluate()
    ep.close()
    return verdict


def test_no_served_task_pays_doing_nothing(
    tau2: Tau2RetailEnvironment, imported: list[Imported]
) -> None:
    """Doing nothing, or calling every tool blind, scores 0 on every task served; the gold
    plan scores 1 (test_gold_replay_scores_one_on_every_task). tau2's tasks 57 (no gold
    action) and 50 (a transfer, whose summary is not compared) have nothing their checks can
    tell from that, so they are left out, with the reason."""
    assert len(imported) == 112
    for m in imported:
        assert m.unchecked is None
        assert run_episode(tau2, m.task, NoOp()).reward == 0.0, m.tau2_id
        assert blind(tau2, m).reward == 0.0, m.tau2_id
    assert set(tau2.excluded) == {"50", "57"}
    assert "nothing to check" in tau2.excluded["57"]
    assert "compare no argument" in tau2.excluded["50"]
    idle = [m for m in imported if m.passes_idle]
    assert {m.tau2_id for m in idle} == {"10", "12", "25", "65", "105"}
    for m in idle:  # where only the action check tells: the gold actions pass it
        verdict = replay(tau2, m, list(m.actions))
        assert verdict.item("tau2_action").score == 1.0 and verdict.reward == 1.0


def decoy(answer: str, words: list[str]) -> str | None:
    """A wrong value of ``answer``'s kind: the number plus one, the code with a digit changed,
    another word the world holds of the same kind (None when it holds none)."""
    kind = kind_of(answer)
    if kind == "fraction":
        return f"{float(answer) + 1:.2f}"
    if kind == "number":
        return str(int(float(answer)) + 1)
    if kind == "code":
        at = next(i for i, c in enumerate(answer) if c.isdigit())
        return f"{answer[:at]}{(int(answer[at]) + 1) % 10}{answer[at + 1 :]}"
    return next((w for w in words if w != answer.lower()), None)


def test_a_list_of_candidates_says_nothing(
    tau2: Tau2RetailEnvironment, imported: list[Imported]
) -> None:
    """tau2's communicate check finds each string in some message: a reply listing the answer
    among wrong values of its kind passed it. Here all the agent says is read together and
    must commit to one value per answer: the gold work with one decoy beside the answers
    scores 0, in the report or in an earlier question; the answers alone score 1."""
    asked = [m for m in imported if m.communicate]
    assert len(asked) >= 30
    for m in asked:
        words = m.task.hidden.answer_key.words
        decoys = [d for c in m.communicate if (d := decoy(c, words)) is not None]
        assert decoys, m.tau2_id
        listed = replay(tau2, m, list(m.actions), extra=decoys)
        assert listed.item("tau2_db").score == 1.0, m.tau2_id
        assert listed.item("tau2_communicate").score == 0.0 and listed.reward == 0.0, m.tau2_id
        ep = tau2.episode()
        ep.reset(m.task)
        for a in m.actions:
            ep.step(ToolCall(tool=a["name"], arguments=a["arguments"]))
        ep.step(Message(content=f"Could it be {', '.join(decoys)}?"))
        ep.step(Message(content=answer_text(list(m.communicate))))
        assert ep.evaluate().reward == 0.0, m.tau2_id
        ep.close()


def test_a_transfer_summary_is_free_text(
    tau2: Tau2RetailEnvironment, imported: list[Imported]
) -> None:
    m = next(m for m in imported if m.passes_idle and m.actions[-1]["name"].startswith("transfer"))
    actions = [*m.actions[:-1], {"name": m.actions[-1]["name"], "arguments": {"summary": "Mine."}}]
    assert replay(tau2, m, actions).reward == 1.0
    assert replay(tau2, m, list(m.actions[:-1])).item("tau2_action").score == 0.0


def test_cut_off_episodes_score_zero(tau2: Tau2RetailEnvironment, imported: list[Imported]) -> None:
    m = next(m for m in imported if len(m.actions) >= 4)
    ep = tau2.episode(EpisodeConfig(max_steps=len(m.actions)))
    ep.reset(m.task)
    for a in m.actions:
        ep.step(ToolCall(tool=a["name"], arguments=a["arguments"]))
    verdict = ep.evaluate()
    assert verdict.status == "truncated" and verdict.item("tau2_db").score == 1.0
    assert verdict.item("ended").score == 0.0 and verdict.reward == 0.0


def test_envfactorys_rubric_is_shown_but_not_counted(
    tau2: Tau2RetailEnvironment, imported: list[Imported]
) -> None:
    m = next(m for m in imported if m.task.hidden.target)
    verdict = replay(tau2, m, list(m.actions))
    names = [i.name for i in verdict.items]
    assert names[:2] == ["tau2_db", "tau2_communicate"]
    for name in ("state", "answer", "no_collateral", "rules", "write_budget"):
        item = verdict.item(name)
        assert (
            item.kind == "score" and item.weight == 0.0 and item.reason.startswith("(not counted)")
        )
