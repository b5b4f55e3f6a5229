"""The trainer's routes, under ``/envfactory/trainer``: what no agent may see.

An agent's session never sees the rubric's reasons (they name the target's rows) nor any
verdict before its episode ends. The trainer does, here, with its own token
(``X-Trainer-Token``, :attr:`ServeConfig.trainer_token`), which is distinct from the agents'
bearer token; without a trainer token configured these routes do not exist.
"""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Depends, Header

from envfactory.contract.verdict import Verdict
from envfactory.serving.engine import Engine
from envfactory.serving.errors import Unauthorized
from envfactory.serving.models import ErrorOut

PREFIX = "/envfactory/trainer"
HEADER = "X-Trainer-Token"


def trainer_router(engine: Engine, token: str) -> APIRouter:
    expected = token.encode()

    async def require_trainer(x_trainer_token: str | None = Header(None)) -> None:
        got = (x_trainer_token or "").encode("utf-8", "replace")
        if not hmac.compare_digest(got, expected):
            raise Unauthorized(f"the trainer's routes require the trainer token in {HEADER}")

    r = APIRouter(
        prefix=PREFIX,
        tags=["trainer"],
        dependencies=[Depends(require_trainer)],
        responses={401: {"model": ErrorOut}},
    )

    @r.get("/sessions/{sid}/verdict", response_model=Verdict)
    async def verdict(sid: str) -> Verdict:
        """The full verdict with every rubric reason (provisional until the episode ends)."""
        return await engine.evaluate(engine.store.get(sid))

    return r
