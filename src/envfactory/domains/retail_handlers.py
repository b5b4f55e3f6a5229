"""Python handlers of the retail domain: the escape hatch for what data cannot express.

Business-day arithmetic (skip weekends) is beyond the declarative effects, so the delivery
estimate is a registered function. It reads through the same store as every other tool.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from envfactory.contract.results import ToolFailure
from envfactory.tools.runtime import ToolContext, handler

BUSINESS_DAYS_TO_DELIVER = {"standard": 5, "gold": 3, "platinum": 2}


def add_business_days(day: dt.date, n: int) -> dt.date:
    while n > 0:
        day += dt.timedelta(days=1)
        if day.weekday() < 5:
            n -= 1
    return day


@handler("retail.estimate_delivery")
def estimate_delivery(ctx: ToolContext) -> dict[str, Any]:
    order = ctx.row("orders", ctx.args["order_id"])
    if order["status"] in ("delivered", "cancelled"):
        raise ToolFailure(
            "precondition_failed", f"Order {order['id']} is {order['status']}; nothing to estimate."
        )
    customer = ctx.row("customers", order["customer_id"])
    days = BUSINESS_DAYS_TO_DELIVER[customer["tier"]]
    start = max(dt.date.fromisoformat(order["placed_on"]), dt.date.fromisoformat(ctx.today))
    return {
        "order_id": order["id"],
        "estimated_delivery": add_business_days(start, days).isoformat(),
        "business_days": days,
    }
