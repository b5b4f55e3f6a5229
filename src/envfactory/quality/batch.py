"""Auditing many worlds in one run (an import, a synthesis): the verdict of each, kept short,
and the failed checks named so they can be counted across the run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from envfactory.contract.environment import Environment
from envfactory.quality.audit import AuditReport, audit
from envfactory.tasks.seeds import SPLIT_SHARES

GRADING = "noisy-oracle success does not fall"
FULL_N = 300


def empty_cell(env: Environment) -> str | None:
    """Why some (split, difficulty) cell of ``env`` has no task, or None when all have."""
    for split, _ in SPLIT_SHARES:
        for d in env.difficulties:
            if env.tasks_up_to(split, d, 1) == 0:
                return f"no task fits {split} at difficulty {d}"
    return None


def check_name(problem: str) -> str:
    """A failed audit check's kind, for counting: 'tool coverage', 'plan shapes'..."""
    for key, name in (
        (GRADING, "noisy oracle not graded"),
        ("oracle success", "oracle below 1.0"),
        ("baseline earns", "baseline above 0.05"),
        ("plan length by difficulty", "plan length not graded"),
        ("tools <", "tool coverage below 0.8"),
        ("plan shapes", "plan shapes below 50"),
        ("distinct instructions", "instructions below 500"),
        ("differs when rebuilt", "not deterministic"),
        ("different states", "not deterministic"),
        ("no task at", "task synthesis failed"),
        ("exploit ", "an exploit earns > 0.02"),
        ("agent input voided", "agent input voids episodes"),
    ):
        if key in problem:
            return name
    return problem[:60]


def audit_at_scale(
    env: Environment, n: int, diversity: int, seed: int = 0
) -> tuple[AuditReport, int]:
    """The audit over ``n`` tasks and a ``diversity`` prefix; a world that fails only the
    noisy-oracle grading check (a sampling-noise check) is audited again at ``FULL_N`` tasks,
    and that verdict stands. Returns the report and the ``n`` it was made with."""
    report = audit(env, n=n, seed=seed, diversity=diversity)
    if not report.passed and all(GRADING in p for p in report.problems) and n < FULL_N:
        return audit(env, n=FULL_N, seed=seed, diversity=diversity), FULL_N
    return report, n


def audit_summary(r: AuditReport) -> dict[str, Any]:
    """The figures of a report worth keeping beside a saved world."""
    keys = (
        "oracle_success_rate",
        "noop_reward_mean",
        "random_reward_mean",
        "spam_reward_mean",
        "guess_reward_mean",
        "noisy_oracle_success_rate",
        "difficulty_monotonic",
        "deterministic",
        "tool_coverage",
        "plan_shapes_per_1k",
        "instructions_distinct_per_1k",
        "voided_by_agent",
    )
    return {k: getattr(r, k) for k in keys} | {
        "exploits": {name: s.model_dump() for name, s in r.exploits.items()}
    }


class AuditedWorld(BaseModel):
    """What became of one world of a batch: its size, and the audit's verdict (or the reason
    it never reached the audit)."""

    passed: bool = False
    reason: str | None = None
    detail: str = ""
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    tools: int = 0
    entities: int = 0
    rows: int = 0
    goals: int = 0
    audit_n: int = 0
    audit: dict[str, Any] | None = None
    problems: list[str] = Field(default_factory=list)

    def judge(self, env: Environment, n: int, diversity: int, seed: int = 0) -> bool:
        """Record ``env``'s size, then its empty cell or its audit (see :func:`audit_at_scale`);
        whether it passed."""
        info = env.info()
        self.tools, self.entities, self.rows = info.tools, info.tables, info.rows
        self.goals = info.goal_templates
        if why := empty_cell(env):
            self.reason, self.detail = "no_tasks", why
            return False
        report, self.audit_n = audit_at_scale(env, n, diversity, seed)
        self.audit, self.problems = audit_summary(report), report.problems[:10]
        if not report.passed:
            self.reason, self.detail = "audit_failure", "; ".join(report.problems[:3])[:500]
            return False
        self.passed = True
        return True


def tally(
    results: Iterable[AuditedWorld], reasons: Sequence[str]
) -> tuple[dict[str, int], dict[str, int]]:
    """A batch's failures by reason (in ``reasons``' order), and the failed audit checks by
    kind, counted over the audit failures, most frequent first."""
    failures: Counter[str] = Counter()
    checks: Counter[str] = Counter()
    for r in results:
        if r.reason:
            failures[r.reason] += 1
        if r.reason == "audit_failure":
            checks.update({check_name(p) for p in r.problems})
    return {k: failures[k] for k in reasons if failures[k]}, dict(checks.most_common())
