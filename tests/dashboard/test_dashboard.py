"""``envfactory dashboard`` over real rollout stores: the numbers against the records, the real
server and command, the pages in a real headless Chromium, and a run followed while it writes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from statistics import fmean
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from envfactory.cli.main import app as cli
from envfactory.curriculum.store import CurriculumStore
from envfactory.dashboard import aggregate, frontiers
from envfactory.dashboard.app import Dashboard, create_app
from envfactory.dashboard.reader import RunReader
from envfactory.dashboard.server import running
from envfactory.serving.server import free_port
from envfactory.trajectory.record import EpisodeRecord
from envfactory.trajectory.store import EPISODES, read_records

CHROMIUM = pytest.mark.skipif(
    not (shutil.which("chromium") and shutil.which("chromedriver")),
    reason="Chromium and chromedriver are not installed (make test installs them as root)",
)


def rollout(*args: str) -> None:
    cli(["rollout", "--json", *args], standalone_mode=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Three real runs: the oracle, the random policy (short turn limit: truncated episodes)
    and a curriculum run of the oracle whose frontier rises once. ``envfactory dashboard`` is
    started over their (empty) folders first, as one starts it beside a run; it reads them as
    they are written."""
    root = tmp_path_factory.mktemp("runs")
    stores = {k: root / k for k in ("oracle", "random", "cur-run")}
    for folder in stores.values():
        folder.mkdir()
    port = free_port()
    cmd = [sys.executable, "-m", "envfactory", "dashboard", *map(str, stores.values())]
    proc = subprocess.Popen([*cmd, "--port", str(port), "--refresh", "0.5"])
    try:
        common = ["--envs", "retail,hr", "--difficulties", "0,2", "--n-tasks", "4"]
        rollout(*common, "--policy", "oracle", "--out", str(stores["oracle"]))
        rollout(*common, "--policy", "random", "--group-size", "2", "--max-turns", "3",
                "--out", str(stores["random"]))  # fmt: skip
        db = root / "cur.sqlite"
        rollout("--envs", "retail", "--policy", "oracle", "--n-tasks", "9", "--rounds", "2",
                "--curriculum", str(db), "--out", str(stores["cur-run"]))  # fmt: skip
        yield {**stores, "db": db, "url": f"http://127.0.0.1:{port}"}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def records(store: Path) -> list[EpisodeRecord]:
    files = [store / EPISODES, *sorted(store.glob(f"round-*/{EPISODES}"))]
    return [r for f in files if f.exists() for r in read_records(f)]


def expected_cells(recs: list[EpisodeRecord]) -> dict[tuple[str, int], dict[str, Any]]:
    by: dict[tuple[str, int], list[EpisodeRecord]] = defaultdict(list)
    for r in recs:
        by[(r.env_id, r.difficulty)].append(r)
    out = {}
    for key, rs in by.items():
        rewards = [r.reward for r in rs if r.scored and r.reward is not None]
        out[key] = {
            "episodes": len(rs),
            "scored": len(rewards),
            "reward_mean": fmean(rewards) if rewards else None,
            "success_rate": sum(x >= 1.0 for x in rewards) / len(rewards) if rewards else None,
            "statuses": Counter(r.status for r in rs),
        }
    return out


# -- the numbers ------------------------------------------------------------------------------


