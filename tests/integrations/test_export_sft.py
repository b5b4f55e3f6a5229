"""`envfactory export-sft`: gold plans as chat-format SFT data. The command as a user runs it,
its files read back by `datasets` (json and parquet, the same rows), nothing hidden in them,
and one real SFTTrainer step on each format: Hermes text on the embedded model (whose chat
template knows no tools), native tool calls on the tiny model (whose template renders them)."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
from test_cli import cli
from typer.testing import CliRunner

from envfactory.cli.main import app
from envfactory.rollout.types import TaskRef
from envfactory.training.export import Format, harness_for, row_keys
from envfactory.training.sft import solved

pytestmark = pytest.mark.integrations
datasets = pytest.importorskip("datasets")

TASKS = 3  # hotel's starter level: one tool shown, short transcripts
BASE = ["--envs", "hotel", "--difficulties", "0", "--tasks", str(TASKS)]


def run(*args: str) -> Any:
    """The command in this process (the worlds it builds are kept for the next call)."""
    return CliRunner().invoke(app, ["export-sft", *args])


def said(result: Any) -> str:
    """What the command printed, as one line (rich wraps long lines)."""
    return " ".join((result.stdout + result.stderr).split())


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A native export made by the installed command, in its own process."""
    out = tmp_path_factory.mktemp("native")
    done = cli("export-sft", *BASE, "--out", str(out), "--json")
    return out, json.loads(done.stdout)


@pytest.fixture(scope="module")
def hermes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("hermes")
    done = run(*BASE, "--format", "hermes", "--out", str(out), "--json")
    assert done.exit_code == 0, said(done)
    return out, json.loads(done.stdout)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_summary_and_files_hold_the_train_split_only(
    native: tuple[Path, dict[str, Any]],
) -> None:
    out, summary = native
    assert set(summary) >= {"rows", "episodes", "per_world", "files", "format", "splits"}
    assert summary["rows"] == summary["episodes"] == TASKS and summary["unsolved"] == 0
    assert summary["per_world"] == {"hotel": TASKS} and summary["splits"] == ["train"]
    assert summary["format"] == "native" and summary["warnings"] == []
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == ["jsonl/train.jsonl", "parquet/train.parquet"]
    assert sorted(summary["files"]) == sorted(str(out / f) for f in files)
    rows = lines(out / "jsonl" / "train.jsonl")
    assert [(r["split"], r["difficulty"], r["task_index"]) for r in rows] == [
        ("train", 0, i) for i in range(TASKS)
    ]
    assert all(r["reward"] == 1.0 and r["env_id"] == "hotel" for r in rows)


def test_json_and_parquet_load_as_the_same_rows(native: tuple[Path, dict[str, Any]]) -> None:
    out, _ = native
    by_json = datasets.load_dataset("json", data_dir=str(out / "jsonl"))
    by_parquet = datasets.load_dataset("parquet", data_dir=str(out / "parquet"))
    assert list(by_json) == list(by_parquet) == ["train"]  # the file names are the splits
    assert by_json["train"].features == by_parquet["train"].features
    assert by_json["train"].to_list() == by_parquet["train"].to_list()
    assert len(by_json["train"]) == TASKS


def test_rows_hold_the_transcript_and_nothing_hidden(
    native: tuple[Path, dict[str, Any]], hermes: tuple[Path, dict[str, Any]]
) -> None:
    refs = [TaskRef("hotel", "train", 0, i) for i in range(TASKS)]
    exports: list[tuple[Path, Format]] = [(native[0], "native"), (hermes[0], "hermes")]
    for out, fmt in exports:
        rows = lines(out / "jsonl" / "train.jsonl")
        played = solved(refs, harness_for(fmt))
        for row, record in zip(rows, played, strict=True):
            assert tuple(row) == row_keys(fmt)
            assert row["task_id"] == record.task_id
            shown = [{k: v for k, v in m.items() if v not in (None, "")} for m in row["messages"]]
            told = [{k: v for k, v in m.items() if v not in (None, "")} for m in record.messages]
            assert shown == told  # exactly the transcript the oracle's episode had
            text = json.dumps(row)
            for hidden in ("gold_plan", "target", "rubric", "fingerprint", "profile", "answers"):
                assert f'"{hidden}"' not in text
    native_row = lines(native[0] / "jsonl" / "train.jsonl")[0]
    calls = [c for m in native_row["messages"] for c in m["tool_calls"] or []]
    assert calls and all(isinstance(c["function"]["arguments"], str) for c in calls)
    assert {t["function"]["name"] for t in json.loads(native_row["tools"])}
    hermes_row = lines(hermes[0] / "jsonl" / "train.jsonl")[0]
    assert {m["role"] for m in hermes_row["messages"]} == {"system", "user", "assistant"}
    assert any("<tool_call>" in m["content"] for m in hermes_row["messages"])
    assert "<tools>" in hermes_row["messages"][0]["content"]


