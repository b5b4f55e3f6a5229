"""Grammar-constrained tool calls (``tool_format="grammar"``) with the embedded model: every
call it makes parses and names a tool the task shows, with arguments of the right types; the
format is recorded on the trajectory; and ``envfactory train`` writes its contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import llguidance
import pytest
from test_cli import cli

from envfactory.bench.calibration import single_agent_worlds
from envfactory.harness.config import HarnessConfig
from envfactory.harness.grammar import reply_grammar
from envfactory.integrations.constrained import grammar_tokenizer
from envfactory.integrations.local_model import TransformersPolicy
from envfactory.registry import make
from envfactory.rollout.engine import RolloutEngine
from envfactory.rollout.types import EngineConfig, TaskRef
from envfactory.tools.params import validate
from envfactory.trajectory.record import EpisodeRecord
from envfactory.web import browser
from envfactory.web.episode import page_choices

pytestmark = pytest.mark.integrations


@pytest.fixture(scope="module")
def policy() -> TransformersPolicy:
    return TransformersPolicy.from_path(None, temperature=0.7, max_new_tokens=64)


def grammar_episodes(
    policy: TransformersPolicy, refs: list[TaskRef], max_turns: int
) -> list[EpisodeRecord]:
    """``policy``'s episodes of ``refs`` under the grammar harness, the first reply a call."""
    records: list[EpisodeRecord] = []
    engine = RolloutEngine(
        policy,
        harness=HarnessConfig(tool_format="grammar", tool_choice="first", max_turns=max_turns),
        config=EngineConfig(concurrency=8),
        on_episode=records.append,
        keep_records=False,
    )
    engine.run_sync(refs)
    return records


def test_the_reply_grammar_of_every_world_compiles(policy: TransformersPolicy) -> None:
    tok = grammar_tokenizer(policy.tokenizer, policy.end_id)
    for env_id in single_agent_worlds():
        tools = make(env_id).tools()
        for required in (False, True):
            problem = llguidance.LLMatcher.validate_grammar(reply_grammar(tools, required), tok)
            assert problem == "", (env_id, problem)


def test_the_grammar_admits_calls_of_shown_tools_only(policy: TransformersPolicy) -> None:
    shown = ("get_reservation", "get_guest")
    tools = [t for t in make("hotel").tools() if t["function"]["name"] in shown]
    tok = grammar_tokenizer(policy.tokenizer, policy.end_id)
    grammar = reply_grammar(tools, call_required=True)

    def accepts(text: str) -> bool:
        matcher = llguidance.LLMatcher(tok, grammar, log_level=0)
        ids = [*policy.tokenizer.encode(text, add_special_tokens=False), policy.end_id]
        return matcher.consume_tokens(ids) and matcher.is_stopped()

    good = (
        '<tool_call>\n{"name": "get_reservation", "arguments": {"reservation_id": "RES-1"}}\n'
        "</tool_call>"
    )
    assert accepts(good)
    assert not accepts(good.replace("get_reservation", "cancel_reservation"))  # not shown
    assert not accepts(good.replace("reservation_id", "guest_id"))  # not its parameter
    assert not accepts(good.replace('"RES-1"', "17"))  # not its type
    assert not accepts("Sure, done!")  # the first reply must call when it is required
    assert not accepts(good + " and more")  # one call, then the reply ends


def test_a_pages_element_ids_hold_the_bid_of_a_browser_action(policy: TransformersPolicy) -> None:
    """A web world offers the ids on the page as ``choices``: under the grammar a browser
    action names one of them, of the kind it acts on (text boxes to fill, the rest to click),
    and an action with nothing to act on is left out."""
    tok = grammar_tokenizer(policy.tokenizer, policy.end_id)
    page = "    [nav-get_guest] link 'Get guest'\n      [get_guest-guest_id] textbox 'Guest id'\n"
    grammar = reply_grammar(make("web-hotel").tools(), True, page_choices(page))

    def accepts(name: str, arguments: str) -> bool:
        text = f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'
        matcher = llguidance.LLMatcher(tok, grammar, log_level=0)
        ids = [*policy.tokenizer.encode(text, add_special_tokens=False), policy.end_id]
        return matcher.consume_tokens(ids) and matcher.is_stopped()

    assert accepts("click", '{"bid": "nav-get_guest"}')
    assert accepts("fill", '{"bid": "get_guest-guest_id", "value": "GST-00013"}')
    assert not accepts("click", '{"bid": "3"}')  # not on the page
    assert not accepts("click", '{"bid": "get_guest-guest_id"}')  # a text box is filled
    assert not accepts("fill", '{"bid": "nav-get_guest", "value": "x"}')  # a link is clicked
    assert not accepts("select_option", '{"bid": "nav-get_guest", "options": "x"}')  # no list
    assert accepts("goto", '{"url": "act/get_guest"}')  # no choices offered for url


@pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))
def test_in_a_web_world_the_model_acts_on_elements_of_the_page(policy: TransformersPolicy) -> None:
    records = grammar_episodes(
        policy, [TaskRef("web-hotel", "validation", 0, i) for i in range(2)], 3
    )
    steps = [s for rec in records for s in rec.steps if s.actor == "agent"]
    calls = [s for s in steps if s.action.get("type") == "tool_call"]
    assert len(records) == 2 and calls
    assert all(s.error != "not_found" for s in calls)  # every id it named was on the page


def test_grammar_episodes_call_shown_tools_with_valid_arguments(
    policy: TransformersPolicy,
) -> None:
    refs = [TaskRef(env, "validation", 0, i) for env in ("hotel", "hr") for i in range(2)]
    records = grammar_episodes(policy, refs, 2)
    assert len(records) == 4
    for rec in records:
        assert rec.scored and rec.model.tool_format == "grammar"
        first = rec.calls[0]
        assert first.output_ids and len(first.output_logprobs or []) == len(first.output_ids)
        assert all(lp <= 0 for lp in first.output_logprobs or [])
        action = rec.steps[0].action
        assert action["type"] == "tool_call"
        task = make(rec.env_id).task("validation", 0, int(rec.task_id.rsplit("/", 1)[1]))
        assert action["tool"] in task.public.tools
        # a finished call whose JSON was read has a known tool and arguments its schema takes
        # (a string value may hold "</tool_call>", which ends the block early when it is
        # read); a domain's own check may still refuse them, e.g. a phone number's layout
        if first.finish_reason == "stop" and isinstance(action["arguments"], dict):
            assert rec.steps[0].error != "unknown_tool"
            params = make(rec.env_id).world.tools[action["tool"]].params
            validate(action["tool"], params, action["arguments"])  # raises if not


def test_tags_that_are_tokens_of_their_own_are_decoded_as_tokens(
    tokenizer: Any, model: Any
) -> None:
    """The tiny tokenizer has ``<tool_call>`` and ``</tool_call>`` as added tokens, as Qwen's
    and Hermes' do, which llguidance matches only as tokens: every finished first reply is
    still a call of a shown tool (the tags spelled as text, the matcher failed on the first
    token and no call parsed)."""
    policy = TransformersPolicy(model, tokenizer, temperature=0.7, max_new_tokens=128)
    assert policy.tag_tokens() and not TransformersPolicy.from_path(None).tag_tokens()
    records = grammar_episodes(policy, [TaskRef("hotel", "validation", 0, i) for i in range(4)], 1)
    finished = [rec for rec in records if rec.calls[0].finish_reason == "stop"]
    assert len(records) == 4 and finished
    for rec in finished:
        action = rec.steps[0].action
        assert action["type"] == "tool_call", action
        task = make("hotel").task("validation", 0, int(rec.task_id.rsplit("/", 1)[1]))
        assert action["tool"] in task.public.tools


def test_train_writes_the_contract(tmp_path: Path, tokenizer: Any, model: Any) -> None:
    """A one-step run (two episodes) on two test tasks of a model given by ``--model``: the JSON
    and the curve are written. The tiny model keeps it to seconds; the embedded model's own
    GRPO step is tests/integrations/test_trl.py's."""
    folder = tmp_path / "tiny-qwen2"
    tokenizer.save_pretrained(folder)
    model.save_pretrained(folder)
    result = cli(
        "train", "--world", "hotel", "--steps", "1", "--prompts-per-step", "1",
        "--group-size", "2", "--eval-tasks", "2", "--max-new-tokens", "32", "--threads", "1",
        "--model", str(folder), "--out", str(tmp_path), "--json",
    )  # fmt: skip
    data = json.loads(result.stdout)
    saved = json.loads((tmp_path / "train-grpo-cpu.json").read_text())
    assert data == saved and (tmp_path / "train-grpo-cpu.png").stat().st_size > 0
    assert {"world", "model", "minutes", "before", "after"} <= set(saved)
    assert saved["world"] == "hotel" and saved["model"] == "tiny-qwen2"
    for key in ("before", "after"):
        held = saved[key]
        assert held["split"] == "test" and held["tasks"] == 2
        low, high = held["ci95"]
        assert 0 <= low <= held["success"] <= high <= 1
    assert len(saved["curve"]) == 1


def test_the_audit_reports_the_real_models_band(tmp_path: Path) -> None:
    result = cli(
        "audit", "library", "-n", "20", "--model-tasks", "1", "--model-levels", "0",
        "--json", "--report", str(tmp_path / "audit.html"), ok=False,
    )  # fmt: skip
    (row,) = json.loads(result.stdout)
    band = row["real_model"]
    assert band["model"] == "SmolLM2-135M-Instruct" and band["tool_format"] == "grammar"
    assert band["tasks"] == 1 and set(band["success"]) == {"0"}
    assert band["reach"] == {"0": 1.0}  # each episode got the calls its plan needs
    assert all(0 <= s <= 1 for s in band["success"].values())
    assert band["band"] == [int(d) for d, s in band["success"].items() if 0 < s < 1]
