"""Model-written domains: the judge that reads a reply, compiles it, audits it and says what
went wrong; and the whole loop with the embedded model behind its OpenAI-compatible server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from envfactory.synth.compose import synthesize
from envfactory.synth.writer import WriterSettings, _judge, read_reply, seed_names

SETTINGS = WriterSettings(base_url="http://127.0.0.1:9", model="none", audit_n=40, diversity=60)


def test_a_good_domain_in_a_reply_passes() -> None:
    body = yaml.safe_dump(synthesize(2).domain, sort_keys=False)
    text = "Here it is:\n```yaml\n" + body + "```\nDone."
    stage, detail, data = _judge(text, "Acme, repairs for tenants", SETTINGS)
    assert stage == "passed" and detail == "" and data is not None
    assert data["id"] == "written-acme-repairs-for-tenants"


def test_each_failure_goes_back_to_the_model_with_its_reason() -> None:
    assert _judge("servers: [one, two", "s", SETTINGS)[0] == "unparsable"
    broken = synthesize(2).domain | {"actions": []}
    stage, detail, _ = _judge(yaml.safe_dump(broken, sort_keys=False), "s", SETTINGS)
    assert stage == "compile_error" and detail
    lonely = synthesize(2).domain
    lonely["goals"] = [g for g in lonely["goals"] if g["level"] == 1]
    stage, detail, _ = _judge(json.dumps(lonely), "s", SETTINGS)  # JSON is YAML too
    assert stage in ("no_tasks", "audit_failure") and detail


def test_read_reply_refuses_what_is_not_a_mapping() -> None:
    with pytest.raises(ValueError, match="mapping"):
        read_reply("- just\n- a list")
    assert read_reply('```json\n{"id": "x"}\n```') == {"id": "x"}


def test_seed_names_are_reproducible() -> None:
    assert seed_names(3) == seed_names(3) and len(set(seed_names(20))) == 20


def test_the_embedded_model_writes_end_to_end(tmp_path: Path) -> None:
    """Whatever the 135M model writes is judged, round by round, and reported."""
    done = subprocess.run(
        [sys.executable, "-m", "envfactory", "synth", "--writer", "local", "--n", "1",
         "--rounds", "2", "--max-tokens", "48", "--out", str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert summary["generated"] == 1 and summary["model"] == "SmolLM2-135M-Instruct"
    assert len(summary["yield_per_round"]) == 2 and summary["passed_audit"] in (0, 1)
    report = json.loads((tmp_path / "writer-report.json").read_text())
    (result,) = report["results"]
    assert result["stages"] and all(s in (
        "no_reply", "unparsable", "compile_error", "no_tasks", "audit_failure", "passed"
    ) for s in result["stages"])  # fmt: skip
    assert "no_reply" not in result["stages"]  # the loopback server answered every round