def test_aggregation_matches_the_records(runs: dict[str, Any]) -> None:
    for name in ("oracle", "random", "cur-run"):
        recs = records(runs[name])
        reader = RunReader.open(runs[name])
        assert reader.refresh() == len(recs) > 0 and reader.skipped == 0
        rows = reader.snapshot()
        want = expected_cells(recs)
        cells = aggregate.cells(rows)
        assert {(c["env"], c["difficulty"]) for c in cells} == set(want)
        for c in cells:
            w = want[(c["env"], c["difficulty"])]
            assert (c["episodes"], c["scored"]) == (w["episodes"], w["scored"])
            assert c["reward_mean"] == pytest.approx(w["reward_mean"])
            assert c["success_rate"] == pytest.approx(w["success_rate"])
            assert {k: v for k, v in c["status_counts"].items() if v} == dict(w["statuses"])
        totals = aggregate.totals(rows)
        assert totals["status_counts"] == {
            s: sum(r.status == s for r in recs)
            for s in ("completed", "truncated", "timeout", "env_error", "infra_error")
        }
        scored = [r.reward for r in recs if r.scored and r.reward is not None]
        assert totals["reward_mean"] == pytest.approx(fmean(scored))
        curves = aggregate.curves(rows, window=5)
        last = curves["points"][-1]
        assert curves["scored"] == last["n"] == len(scored)
        ordered = [r.reward for r in sorted(recs, key=lambda r: r.timing.ended) if r.scored]
        assert last["reward"] == pytest.approx(fmean(x or 0.0 for x in ordered[-5:]))
        assert all(p["t"] is not None and p["t"] >= 0 for p in curves["points"])
    # the engine's own summary of a plain run agrees
    summary = json.loads((runs["random"] / "summary.json").read_text())
    rows = RunReader.open(runs["random"])
    rows.refresh()
    mine = aggregate.cells(rows.snapshot())
    assert [(c["env"], c["difficulty"], c["episodes"], c["scored"]) for c in mine] == [
        (c["env"], c["difficulty"], c["episodes"], c["scored"])
        for c in summary["by_env_difficulty"]
    ]
    assert aggregate.totals(rows.snapshot())["status_counts"] == summary["status_counts"]
    assert summary["status_counts"]["truncated"] > 0  # the random run shows another status


def test_curves_thin_out_and_keep_the_last_point(runs: dict[str, Any]) -> None:
    reader = RunReader.open(runs["cur-run"])
    reader.refresh()
    curves = aggregate.curves(reader.snapshot(), window=3, points=4)
    assert [p["n"] for p in curves["points"]][-1] == 18 and len(curves["points"]) == 4


