"""The tau2 episode's fast tool path (``Tau2Episode._call`` through ``handlers.run``, records
from the world-wide cache) gives what the engine's generic path gives: the same observation,
call record, changed rows and state hash after every call, for every gold call of every task,
malformed variants of each, and reads of the records after the writes."""

from __future__ import annotations

from typing import Any

from envfactory.contract.actions import ToolCall
from envfactory.db.episode import DatabaseEpisode
from envfactory.peers.tau2.environment import Tau2RetailEnvironment
from envfactory.peers.tau2.episode import Tau2Episode
from envfactory.peers.tau2.handlers import accepts
from envfactory.peers.tau2.tasks import Imported


def _variants(tau2: Tau2RetailEnvironment, name: str, args: dict[str, Any]) -> list[Any]:
    """Arguments the fast path must hand to the engine, or run with the same outcome."""
    params = tau2.world.tools[name].params
    first = next(iter(params), None)
    out: list[Any] = [{**args, "extra": "x"}, "{not json", {"order_id": "#W0000000"}]
    if first is not None:
        out += [
            {k: v for k, v in args.items() if k != first},  # one missing
            {**args, first: 123},
            {**args, first: "a\x00b"},
            {**args, first: "x" * (params[first].max_length + 1)},
            {**args, first: ["a"] if isinstance(args.get(first), str) else "a"},
        ]
    return out


def _same_step(fast: Tau2Episode, engine: DatabaseEpisode, name: str, args: Any) -> None:
    a = fast.step(ToolCall(tool=name, arguments=args))
    b = engine.step(ToolCall(tool=name, arguments=args))
    assert a.model_dump() == b.model_dump(), (name, args)
    assert fast.log == engine.log, (name, args)
    assert fast.store.changes() == engine.store.changes(), (name, args)
    assert fast.state_hash() == engine.state_hash(), (name, args)


def test_the_fast_path_gives_what_the_engine_gives(
    tau2: Tau2RetailEnvironment, imported: list[Imported]
) -> None:
    fast, engine = tau2.episode(), DatabaseEpisode(tau2)
    for m in imported:
        fast.reset(m.task)
        engine.reset(m.task)
        named: set[tuple[str, str]] = set()
        for a in m.actions:
            for bad in _variants(tau2, a["name"], a["arguments"]):
                _same_step(fast, engine, a["name"], bad)
            _same_step(fast, engine, a["name"], a["arguments"])
            named |= {(k, v) for k, v in a["arguments"].items() if k in ("order_id", "user_id")}
        for key, value in sorted(named):  # the records again, after the task's writes
            tool = "get_order_details" if key == "order_id" else "get_user_details"
            _same_step(fast, engine, tool, {key: value})
    fast.close()
    engine.close()


def test_the_fast_path_runs_the_gold_calls(
    tau2: Tau2RetailEnvironment, imported: list[Imported]
) -> None:
    """Every gold call's arguments are ones the fast path takes (it is not the engine's path
    under another name)."""
    taken = [
        accepts(tau2.fast[a["name"]], a["arguments"]) is not None
        for m in imported
        for a in m.actions
        if a["name"] in tau2.fast
    ]
    assert taken and all(taken)
    assert {"get_order_details", "cancel_pending_order"} <= set(tau2.fast)


def test_a_result_is_the_callers_own_copy(
    tau2: Tau2RetailEnvironment, imported: list[Imported]
) -> None:
    """Changing what a read returned changes neither the world's cached record nor the next
    episode's answer."""
    order = next(
        a["arguments"]["order_id"]
        for m in imported
        for a in m.actions
        if a["name"] == "get_order_details"
    )
    call = ToolCall(tool="get_order_details", arguments={"order_id": order})
    ep = tau2.episode()
    ep.reset(imported[0].task)
    first = ep.step(call)
    first.data["status"] = "mine"
    first.data["items"].clear()
    ep.reset(imported[1].task)
    again = ep.step(call)
    assert again.data["status"] != "mine" and again.data["items"]
    assert again.content == first.content
    ep.close()
