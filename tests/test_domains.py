"""Domains are data: every built-in domain loads; broken ones are refused with a reason."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

import envfactory
from envfactory.contract.errors import DomainError
from envfactory.contract.results import ToolFailure
from envfactory.db.environment import DatabaseEnvironment as Environment
from envfactory.domain.loader import builtin_domain_files, parse_domain
from envfactory.tools.runtime import ToolContext, handler

RETAIL = yaml.safe_load(next(p for p in builtin_domain_files() if p.stem == "retail").read_text())


def test_builtin_domains_have_shape(db_env: Environment) -> None:
    info = db_env.info()
    assert info.tables >= 4
    assert info.tools >= 10
    assert info.goal_templates >= 5
    assert info.rules >= 1
    assert len(info.difficulties) >= 5
    if not db_env.world.imported:  # an imported world is the size of its data
        assert 700 <= info.rows <= 1500, "default worlds hold about a thousand rows"
    kinds = {a.kind for a in db_env.spec.actions}
    assert kinds == {"read", "write"}


def _action(data: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(a for a in data["actions"] if a["name"] == name)
    return found


def _broken(edit: Any) -> dict[str, Any]:
    data = copy.deepcopy(RETAIL)
    edit(data)
    return data


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["entities"]["orders"]["fields"]["customer_id"].update(ref="ghosts"),
            "unknown entity",
        ),
        (lambda d: d["goals"][0]["plan"].append({"tool": "fly", "args": {}}), "unknown tool"),
        (lambda d: d["actions"][0].update(name="Bad Name"), "snake_case"),
        (
            lambda d: _action(d, "cancel_order")["require"].append(
                {"check": "__import__('os')", "error": "x"}
            ),
            "may be called",
        ),
        (
            lambda d: d["rules"][0].update(prior_call={"tool": "nope", "needs": "get_order"}),
            "unknown tool",
        ),
        (lambda d: d["entities"]["customers"].update(count=None), "exactly one of"),
        (lambda d: d.update(handlers="os;rm"), "handlers module"),
    ],
)
def test_invalid_domains_are_refused(edit: Any, message: str) -> None:
    with pytest.raises(DomainError, match=message):
        spec = parse_domain(_broken(edit), "test")
        envfactory.DatabaseEnvironment(spec)


@handler("tests.discount")
def _discount(ctx: ToolContext) -> dict[str, Any]:
    product = ctx.row("products", ctx.args["product_id"])
    if ctx.args["percent"] > 50:
        raise ToolFailure("rule_violation", "Discounts above 50% need a manager.", rule="cap")
    price = round(product["price"] * (100 - ctx.args["percent"]) / 100, 2)
    return ctx.store.update("products", product["id"], {"price": price})


def test_python_handler_escape_hatch() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["id"] = "retail-discounts"
        d["actions"].append(
            {
                "name": "discount_product",
                "kind": "write",
                "description": "Discount a product by a percentage.",
                "params": {
                    "product_id": {"description": "Product id, like PRD-00001."},
                    "percent": {
                        "type": "integer",
                        "description": "Percent off.",
                        "minimum": 1,
                        "maximum": 90,
                    },
                },
                "handler": "tests.discount",
            }
        )

    env = envfactory.DatabaseEnvironment(parse_domain(_broken(edit), "test"))
    store = env.world.new_store()
    tool = env.world.tools["discount_product"]
    price = store.get("products", "PRD-00001")["price"]  # type: ignore[index]
    ok = tool(store, {"product_id": "PRD-00001", "percent": 10})
    assert ok.ok and ok.data["price"] == round(price * 0.9, 2)
    refused = tool(store, {"product_id": "PRD-00001", "percent": 60})
    assert refused.error is not None and refused.error.code == "rule_violation"
    missing = tool(store, {"product_id": "PRD-99999", "percent": 10})
    assert missing.error is not None and missing.error.code == "not_found"
    assert [c.key for c in store.changes()] == ["PRD-00001"]


def test_unregistered_handler_is_refused() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["actions"][0] = {**d["actions"][0], "handler": "nobody.home"}

    with pytest.raises(DomainError, match="no Python handler"):
        envfactory.DatabaseEnvironment(parse_domain(_broken(edit), "test"))


def test_retail_delivery_estimate_uses_business_days(retail: Environment) -> None:
    store = retail.world.new_store()
    order = store.rows("orders", {"status": "pending"})[0]
    result = retail.world.tools["estimate_delivery"](store, {"order_id": order["id"]})
    assert result.ok
    import datetime as dt

    assert dt.date.fromisoformat(result.data["estimated_delivery"]).weekday() < 5
