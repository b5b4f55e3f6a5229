"""``envfactory train`` across worlds keeps its model: the contracts on a few steps of the tiny
model (a two-layer Qwen2 saved in a folder, loaded as ``--model DIR``), which keeps each run
to seconds. A trained-on world is refused as an evaluation world before anything loads; the
saved folder loads everywhere ``--model`` does and gives the greedy tokens the trained model
gave; a run stopped after a checkpoint and resumed ends where a straight run ends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_cli import cli

from envfactory.training.drawn import curriculum_at
from envfactory.training.grpo_cpu import (
    CHECKPOINTS,
    HARNESS,
    NothingToResume,
    NotReusable,
    TrainSettings,
    judged_before,
    run,
    save_model,
    train_refs,
)
from envfactory.training.judge import NotJudgeable, judge, judged_level

pytestmark = pytest.mark.integrations


def settings(steps: int, stop_after: int | None = None) -> TrainSettings:
    """Two worlds trained, one judged; weight decay so that every step moves the weights (the
    random model earns no reward, so its policy gradient is zero) and a resumed run that lost
    the optimizer's or the schedule's state would end elsewhere."""
    return TrainSettings(
        worlds=["hotel", "retail"],
        eval_worlds=["airline", "banking"],
        steps=steps,
        prompts_per_step=2,
        group_size=2,
        learning_rate=1e-2,
        weight_decay=0.5,
        eval_tasks=2,
        max_new_tokens=16,
        threads=1,
        stop_after=stop_after,
    )


@pytest.fixture(scope="module")
def straight(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Two steps in one go, saved."""
    root = tmp_path_factory.mktemp("straight")
    return root / "model", run(settings(2), root, str(tiny), save=root / "model")


