"""A training run in the dashboard beside a rollout run: its folders written here as
``envfactory train`` writes them (``run.json`` with ``before`` made by the trainer's own models,
TRL checkpoints with their ``trainer_state.json``, then the result), served by the real app on
loopback and read over HTTP, and in headless Chromium, while the run moves on."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from envfactory.bench.calibration import CalibrationCell
from envfactory.cli.main import app as cli
from envfactory.dashboard.app import Dashboard
from envfactory.dashboard.server import running
from envfactory.dashboard.training import NotARun
from envfactory.integrations.embedded import EMBEDDED_NAME
from envfactory.policies.wrap import ScriptedPolicy
from envfactory.quality.stats import wilson
from envfactory.rollout.plan import plan_tasks
from envfactory.rollout.run import run_in
from envfactory.training.grpo_cpu import CHECKPOINTS, RUN_FILE, TrainSettings
from envfactory.training.judge import Judged, held, pooled

CHROMIUM = pytest.mark.skipif(
    not (shutil.which("chromium") and shutil.which("chromedriver")),
    reason="Chromium and chromedriver are not installed (make test installs them as root)",
)
SETTINGS = TrainSettings(
    worlds=["synth-a", "synth-b"], eval_worlds=["hotel", "retail"], levels=[0, 1], steps=3
)
BEFORE = {"hotel": 2, "retail": 1}  # successes of 10 test tasks each
AFTER = {"hotel": 9, "retail": 8}
REWARDS = [0.25, 0.4583, 0.7083]  # the reward of each GRPO step


def judged(wins: dict[str, int], tasks: int = 10) -> Judged:
    """An evaluation as the trainer's judge makes it: a calibration cell per world, pooled."""
    cells = [
        CalibrationCell(
            env=w,
            difficulty=0,
            tasks=tasks,
            success=k / tasks,
            ci95=wilson(k, tasks),
            mean_reward=k / tasks,
            tool_call_valid_rate=0.9,
            invalid_argument_rate=0.1,
            calls_attempted=2 * tasks,
            turns_mean=2.0,
            prompt_tokens=900,
            completion_tokens=80,
            split="test",
        )
        for w, k in wins.items()
    ]
    return Judged(pooled=pooled(cells), per_world={c.env: held(c) for c in cells})


def start(save: Path) -> None:
    """``run.json``, as ``train --save`` writes it once ``before`` is judged."""
    save.mkdir(parents=True)
    begun = {"before": judged(BEFORE).model_dump(mode="json"), "warm": {}}
    run = {"settings": SETTINGS.model_dump(), "model_path": None, "library": [], **begun}
    (save / RUN_FILE).write_text(json.dumps(run, indent=2) + "\n")


def checkpoint(save: Path, step: int) -> None:
    """``checkpoint-STEP`` with TRL's trainer state (a log entry per step), the one before it
    removed (``save_total_limit=1``)."""
    log = [
        {"loss": 0.01 * s, "grad_norm": 0.5, "learning_rate": 1e-4, "num_tokens": 900.0 * s,
         "reward": r, "reward_std": 0.3, "rewards/verdict_reward/mean": r,
         "rewards/verdict_reward/std": 0.3, "frac_reward_zero_std": 0.5, "entropy": 1.2,
         "step_time": 200.0 + s, "epoch": s / SETTINGS.steps, "step": s}
        for s, r in enumerate(REWARDS[:step], start=1)
    ]  # fmt: skip
    state = {"global_step": step, "max_steps": SETTINGS.steps, "log_history": log,
             "logging_steps": 1, "save_steps": 1, "train_batch_size": 4}  # fmt: skip
    folder = save / CHECKPOINTS / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "trainer_state.json").write_text(json.dumps(state, indent=2))
    shutil.rmtree(save / CHECKPOINTS / f"checkpoint-{step - 1}", ignore_errors=True)


