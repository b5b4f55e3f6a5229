"""Faults against the live server: the right status, the right retries, never a fake zero."""

from __future__ import annotations

import time

from chat_server import ChatServer, Fault
from openai_runs import FAST_RETRY, run_openai

from envfactory.rollout import EngineConfig, RetryConfig, TaskRef, group_stats

REFS = [TaskRef("retail", "train", d, 0) for d in (1, 2, 3)]


def first_turn(fault: Fault, times: int = 1):  # type: ignore[no-untyped-def]
    """Inject ``fault`` into the first ``times`` attempts of every episode's first turn."""
    return lambda session, turn, attempt: fault if turn == 0 and attempt <= times else None


def always(fault: Fault):  # type: ignore[no-untyped-def]
    return lambda session, turn, attempt: fault


def assert_unscored(records: list, status: str) -> None:  # type: ignore[type-arg]
    for r in records:
        assert r.status == status and r.reward is None and r.error


def test_5xx_is_retried_then_completes(server: ChatServer) -> None:
    server.state.faults = first_turn(Fault("status", status=500), times=2)
    summary, records = run_openai(server, REFS)
    assert summary.status_counts["completed"] == 3 and summary.reward_mean == 1.0
    for r in records:
        assert r.calls[0].attempts == 3 and r.metrics["retries"] == 2 and r.reward == 1.0
    assert summary.retries == 6


def test_persistent_5xx_is_infra_error_never_zero(server: ChatServer) -> None:
    server.state.faults = always(Fault("status", status=503))
    config = EngineConfig(group_size=2, replace_failed=1, retry=FAST_RETRY)
    summary, records = run_openai(server, REFS, config=config)
    # each group: 2 wanted + 1 replacement, all infrastructure failures
    assert len(records) == 9 and summary.status_counts["infra_error"] == 9
    assert_unscored(records, "infra_error")
    assert all(r.calls == [] for r in records)  # no reply was ever recorded
    assert summary.reward_mean is None and summary.groups["incomplete"] == 3
    stats = group_stats(records)
    assert all(g.scored == 0 and g.reward_mean is None for g in stats.values())
    assert "503" in (records[0].error or "") and "3 attempts" in (records[0].error or "")


def test_infra_failures_stay_out_of_group_statistics(server: ChatServer) -> None:
    # the first sample of each group fails for good; the others are fine
    server.state.faults = lambda s, turn, a: (
        Fault("status", status=502) if s.endswith("#0") else None
    )
    config = EngineConfig(group_size=2, retry=FAST_RETRY)
    summary, records = run_openai(server, REFS, config=config)
    assert summary.status_counts == {
        "completed": 6,
        "truncated": 0,
        "timeout": 0,
        "env_error": 0,
        "infra_error": 3,
    }
    assert summary.groups["complete"] == 3 and summary.reward_mean == 1.0
    for g in group_stats(records).values():
        assert g.episodes == 3 and g.scored == 2 and g.reward_mean == 1.0 and g.reward_std == 0


def test_429_honours_retry_after(server: ChatServer) -> None:
    server.state.faults = first_turn(Fault("status", status=429, retry_after="1"))
    config = EngineConfig(retry=RetryConfig(attempts=3, base_s=0.0, max_s=5.0))
    t0 = time.perf_counter()
    _, records = run_openai(server, REFS[:1], config=config)
    assert time.perf_counter() - t0 >= 1.0
    assert records[0].status == "completed" and records[0].calls[0].attempts == 2
    assert records[0].timing.policy_s < 1.0  # waiting is not the policy's time


def test_slow_reply_past_the_call_timeout_is_retried(server: ChatServer) -> None:
    server.state.faults = first_turn(Fault("slow", delay=3.0))
    config = EngineConfig(call_timeout_s=1.0, retry=FAST_RETRY)
    summary, records = run_openai(server, REFS[:2], config=config)
    assert summary.status_counts["completed"] == 2
    assert all(r.calls[0].attempts == 2 for r in records)


def test_always_slow_is_infra_error(server: ChatServer) -> None:
    server.state.faults = always(Fault("slow", delay=2.0))
    config = EngineConfig(call_timeout_s=0.2, replace_failed=0, retry=FAST_RETRY)
    _, records = run_openai(server, REFS[:1], config=config)
    assert_unscored(records, "infra_error")
    assert "no reply within" in (records[0].error or "")


def test_episode_timeout_is_timeout_unscored(server: ChatServer) -> None:
    server.state.delay = 0.2
    config = EngineConfig(episode_timeout_s=0.5, retry=FAST_RETRY)
    summary, records = run_openai(server, [TaskRef("retail", "train", 5, 0)], config=config)
    assert_unscored(records, "timeout")
    r = records[0]
    assert len(r.calls) <= 3 and r.rubric  # judged for the record, not scored
    assert summary.reward_mean is None and summary.status_counts["timeout"] == 1


def test_dropped_connection_is_retried(server: ChatServer) -> None:
    server.state.faults = first_turn(Fault("drop"))
    summary, records = run_openai(server, REFS)
    assert summary.status_counts["completed"] == 3
    assert all(r.calls[0].attempts == 2 and r.reward == 1.0 for r in records)


def test_malformed_json_is_retried_then_infra_error(server: ChatServer) -> None:
    server.state.faults = first_turn(Fault("malformed"))
    _, records = run_openai(server, REFS[:1])
    assert records[0].status == "completed" and records[0].calls[0].attempts == 2
    server.state.reset()
    server.state.faults = always(Fault("malformed"))
    config = EngineConfig(replace_failed=0, retry=FAST_RETRY)
    _, records = run_openai(server, REFS[:1], config=config)
    assert_unscored(records, "infra_error")
    assert "malformed JSON" in (records[0].error or "")


def test_client_errors_are_not_retried(server: ChatServer) -> None:
    server.state.faults = always(Fault("status", status=401, body="invalid api key"))
    config = EngineConfig(replace_failed=0, retry=FAST_RETRY)
    _, records = run_openai(server, REFS[:1], config=config)
    assert_unscored(records, "infra_error")
    assert len(server.state.requests) == 1 and "401" in (records[0].error or "")


def test_context_overflow_truncates(server: ChatServer) -> None:
    overflow = Fault(
        "status", status=400, body="This model's maximum context length is 4096 tokens"
    )
    server.state.faults = lambda s, turn, a: overflow if turn == 2 else None
    _, records = run_openai(server, [TaskRef("retail", "train", 5, 0)])
    r = records[0]
    assert r.status == "truncated" and r.reward is not None and r.reward < 1.0
    assert len(r.calls) == 2 and "context overflow" in (r.error or "")


def test_model_mistakes_are_observations_not_faults(server: ChatServer) -> None:
    """Broken tool-call arguments are the agent's: an error it reads, then it carries on."""
    server.state.faults = lambda s, turn, attempt: Fault("bad_args") if turn == 0 else None
    _, records = run_openai(server, REFS)
    for r in records:
        assert r.status == "completed" and r.reward == 1.0
        assert r.steps[0].kind == "tool_error" and r.steps[0].error == "invalid_arguments"
        assert r.metrics["tool_errors"] >= 1 and "retries" not in r.metrics
