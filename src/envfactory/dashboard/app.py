"""The dashboard's web app: two pages (the runs side by side, and one episode) and the JSON
routes under ``/api`` they fetch. Every request reads what the runs appended since the last
one, so the pages follow a run while it writes.

When a token is set, every route but ``/health`` needs it: as ``Authorization: Bearer`` or
``X-API-Key`` (as ``envfactory serve`` takes it), or from the browser as ``?token=`` once, which
sets a cookie for the pages' own requests.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Query, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse

from envfactory.dashboard import aggregate, frontiers
from envfactory.dashboard.campaign import campaign_view
from envfactory.dashboard.diff import state_diff
from envfactory.dashboard.episode import view
from envfactory.dashboard.page import EPISODE_PAGE, OVERVIEW_PAGE
from envfactory.dashboard.reader import RunReader
from envfactory.dashboard.training import TrainingReader, is_training
from envfactory.serving.auth import presented_token
from envfactory.trajectory.record import EpisodeRecord

COOKIE = "envfactory_dashboard"


def _names(paths: Sequence[Path]) -> list[str]:
    """Short, distinct names: the folder's name, with its parent's when two runs share one."""
    names = [p.resolve().name for p in paths]
    out = []
    for p, n in zip(paths, names, strict=True):
        if names.count(n) > 1:
            n = f"{p.resolve().parent.name}/{n}"
        out.append(n)
    return [n if out.count(n) == 1 else f"{n} ({i})" for i, n in enumerate(out)]


@dataclass
class Dashboard:
    """The runs, training runs and curriculum files a dashboard shows."""

    runs: list[RunReader]
    curricula: list[Path] = field(default_factory=list)
    trainings: list[TrainingReader] = field(default_factory=list)
    refresh_s: float = 2.0
    _cache: dict[tuple[int, str], tuple[int, Any]] = field(default_factory=dict)

    @classmethod
    def open(
        cls, stores: Sequence[str | Path], curricula: Sequence[str | Path] = (), **kw: Any
    ) -> Dashboard:
        """Each path a trajectory store (a folder, or a file in it) or a training run (a save
        folder or a result file: :mod:`envfactory.dashboard.training`, which raises
        ``NotARun`` for a JSON file that is neither)."""
        given = [Path(s) for s in stores]
        trained = [is_training(p) for p in given]
        paths = [
            p.parent if p.is_file() and not t else p for p, t in zip(given, trained, strict=True)
        ]
        runs, trainings = [], []
        for p, n, t in zip(paths, _names(paths), trained, strict=True):
            if t:
                trainings.append(TrainingReader.open(p, n))
            else:
                runs.append(RunReader.open(p, n))
        return cls(runs, [Path(c) for c in curricula], trainings, **kw)

    def run(self, rid: int) -> RunReader:
        if not 0 <= rid < len(self.runs):
            raise HTTPException(404, f"no run {rid}: there are {len(self.runs)}")
        return self.runs[rid]

    def _cached(self, rid: int, gen: int, key: str, make: Callable[[], Any]) -> Any:
        hit = self._cache.get((rid, key))
        if hit is not None and hit[0] == gen:
            return hit[1]
        value = make()
        self._cache[(rid, key)] = (gen, value)
        return value

    def summary(self, rid: int, window: int | None = None) -> dict[str, Any]:
        """A run's name, kind, policy and totals; with ``window``, also its table by world and
        difficulty, its curves and (a curriculum run) its rounds."""
        reader = self.run(rid)
        gen, rows = reader.latest()
        ended = [r.ended for r in rows if r.ended]
        out = {
            "id": rid,
            "name": reader.name,
            "path": str(reader.path),
            "kind": "curriculum" if reader.curriculum_run else "rollout",
            "policy": reader.policy(),
            "skipped_lines": reader.skipped,
            "last_episode_at": max(ended) if ended else None,
            **self._cached(rid, gen, "totals", lambda: aggregate.totals(rows)),
        }
        if window is not None:
            out["cells"] = self._cached(rid, gen, "cells", lambda: aggregate.cells(rows))
            out["curves"] = self._cached(
                rid, gen, f"curves{window}", lambda: aggregate.curves(rows, window)
            )
            out["rounds"] = (
                self._cached(rid, gen, "rounds", lambda: aggregate.rounds(rows))
                if reader.curriculum_run
                else []
            )
        return out

    def curricula_for(self) -> list[Path]:
        """The curriculum files named, or else those found beside the curriculum runs."""
        if self.curricula:
            return self.curricula
        found: list[Path] = []
        for reader in self.runs:
            if reader.curriculum_run:
                found += [p for p in frontiers.find_for(reader.path) if p not in found]
        return found

    def training(self, tid: int) -> dict[str, Any]:
        """A training run's state, step, reward by step, before and after."""
        if not 0 <= tid < len(self.trainings):
            raise HTTPException(404, f"no training run {tid}: there are {len(self.trainings)}")
        return {"id": tid, "kind": "training", **self.trainings[tid].view()}

    def overview(self, window: int) -> dict[str, Any]:
        return {
            "runs": [self.summary(rid, window) for rid in range(len(self.runs))],
            "trainings": [self.training(tid) for tid in range(len(self.trainings))],
            "curricula": [frontiers.read(p) for p in self.curricula_for()],
            "refresh_s": self.refresh_s,
        }