def finish(out: Path, saved: str) -> Path:
    """The result ``OUT/NAME.json`` as ``train`` writes it when the run ends."""
    before, after = judged(BEFORE), judged(AFTER)
    result = {
        "train_worlds": SETTINGS.worlds, "eval_worlds": SETTINGS.judged, "in_domain": False,
        "model": "SmolLM2-135M-Instruct", "minutes": 42.5, "train_minutes": 12.0,
        "before": before.pooled.model_dump(mode="json"),
        "after": after.pooled.model_dump(mode="json"),
        "per_world": {w: {"before": before.per_world[w].model_dump(mode="json"),
                          "after": h.model_dump(mode="json")} for w, h in after.per_world.items()},
        "separated": after.pooled.ci95[0] > before.pooled.ci95[1],
        "curve": REWARDS, "episodes": {"synth-a/0": 40, "synth-b/0": 32}, "frontier": {},
        "saved": saved, "resumed_from": None, "settings": SETTINGS.model_dump(),
    }  # fmt: skip
    path = out / "transfer-grpo-cpu.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real rollout store beside the training run: the oracle on two retail tasks."""
    folder = tmp_path_factory.mktemp("rollouts") / "oracle"
    asyncio.run(run_in(folder, plan_tasks(["retail"], 2, ["train"], [0]), ScriptedPolicy("oracle")))
    return folder


