"""Screenshots of the dashboard for the docs, from real runs made here.

    python -m envfactory.dashboard.screenshots docs/images

makes three runs in a temporary folder with ``envfactory rollout`` (the noisy oracle, the
random policy with a short turn limit, and a curriculum run of the oracle whose frontier
moves), serves the dashboard over them on loopback, and saves ``dashboard-overview.png`` and
``dashboard-episode.png`` taken by headless Chromium.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from envfactory.cli.main import app

ENVS = "retail,hr"


def rollout(*args: str) -> None:
    """``envfactory rollout ARGS`` in this process."""
    app(["rollout", "--json", *args], standalone_mode=False)


def example_runs(folder: Path) -> tuple[list[Path], Path]:
    """Three runs in ``folder`` (the noisy oracle, random, a curriculum run of the oracle) and
    the curriculum's file."""
    oracle, random, cur = folder / "noisy-oracle", folder / "random", folder / "curriculum-run"
    common = ["--envs", ENVS, "--difficulties", "0,1,2", "--n-tasks", "6"]
    rollout(*common, "--policy", "noisy-oracle", "--group-size", "2", "--out", str(oracle))
    rollout(
        *common, "--policy", "random", "--group-size", "2", "--max-turns", "4", "--out", str(random)
    )
    db = folder / "curriculum.sqlite"
    rollout("--envs", "retail", "--policy", "oracle", "--n-tasks", "9", "--rounds", "3",
            "--curriculum", str(db), "--out", str(cur))  # fmt: skip
    return [oracle, random, cur], db


def shoot(out: Path) -> list[Path]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    from envfactory.dashboard.app import Dashboard
    from envfactory.dashboard.server import running
    from envfactory.web.browser import launch

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        stores, db = example_runs(Path(tmp))
        board = Dashboard.open(stores, [db])
        driver = launch()
        try:
            with running(board) as url:
                driver.set_window_size(1400, 2200)
                driver.get(url + "/")
                WebDriverWait(driver, 20).until(
                    lambda d: d.find_elements(By.CSS_SELECTOR, "#episodes tr[data-episode]")
                )
                # scripted runs end within a second: their curves read best by episode
                Select(driver.find_element(By.ID, "x-axis")).select_by_value("episodes")
                time.sleep(0.5)
                overview = out / "dashboard-overview.png"
                driver.save_screenshot(str(overview))
                # the curriculum run's longest episode: tool calls, writes, passed rubric, diff
                longest = max(board.runs[2].snapshot(), key=lambda r: r.steps)
                driver.set_window_size(1400, 1800)
                driver.get(f"{url}/episode?run=2&id={quote(longest.episode_id, safe='')}")
                WebDriverWait(driver, 20).until(
                    lambda d: d.execute_script("return document.body.dataset.diff")
                )  # the state diff against the target comes once the replay is done
                episode = out / "dashboard-episode.png"
                driver.save_screenshot(str(episode))
        finally:
            driver.quit()
    return [overview, episode]


def main(argv: list[str]) -> None:
    out = Path(argv[0]) if argv else Path("docs/images")
    for path in shoot(out):
        print(path)


if __name__ == "__main__":
    main(sys.argv[1:])