def _guard(app: FastAPI, token: str) -> None:
    secret = token.encode()

    def ok(value: str | None) -> bool:
        return value is not None and hmac.compare_digest(value.encode(), secret)

    @app.middleware("http")
    async def require_token(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        if request.url.path == "/health":
            return await call_next(request)
        given = request.query_params.get("token")
        if ok(presented_token(request.scope.get("headers", []))) or ok(request.cookies.get(COOKIE)):
            return await call_next(request)
        if ok(given):
            response = await call_next(request)
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
            return response
        return JSONResponse(
            {"detail": "a valid token is required: open the page with ?token=<token>, or send "
             "'Authorization: Bearer <token>'", "error": "unauthorized"},
            status_code=401,
            headers={"www-authenticate": "Bearer"},
        )  # fmt: skip


def create_app(dashboard: Dashboard, token: str | None = None) -> FastAPI:
    """The app over ``dashboard``'s runs (``token``: required on every route but /health)."""
    app = FastAPI(title="envfactory dashboard", docs_url=None, redoc_url=None)
    if token:
        _guard(app, token)
    config = json.dumps({"refresh_ms": int(dashboard.refresh_s * 1000)})

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/", response_class=HTMLResponse)
    def overview_page() -> str:
        return OVERVIEW_PAGE.replace("__CONFIG__", config)

    @app.get("/episode", response_class=HTMLResponse)
    def episode_page() -> str:
        return EPISODE_PAGE.replace("__CONFIG__", config)

    @app.get("/api/runs")
    def runs() -> list[dict[str, Any]]:
        return [dashboard.summary(i) for i in range(len(dashboard.runs))]

    @app.get("/api/overview")
    def overview(window: int = Query(20, ge=1, le=10_000)) -> dict[str, Any]:
        return dashboard.overview(window)

    @app.get("/api/runs/{rid}")
    def run(rid: int) -> dict[str, Any]:
        return dashboard.summary(rid)

    @app.get("/api/trainings")
    def trainings() -> list[dict[str, Any]]:
        return [dashboard.training(i) for i in range(len(dashboard.trainings))]

    @app.get("/api/trainings/{tid}")
    def training(tid: int) -> dict[str, Any]:
        return dashboard.training(tid)

    @app.get("/api/runs/{rid}/cells")
    def cells(rid: int) -> list[dict[str, Any]]:
        reader = dashboard.run(rid)
        reader.refresh()
        return aggregate.cells(reader.snapshot())

    @app.get("/api/runs/{rid}/curves")
    def curves(
        rid: int,
        window: int = Query(20, ge=1, le=10_000),
        points: int = Query(300, ge=2, le=5000),
    ) -> dict[str, Any]:
        reader = dashboard.run(rid)
        reader.refresh()
        return aggregate.curves(reader.snapshot(), window, points)

    @app.get("/api/runs/{rid}/episodes")
    def episodes(
        rid: int,
        env: str | None = None,
        difficulty: int | None = None,
        status: str | None = None,
        limit: int = Query(50, ge=0, le=1000),
        offset: int = Query(0, ge=0),
    ) -> dict[str, Any]:
        reader = dashboard.run(rid)
        reader.refresh()
        return aggregate.episodes(reader.snapshot(), env, difficulty, status, limit, offset)

    def record(rid: int, id: str) -> tuple[RunReader, EpisodeRecord]:
        reader = dashboard.run(rid)
        reader.refresh()
        try:
            found = reader.record(id)
        except ValueError as exc:
            raise HTTPException(422, f"episode {id} is not a readable record: {exc}") from None
        if found is None:
            raise HTTPException(404, f"no episode {id!r} in run {reader.name}")
        return reader, found

    @app.get("/api/runs/{rid}/episode")
    def episode(rid: int, id: str) -> dict[str, Any]:
        reader, found = record(rid, id)
        return view(found, reader.name)

    @app.get("/api/runs/{rid}/episode/diff")
    def episode_diff(rid: int, id: str) -> dict[str, Any]:
        """The final state against the target, recomputed by replaying the episode."""
        reader, found = record(rid, id)
        return {"run": reader.name, "episode_id": found.episode_id, **state_diff(found)}

    @app.get("/api/runs/{rid}/episode/campaign")
    def episode_campaign(rid: int, id: str) -> dict[str, Any]:
        """A campaign's requests in order, with the clock and events, by replaying it."""
        reader, found = record(rid, id)
        return {"run": reader.name, "episode_id": found.episode_id, **campaign_view(found)}

    @app.get("/api/curricula")
    def curricula() -> list[dict[str, Any]]:
        return [frontiers.read(p) for p in dashboard.curricula_for()]

    return app