def test_a_training_run_is_followed_beside_a_rollout_run(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs" / "transfer"
    save = out / "model"
    start(save)
    (out / "synth.json").write_text('{"worlds": 40}')  # another JSON beside: not the result
    with running(Dashboard.open([store, save])) as url:
        runs = httpx.get(f"{url}/api/runs").json()
        assert [(r["name"], r["episodes"]) for r in runs] == [("oracle", 2)]
        (t,) = httpx.get(f"{url}/api/trainings").json()
        assert (t["name"], t["kind"], t["state"], t["step"], t["steps"]) == (
            "model",
            "training",
            "training",
            0,
            3,
        )
        assert t["curve"] == [] and t["after"] is None and t["separated"] is None
        before = judged(BEFORE)
        assert t["before"]["pooled"] == before.pooled.model_dump(mode="json")
        assert t["before"]["pooled"]["tasks"] == 20 and t["before"]["pooled"]["success"] == 0.15
        assert t["before"]["per_world"]["hotel"]["ci95"] == list(wilson(2, 10))
        assert (t["train_worlds"], t["eval_worlds"]) == (SETTINGS.worlds, ["hotel", "retail"])
        assert t["model"] == EMBEDDED_NAME  # run.json names no model path: the embedded one

        for step in (1, 2):  # a checkpoint appears between two requests
            checkpoint(save, step)
            t = httpx.get(f"{url}/api/trainings/0").json()
            assert (t["state"], t["step"]) == ("training", step)
            assert [(p["step"], p["reward"]) for p in t["curve"]] == list(
                zip(range(1, step + 1), REWARDS[:step], strict=True)
            )
            assert t["curve"][-1]["step_time"] == 200.0 + step and t["after"] is None
        (half := save / CHECKPOINTS / "checkpoint-3").mkdir()  # being written: no state yet
        (half / "trainer_state.json").write_text('{"global_step": 3, "log_hi')
        assert httpx.get(f"{url}/api/trainings/0").json()["step"] == 2

        shutil.rmtree(half)
        checkpoint(save, 3)
        finish(out, saved="runs/transfer/model")  # as given to train, from where it ran
        overview = httpx.get(f"{url}/api/overview").json()
        (t,) = overview["trainings"]
        assert [r["name"] for r in overview["runs"]] == ["oracle"]
        assert (t["state"], t["step"], t["minutes"]) == ("ended", 3, 42.5)
        assert t["result"] == str(out / "transfer-grpo-cpu.json")
        after = judged(AFTER)
        assert t["after"]["pooled"] == after.pooled.model_dump(mode="json")
        assert t["after"]["pooled"]["success"] == 0.85
        assert t["after"]["per_world"]["retail"]["ci95"] == list(wilson(8, 10))
        assert t["before"]["per_world"]["retail"]["ci95"] == list(wilson(1, 10))
        assert t["separated"] is True  # [0.64, 0.95] lies above [0.05, 0.36]
        assert [p["reward"] for p in t["curve"]] == REWARDS
        assert httpx.get(f"{url}/api/trainings/1").status_code == 404


def test_a_result_file_alone_and_what_is_refused(tmp_path: Path) -> None:
    save = tmp_path / "model"
    start(save)
    checkpoint(save, 3)
    (elsewhere := tmp_path / "elsewhere").mkdir()  # not beside the save folder
    result = finish(elsewhere, saved=str(save))
    board = Dashboard.open([result])
    assert board.runs == [] and board.trainings[0].save == save
    t = board.training(0)
    assert t["state"] == "ended" and t["curve"][0]["reward_std"] == 0.3  # from the checkpoint
    shutil.rmtree(save)  # trained without a save folder: the result's own curve
    t = Dashboard.open([result]).training(0)
    assert [p["reward"] for p in t["curve"]] == REWARDS and t["after"]["pooled"]["tasks"] == 20

    start(bad := tmp_path / "bad")
    run = json.loads((bad / RUN_FILE).read_text())
    run["before"]["pooled"]["ci95"] = "wide"
    (bad / RUN_FILE).write_text(json.dumps(run))
    t = Dashboard.open([bad]).training(0)
    assert t["state"] == "unreadable" and "run.json does not read" in t["error"]
    assert t.keys() == board.training(0).keys() and t["curve"] == [] and t["before"] is None

    (other := tmp_path / "notes.json").write_text('{"worlds": 40}')
    with pytest.raises(NotARun, match="neither a trajectory store nor a training run"):
        Dashboard.open([other])
    refused = CliRunner().invoke(cli, ["dashboard", str(other)])
    said = " ".join(refused.output.split())  # the message wraps where the path's length falls
    assert refused.exit_code == 2 and "neither a trajectory store" in said
    missing = CliRunner().invoke(cli, ["dashboard", str(tmp_path / "nothing")])
    said = " ".join(missing.output.split())
    assert missing.exit_code == 2 and "no trajectory store or training run" in said


@CHROMIUM
def test_the_page_shows_the_training_section(store: Path, tmp_path: Path, driver: Any) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    save = tmp_path / "model"
    start(save)
    checkpoint(save, 1)

    def shown() -> dict[str, str]:
        """What the training section shows, read in one go (the page redraws what changed)."""
        return dict(driver.execute_script("""
            const q = s => [...document.querySelectorAll(s)];
            const line = q("svg.chart[data-title^='training reward'] polyline");
            const out = {step: (q('.card.training [data-key="step"]')[0] || {}).textContent,
              lines: line.map(l => l.dataset.run + ':' + l.dataset.points).join(','),
              rollout: q('.card.run[data-run="oracle"]').length};
            for (const td of q('table.heldout tr[data-world] td[data-key]'))
              out[td.parentNode.dataset.world + '/' + td.dataset.key] = td.textContent;
            return out;
        """))  # fmt: skip

    with running(Dashboard.open([store, save], refresh_s=0.3)) as url:
        driver.get(url + "/")
        WebDriverWait(driver, 20, 0.1).until(lambda d: shown().get("step") == "step 1 of 3")
        page = shown()
        assert page["pooled/before"] == "15% [5%, 36%]" and page["hotel/after"] == "–"
        assert page["pooled/change"] == "–"
        assert page["lines"] == "model:1" and page["rollout"] == 1  # the rollout run beside it
        checkpoint(save, 2)
        WebDriverWait(driver, 20, 0.1).until(lambda d: shown().get("step") == "step 2 of 3")
        assert shown()["lines"] == "model:2"
        checkpoint(save, 3)
        finish(tmp_path, saved=str(save))  # the run ends: after beside before
        WebDriverWait(driver, 20, 0.1).until(lambda d: shown().get("pooled/after", "–") != "–")
        page = shown()
        assert (page["pooled/after"], page["pooled/change"]) == ("85% [64%, 95%]", "+70 pts")
        assert page["step"] == "step 3 of 3" and page["lines"] == "model:3"