def test_reader_follows_appends_and_skips_a_line_cut_short(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    lines = (runs["random"] / EPISODES).read_bytes().splitlines(keepends=True)
    path = tmp_path / EPISODES
    path.write_bytes(b"".join(lines[:3]))
    reader = RunReader.open(tmp_path)
    assert reader.refresh() == 3
    with path.open("ab") as f:  # two more and half of a third, as a writer leaves it mid-write
        f.write(lines[3] + lines[4] + lines[5][:40])
    assert reader.refresh() == 2 and len(reader.snapshot()) == 5 and reader.skipped == 0
    assert reader.refresh() == 0
    with path.open("ab") as f:
        f.write(lines[5][40:] + b'{"not": "an episode"}\n')
    assert reader.refresh() == 1 and reader.skipped == 1
    newest = reader.snapshot()[-1]
    record = reader.record(newest.episode_id)
    assert record is not None and record.model_dump_json() == lines[5].strip().decode()
    path.write_bytes(b"".join(lines[:2]))  # the file replaced by a shorter one: read afresh
    reader.refresh()
    assert len(reader.snapshot()) == 2 and reader.skipped == 0
    assert RunReader.open(tmp_path / "nothing-yet").refresh() == 0


def test_curriculum_frontiers_and_rounds(runs: dict[str, Any]) -> None:
    assert frontiers.find_for(runs["cur-run"]) == [runs["db"]]
    assert frontiers.find_for(runs["oracle"]) == []
    cur = frontiers.read(runs["db"])
    (retail,) = cur["envs"]
    assert retail["env_id"] == "retail" and retail["frontier"] == 1 and retail["episodes"] == 18
    assert [e["event"] for e in cur["history"]] == ["start", "raise"]
    assert frontiers.read(runs["oracle"] / "run.json")["error"]
    fresh = runs["db"].parent / "fresh.sqlite"
    CurriculumStore(fresh).close()  # its tables, not yet its settings: read, never written
    assert frontiers.read(fresh)["error"] == "the curriculum has not started yet"
    assert CurriculumStore(fresh).meta("config") is None
    reader = RunReader.open(runs["cur-run"])
    reader.refresh()
    assert reader.curriculum_run and reader.policy() == "oracle"
    rounds = aggregate.rounds(reader.snapshot())
    assert [r["round"] for r in rounds] == [0, 1] and rounds[0]["levels"] == [0]
    assert sum(r["episodes"] for r in rounds) == 18


# -- the app and the command ------------------------------------------------------------------


def test_api_routes(runs: dict[str, Any]) -> None:
    board = Dashboard.open([runs["oracle"], runs["random"] / EPISODES, runs["cur-run"]])
    client = TestClient(create_app(board))
    listed = client.get("/api/runs").json()
    assert [r["name"] for r in listed] == ["oracle", "random", "cur-run"]
    assert [r["kind"] for r in listed] == ["rollout", "rollout", "curriculum"]
    overview = client.get("/api/overview", params={"window": 4}).json()
    assert overview["curricula"][0]["path"] == str(runs["db"])
    assert overview["runs"][2]["rounds"] and overview["runs"][0]["curves"]["window"] == 4
    page = client.get("/api/runs/1/episodes", params={"status": "truncated", "limit": 3}).json()
    assert len(page["episodes"]) == 3 and {e["status"] for e in page["episodes"]} == {"truncated"}
    some = page["episodes"][0]["episode_id"]
    assert "#" in some
    shown = client.get("/api/runs/1/episode", params={"id": some}).json()
    assert shown["episode_id"] == some and shown["conversation"] and shown["rubric"]
    assert client.get("/api/runs/1/episode", params={"id": "nope"}).status_code == 404
    assert client.get("/api/runs/7").status_code == 404
    assert "envfactory dashboard" in client.get("/").text


def test_token_guards_every_route_but_health(runs: dict[str, Any]) -> None:
    client = TestClient(create_app(Dashboard.open([runs["oracle"]]), token="s3cret"))
    assert client.get("/health").status_code == 200
    assert client.get("/api/runs").status_code == 401 and client.get("/").status_code == 401
    bearer = {"Authorization": "Bearer s3cret"}
    assert client.get("/api/runs", headers=bearer).status_code == 200
    assert client.get("/", params={"token": "wrong"}).status_code == 401
    assert client.get("/", params={"token": "s3cret"}).status_code == 200  # sets the cookie
    assert client.get("/api/runs").status_code == 200


def test_command_refuses_a_missing_store_and_a_public_bind(runs: dict[str, Any]) -> None:
    runner = CliRunner()
    missing = runner.invoke(cli, ["dashboard", str(runs["oracle"]), "/no/such/store"])
    assert missing.exit_code == 2 and "no trajectory store" in missing.output
    public = runner.invoke(cli, ["dashboard", str(runs["oracle"]), "--host", "0.0.0.0"])
    assert public.exit_code == 2 and "token" in public.output


@pytest.fixture(scope="module")
def command(runs: dict[str, Any]) -> str:
    """``envfactory dashboard`` itself, as a user starts it (by ``runs``), once it answers."""
    url = str(runs["url"])
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return url
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "envfactory dashboard did not start"
        time.sleep(0.2)


# -- the pages in Chromium --------------------------------------------------------------------


def wait(driver: Any, condition: Any, seconds: float = 20) -> Any:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    ignored = (StaleElementReferenceException,)  # the page redraws what changed
    return WebDriverWait(driver, seconds, 0.1, ignored_exceptions=ignored).until(condition)


def css(driver: Any, selector: str) -> list[Any]:
    return list(driver.find_elements("css selector", selector))


@CHROMIUM
def test_overview_page_shows_the_runs(runs: dict[str, Any], driver: Any, command: str) -> None:
    driver.get(command + "/")
    wait(driver, lambda d: len(css(d, "#episodes tr[data-episode]")) > 0)
    cards = css(driver, ".card.run")
    assert [c.get_attribute("data-run") for c in cards] == ["oracle", "random", "cur-run"]
    for name in ("oracle", "random", "cur-run"):
        recs = records(runs[name])
        counts = Counter(r.status for r in recs)
        for chip in css(driver, f'.status[data-run="{name}"]'):
            status = chip.get_attribute("data-status")
            assert chip.find_element("tag name", "b").text == str(counts.get(status, 0)), status
        want = expected_cells(recs)
        tds = css(driver, f'table.matrix[data-run="{name}"] td.cell')
        assert len(tds) == len(want)
        for td in tds:
            w = want[(td.get_attribute("data-env"), int(td.get_attribute("data-difficulty")))]
            assert int(td.get_attribute("data-episodes")) == w["episodes"]
            assert td.get_attribute("data-reward") == f"{w['reward_mean']:.3f}"
            assert f"{w['episodes']} ep" in td.text
    # one line per run in each chart; the curriculum's frontier and its move
    for chart in css(driver, "svg.chart[data-title^='reward'], svg.chart[data-title^='success']"):
        lines = chart.find_elements("css selector", "polyline")
        assert [p.get_attribute("data-run") for p in lines] == ["oracle", "random", "cur-run"]
    frontier = css(driver, 'table.frontiers tr[data-env="retail"] td[data-key="frontier"]')
    assert frontier[0].text == "1 of 5"
    assert "raise" in css(driver, "table.history")[0].text
    # a cell lists its episodes
    cell = css(driver, 'table.matrix[data-run="random"] td.cell[data-env="hr"]')[0]
    cell.click()
    wait(driver, lambda d: all(
        "hr" in row.text for row in css(d, "#episodes tr[data-episode]")
    ) and css(d, "#f-run")[0].get_attribute("value") == "1")  # fmt: skip


@CHROMIUM
def test_episode_viewer_shows_calls_results_and_rubric(
    runs: dict[str, Any], command: str, driver: Any
) -> None:
    writes = [r for r in records(runs["oracle"]) if len({s.state_hash for s in r.steps}) > 1]
    rec = writes[0]  # an episode whose tool calls change the state
    driver.get(f"{command}/episode?run=0&id={quote(rec.episode_id, safe='')}")
    wait(driver, lambda d: d.execute_script("return document.body.dataset.loaded") == "1")
    assert css(driver, "#episode-id")[0].text == rec.episode_id
    calls = css(driver, ".toolcall")
    first = rec.steps[0].action["tool"]
    assert calls and calls[0].get_attribute("data-tool") == first
    results = css(driver, '.msg[data-role="tool"]')
    assert len(results) == sum(m["role"] == "tool" for m in rec.messages)
    assert first in results[0].text.lower()
    rows = css(driver, "#rubric tr[data-item]")
    assert [r.get_attribute("data-item") for r in rows] == [i.name for i in rec.rubric]
    assert css(driver, '#state li[data-item="state"]')[0].text.startswith("state: ")
    assert css(driver, "#steps tr.changed")  # the write shows as a state change
    assert css(driver, '[data-key="reward"]')[0].text == f"{rec.reward:.3f}"
    # the state diff against the target, recomputed by replaying the episode
    wait(driver, lambda d: d.execute_script("return document.body.dataset.diff") == "ok")
    assert css(driver, '#diff-rows tr[data-status="made"]') and css(driver, "#no-collateral")
    assert not css(driver, '#diff-rows tr[data-status="missing"]')


@CHROMIUM
def test_page_follows_a_run_while_it_writes(
    runs: dict[str, Any], tmp_path: Path, driver: Any
) -> None:
    lines = (runs["random"] / EPISODES).read_bytes().splitlines(keepends=True)
    fault = json.loads(lines[7])  # an infrastructure fault: counted, never scored
    fault.update(episode_id=fault["episode_id"] + "-fault", status="infra_error", reward=None)
    live = tmp_path / "live"
    live.mkdir()  # the dashboard starts before the run's first episode
    path = live / EPISODES
    board = Dashboard.open([live], refresh_s=0.3)

    def shown(d: Any, key: str = "episodes") -> str:
        return str(d.find_element("css selector", f'.card.run dd[data-key="{key}"]').text)

    def chip(d: Any, status: str) -> str:
        return str(d.find_element("css selector", f'.status[data-status="{status}"] b').text)

    with running(board) as url:
        driver.get(url + "/")
        wait(driver, lambda d: shown(d) == "0")
        path.write_bytes(b"".join(lines[:3]))
        wait(driver, lambda d: shown(d) == "3")
        with path.open("ab") as f:  # four more, a fault, and one cut short mid-write
            f.write(b"".join(lines[3:7]) + json.dumps(fault).encode() + b"\n" + lines[8][:50])
        wait(driver, lambda d: shown(d) == "8")
        truncated = sum(json.loads(x)["status"] == "truncated" for x in lines[:7])
        assert chip(driver, "truncated") == str(truncated) and chip(driver, "infra_error") == "1"
        assert shown(driver, "scored") == "7"
        assert not css(driver, ".card.run .err") and "error" not in css(driver, "#status")[0].text
        with path.open("ab") as f:
            f.write(lines[8][50:])
        wait(driver, lambda d: shown(d) == "9" and len(css(d, "#episodes tr[data-episode]")) == 9)