def weights(folder: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def test_a_trained_on_world_is_refused_as_an_evaluation_world(tmp_path: Path) -> None:
    done = cli(
        "train", "--worlds", "hotel,retail", "--eval-worlds", "airline,retail",
        "--out", str(tmp_path), ok=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "retail: trained on and also an evaluation world" in " ".join(done.stderr.split())
    assert "airline" not in done.stderr.split(":")[0]
    assert not list(tmp_path.iterdir())  # refused before anything ran
    assert judged_level("hotel", 0) == 0 and judged_level("blotto", 0) == 1  # its first
    with pytest.raises(NotJudgeable, match="no level 9"):
        judged_level("hotel", 9)
    with pytest.raises(NothingToResume, match="no checkpoint"):
        run(settings(1), tmp_path, save=tmp_path / "none", resume=True)


def test_results_hold_the_transfer_contract(straight: tuple[Path, dict[str, Any]]) -> None:
    _, result = straight
    assert result["train_worlds"] == ["hotel", "retail"]
    assert result["eval_worlds"] == ["airline", "banking"]
    assert result["in_domain"] is False and result["model"] == "tiny-qwen2"
    for key in ("before", "after"):
        held = result[key]
        assert held["split"] == "test" and held["tasks"] == 4  # pooled: 2 tasks a world
        low, high = held["ci95"]
        assert 0 <= low <= held["success"] <= high <= 1
    assert set(result["per_world"]) == {"airline", "banking"}
    for world in result["per_world"].values():
        assert world["after"]["tasks"] == world["before"]["tasks"] == 2
        assert world["after"]["difficulty"] == 0
    assert len(result["curve"]) == 2
    assert sum(result["episodes"].values()) == 8  # 2 steps x 2 tasks x 2 episodes
    assert set(result["episodes"]) <= {"hotel/0", "retail/0"}


def test_save_round_trips_a_model_with_the_same_greedy_tokens(tmp_path: Path, tiny: Path) -> None:
    """What ``--save`` writes, ``--model DIR`` loads, and it decodes greedily as it did."""
    import copy

    import torch

    from envfactory.integrations.embedded import load

    given = load(tiny)
    model = copy.deepcopy(given.model)
    with torch.no_grad():  # a model unlike the one on disk, as training leaves it
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    save_model(model, given.tokenizer, tmp_path / "kept")
    kept = load(tmp_path / "kept")
    assert kept.stop_ids == given.stop_ids and kept.name == "kept"
    prompt = given.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Cancel booking BK-00012."}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    greedy = {"max_new_tokens": 24, "do_sample": False}
    with torch.no_grad():
        ours, theirs, before = (
            m.generate(**prompt, **greedy)[0].tolist() for m in (model, kept.model, given.model)
        )
    assert ours == theirs and ours != before


def test_the_saved_run_scores_again_what_it_measured(
    straight: tuple[Path, dict[str, Any]], tiny: Path
) -> None:
    """The folder a run saved is its trained model: judged again from disk, it scores what the
    run measured after training, and its weights are not the ones it was given."""
    import torch

    from envfactory.integrations.embedded import load
    from envfactory.integrations.local_model import TransformersPolicy

    folder, result = straight
    moved = [
        not torch.equal(p, q)
        for p, q in zip(weights(folder).values(), weights(tiny).values(), strict=True)
    ]
    assert any(moved)
    trained, s = load(folder), settings(2)
    policy = TransformersPolicy(
        trained.model, trained.tokenizer, temperature=0.0, max_new_tokens=16,
        stop_ids=trained.stop_ids,
    )  # fmt: skip
    again = judge(policy, s.judged, s.eval_tasks, s.difficulty, HARNESS)
    assert again.pooled.model_dump(mode="json") == result["after"]


def test_a_run_takes_its_start_s_judgement_from_another_run(
    straight: tuple[Path, dict[str, Any]], tiny: Path, tmp_path: Path
) -> None:
    """``before_from``: a run that judges the same model alike takes the other run's judgement
    (planted here with a score no judging of the tiny model gives, so a second judging would
    show); one that judges otherwise is refused, naming what differs, before anything runs."""
    folder, whole = straight
    planted = json.loads((folder / "run.json").read_text())
    mark = {"success": 0.75, "ci95": [0.3, 0.95]}
    planted["before"]["pooled"] |= mark
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "run.json").write_text(json.dumps(planted))
    less = settings(1).model_copy(update={"worlds": ["retail"]})  # trains otherwise
    result = run(less, tmp_path, str(tiny), before_from=tmp_path / "other")
    assert result["before"] == {**whole["before"], **mark}
    assert result["before_from"] == str(tmp_path / "other")
    for judged in ({"eval_tasks": 3}, {"eval_worlds": ["airline", "clinic"]}):
        with pytest.raises(NotReusable, match="judged otherwise"):
            run(
                settings(1).model_copy(update=judged),
                tmp_path / "no",
                str(tiny),
                before_from=folder,
            )
    with pytest.raises(NotReusable, match="the model"):
        run(settings(1), tmp_path / "no", None, before_from=folder)
    assert not (tmp_path / "no").exists()
    (tmp_path / "result.json").write_text(json.dumps(whole))  # a result outlives its folder
    given = str(tiny.resolve())
    from_result = judged_before(tmp_path / "result.json", less, given)
    assert from_result == judged_before(folder, less, given)
    fewer = less.model_copy(update={"eval_worlds": ["airline"]})  # some of the worlds judged
    airline = judged_before(tmp_path / "result.json", fewer, given)
    assert list(airline.per_world) == ["airline"]
    alone = from_result.per_world["airline"]
    assert (airline.pooled.tasks, airline.pooled.success) == (alone.tasks, alone.success)
    (tmp_path / "unnamed.json").write_text(json.dumps(whole | {"model_path": "elsewhere"}))
    with pytest.raises(NotReusable, match="the model"):
        judged_before(tmp_path / "unnamed.json", less, given)


def test_the_transfer_report_holds_the_contract_and_refuses_what_is_not_comparable(
    straight: tuple[Path, dict[str, Any]], tiny: Path, tmp_path: Path
) -> None:
    """``python -m envfactory.training.transfer``: the main run's contract keys, each ablation
    by name, a plot beside it; an ablation trained for other steps is refused (exit 2)."""
    import subprocess
    import sys

    folder, whole = straight
    less = settings(2).model_copy(update={"worlds": ["retail"]})  # as the ablations run
    one = run(less, tmp_path, str(tiny), before_from=folder)
    airline = one["per_world"]["airline"]
    files = {
        "main": whole,
        "one": one,
        "longer": one | {"settings": one["settings"] | {"steps": 3}},
        "fewer": one | {"eval_worlds": ["airline"], "per_world": {"airline": airline}},
        "elsewhere": one | {"eval_worlds": ["hotel"]},
    }
    for name, result in files.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(result))

    def report(*ablations: str) -> subprocess.CompletedProcess[str]:
        named = [f"--ablation={a}={tmp_path / a}.json" for a in ablations]
        command = [
            sys.executable,
            "-m",
            "envfactory.training.transfer",
            str(tmp_path / "main.json"),
        ]
        out = ["--out", str(tmp_path / "report" / "transfer.json")]
        return subprocess.run(command + named + out, capture_output=True, text=True, check=False)

    done = report("one")
    assert done.returncode == 0, done.stderr
    kept = json.loads((tmp_path / "report" / "transfer.json").read_text())
    contract = {"train_worlds", "eval_worlds", "model", "minutes", "before", "after", "per_world"}
    assert contract | {"ablation"} <= kept.keys()
    assert kept["before"] == whole["before"] and kept["after"] == whole["after"]
    assert kept["ablation"]["one"]["train_worlds"] == ["retail"]
    assert kept["ablation"]["one"]["after"] == one["after"]
    assert (tmp_path / "report" / "transfer.png").read_bytes()[:4] == b"\x89PNG"
    refused = report("longer")
    assert refused.returncode == 2 and "steps" in refused.stderr
    # judged on one of the main run's two worlds: compared with the main run on that one
    assert report("fewer").returncode == 0
    fewer = json.loads((tmp_path / "report" / "transfer.json").read_text())["ablation"]["fewer"]
    for key in ("before", "after"):
        alone, same = whole["per_world"]["airline"][key], fewer["main_on_its_worlds"][key]
        assert (same["tasks"], same["success"]) == (alone["tasks"], alone["success"])
    assert "main_on_its_worlds" not in kept["ablation"]["one"]
    refused = report("elsewhere")
    assert refused.returncode == 2 and "judged worlds" in refused.stderr