def test_the_test_split_is_refused_unless_allowed_and_then_warned(tmp_path: Path) -> None:
    refused = run(*BASE, "--split", "train,test", "--out", str(tmp_path / "no"))
    assert refused.exit_code == 2 and "--allow-test" in said(refused)
    assert not (tmp_path / "no").exists()
    allowed = run(
        "--envs", "hotel", "--difficulties", "0", "--tasks", "1", "--split", "test",
        "--allow-test", "--out", str(tmp_path / "yes"), "--json",
    )  # fmt: skip
    assert allowed.exit_code == 0, said(allowed)
    assert "WARNING" in allowed.stderr and "test split" in " ".join(allowed.stderr.split())
    summary = json.loads(allowed.stdout)
    assert summary["splits"] == ["test"] and summary["warnings"]
    assert lines(tmp_path / "yes" / "jsonl" / "test.jsonl")[0]["split"] == "test"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--envs", "hotel,no-such-world"], "no-such-world"),
        (["--envs", "hotel", "--split", "dev"], "--split: dev is not one of"),
        (["--envs", "hotel", "--difficulties", "9"], "hotel has none of difficulties [9]"),
        (["--envs", "hotel", "--format", "chatml"], "chatml"),
    ],
)
def test_bad_arguments_exit_2_with_the_reason(args: list[str], words: str, tmp_path: Path) -> None:
    result = run(*args, "--out", str(tmp_path / "out"))
    assert result.exit_code == 2 and words in said(result)


def sft_step(model: Any, tokenizer: Any, data: Any, tmp_path: Path) -> float:
    """One SFTTrainer step on ``data``; returns its loss, and checks the weights moved."""
    import torch
    from trl import SFTConfig, SFTTrainer

    torch.set_num_threads(1)
    before = [p.detach().clone() for p in model.parameters()]
    args = SFTConfig(
        output_dir=str(tmp_path),
        max_steps=1,
        max_length=48,
        per_device_train_batch_size=1,
        report_to=[],
        use_cpu=True,
        bf16=False,  # TRL turns it on; on a CPU without bf16 units it is ten times slower
        save_strategy="no",
        logging_steps=1,
        optim="sgd",  # one step: the optimiser only has to move the weights, cheaply
        gradient_checkpointing=False,  # short sequences: nothing to save, and faster
        learning_rate=1e-3,
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    loss = trainer.train().training_loss
    after = list(model.parameters())
    assert any(not torch.equal(b, a.detach()) for b, a in zip(before, after, strict=True))
    return float(loss)


def test_one_sft_step_on_the_embedded_model_from_hermes_rows(
    hermes: tuple[Path, dict[str, Any]], embedded: Any, tmp_path: Path
) -> None:
    pytest.importorskip("trl")
    data = datasets.load_dataset("parquet", data_dir=str(hermes[0] / "parquet"))["train"]
    model = copy.deepcopy(embedded.model)  # trained here; the session's copy stays as loaded
    assert math.isfinite(sft_step(model, embedded.tokenizer, data.select([0]), tmp_path))


def test_one_sft_step_on_native_tool_calls(
    native: tuple[Path, dict[str, Any]], model: Any, tokenizer: Any, tmp_path: Path
) -> None:
    """TRL renders the native rows (tools column, tool_calls, tool messages) with a chat
    template that knows tools, and trains on them."""
    pytest.importorskip("trl")
    data = datasets.load_dataset("json", data_dir=str(native[0] / "jsonl"))["train"]
    text = tokenizer.apply_chat_template(
        data[0]["messages"], tools=json.loads(data[0]["tools"]), tokenize=False
    )
    assert "<tool_call>" in text and "<tool_response>" in text and "<tools>" in text
    assert math.isfinite(sft_step(model, tokenizer, data.select([0]), tmp_path))