def test_a_world_without_a_level_climbs_its_own() -> None:
    """``--levels 0,1`` over worlds of which one has no starter level (negotiation's start at
    1, as tau2-retail's do): that one climbs the levels it has (the curriculum's and the warm
    start's tasks alike), the others all."""
    s = TrainSettings(worlds=["negotiation", "hotel"], levels=[0, 1])
    assert s.climbs_of("negotiation") == [1] and s.climbs_of("hotel") == [0, 1]
    drawn = {(r.env_id, r.difficulty) for r in train_refs(s)}
    assert drawn == {("negotiation", 1), ("hotel", 0), ("hotel", 1)}


def test_a_stopped_run_resumes_from_its_checkpoint(
    straight: tuple[Path, dict[str, Any]], tiny: Path, tmp_path: Path
) -> None:
    folder, whole = straight
    save = tmp_path / "model"
    first = run(settings(2, stop_after=1), tmp_path, str(tiny), save=save)
    assert first["stopped_at"] == 1 and not (tmp_path / "train-grpo-cpu.json").exists()
    assert [p.name for p in (save / CHECKPOINTS).glob("checkpoint-*")] == ["checkpoint-1"]
    # resumed with only the step budget given: the rest comes from the saved run
    given = TrainSettings(steps=2, threads=1)
    second = run(given, tmp_path, None, save=save, resume=True)
    assert second["resumed_from"] == "checkpoint-1"
    assert [p.name for p in (save / CHECKPOINTS).glob("checkpoint-*")] == ["checkpoint-2"]
    started = json.loads((save / "run.json").read_text())
    assert second["settings"] == {**started["settings"], "stop_after": None}
    assert second["before"] == whole["before"]  # the saved start, not judged again
    state = json.loads((save / CHECKPOINTS / "checkpoint-2" / "trainer_state.json").read_text())
    assert state["global_step"] == 2
    assert second["curve"] == whole["curve"] and second["curve"][0] == first["curve"][0]
    # the curriculum drew what the straight run drew, and the weights are the straight run's
    ours, theirs = (curriculum_at(f / CHECKPOINTS / "checkpoint-2") for f in (save, folder))
    assert ours.draws == theirs.draws == 4
    assert ours.state() == theirs.state()
    assert second["episodes"] == whole["episodes"]  # counted over both parts
    import torch

    for (name, p), q in zip(weights(save).items(), weights(folder).values(), strict=True):
        assert torch.equal(p, q), name


def test_lora_checkpoints_hold_adapters_resume_and_merge_into_a_plain_folder(
    tiny: Path, tmp_path: Path
) -> None:
    """With ``lora_rank`` a checkpoint holds the adapters, not the model; a stopped run
    resumes from them to the adapters of a straight run; the saved folder is a plain model
    folder (the base model's tensor names, no adapter file) that ``--model DIR`` loads. The
    random model earns no reward, so B stays zero and the merged update B·A is zero: the saved
    weights are the given ones, while weight decay moves A (the checkpoints differ by step)."""
    import torch
    from safetensors.torch import load_file

    from envfactory.integrations.embedded import load

    def lora(steps: int, stop_after: int | None = None) -> TrainSettings:
        return settings(steps, stop_after).model_copy(update={"lora_rank": 4})

    straight, parted = tmp_path / "straight", tmp_path / "parted"
    whole = run(lora(2), tmp_path, str(tiny), save=straight)
    first = run(lora(2, stop_after=1), tmp_path, str(tiny), save=parted)
    assert first["stopped_at"] == 1
    one = load_file(str(parted / CHECKPOINTS / "checkpoint-1" / "adapter_model.safetensors"))
    assert not (parted / CHECKPOINTS / "checkpoint-1" / "model.safetensors").exists()
    assert one and all("lora_" in name for name in one)
    second = run(TrainSettings(steps=2, threads=1), tmp_path, None, save=parted, resume=True)
    assert second["settings"]["lora_rank"] == 4 and second["curve"] == whole["curve"]
    ours, theirs = (
        load_file(str(f / CHECKPOINTS / "checkpoint-2" / "adapter_model.safetensors"))
        for f in (parted, straight)
    )
    assert ours.keys() == one.keys()
    for name, p in ours.items():
        assert torch.equal(p, theirs[name]), name
    assert any(not torch.equal(p, one[name]) for name, p in ours.items())  # A decayed
    for folder in (straight, parted):
        assert not (folder / "adapter_model.safetensors").exists()
        saved, given = weights(folder), weights(tiny)
        assert saved.keys() == given.keys()
        assert all(torch.equal(saved[k], given[k]) for k in given)  # B·A = 0: no reward
        assert load(folder).name == folder.name
