"""The audit as a page a person can open: a summary table and, per environment, plots of
success against difficulty, plan lengths and tool coverage (PNG, embedded)."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from envfactory.quality.adversary import EXPLOIT_MAX
from envfactory.quality.audit import BASELINE_MAX, MIN_FALL, AuditReport
from envfactory.quality.stats import ALPHA

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLUMNS = (
    ("oracle_success_rate", "oracle"),
    ("noisy_oracle_success_rate", "noisy oracle"),
    ("noop_reward_mean", "no-op"),
    ("random_reward_mean", "random"),
    ("spam_reward_mean", "spam"),
    ("guess_reward_mean", "guess"),
    ("tool_coverage", "tool coverage"),
    ("plan_shapes_per_1k", "plan shapes / 1k"),
    ("instructions_distinct_per_1k", "instructions / 1k"),
    ("difficulty_monotonic", "graded"),
    ("deterministic", "deterministic"),
    ("voided_by_agent", "voided by agent"),
)
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
table { border-collapse: collapse; margin-bottom: 2rem; }
th, td { border: 1px solid #ccc; padding: 0.3rem 0.6rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.pass { color: #11772d; font-weight: bold; } .fail { color: #b00020; font-weight: bold; }
.env { margin-bottom: 2.5rem; } .plots img { width: 32%; min-width: 280px; }
"""


def _figure(width: float, height: float) -> Figure:
    """An empty figure; matplotlib is imported here, not with this module, which every
    ``envfactory`` command loads (the import costs two seconds)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode()


def success_plot(r: AuditReport) -> str:
    fig = _figure(5, 3.4)
    ax = fig.subplots()
    for name, curve in r.curves.items():
        xs = sorted(curve)
        ax.plot(xs, [curve[x] for x in xs], marker="o", label=name.replace("_", " "))
    ax.set(
        xlabel="difficulty",
        ylabel="success rate",
        ylim=(-0.05, 1.05),
        title="Success vs difficulty",
    )
    ax.legend(fontsize=7)
    return _png(fig)


def plan_length_plot(r: AuditReport) -> str:
    fig = _figure(5, 3.4)
    ax = fig.subplots()
    lengths = r.plan_lengths or [0]
    ax.hist(lengths, bins=range(0, max(lengths) + 2), color="#4c72b0", edgecolor="white")
    ax.set(xlabel="gold plan steps", ylabel="tasks", title="Plan length at the top difficulty")
    return _png(fig)


def coverage_plot(r: AuditReport) -> str:
    tools = sorted(r.tool_uses, key=lambda t: r.tool_uses[t])
    fig = _figure(5, max(2.5, 0.22 * len(tools) + 1))
    ax = fig.subplots()
    colors = ["#b00020" if r.tool_uses[t] == 0 else "#55a868" for t in tools]
    ax.barh(tools, [r.tool_uses[t] for t in tools], color=colors)
    ax.set(xlabel="uses in gold plans", title=f"Tool coverage {r.tool_coverage:.0%}")
    ax.tick_params(axis="y", labelsize=7)
    return _png(fig)


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return f'<td class="{"pass" if value else "fail"}">{"yes" if value else "no"}</td>'
    if isinstance(value, float):
        return f"<td>{value:.3f}</td>"
    return f"<td>{html.escape(str(value))}</td>"


def exploits_table(r: AuditReport) -> str:
    """What each exploit earned (a refused one in red), and the voided count."""
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td>"
        f'<td class="{"fail" if s.refused else "pass"}">{s.mean:.3f}</td>'
        f"<td>{s.max:.3f}</td><td>{s.episodes}</td></tr>"
        for name, s in r.exploits.items()
    )
    voided = "fail" if r.voided_by_agent else "pass"
    return (
        '<table class="exploits"><tr><th>exploit</th><th>mean reward</th><th>max</th>'
        f"<th>episodes</th></tr>{rows}</table>"
        f'<p>Episodes voided by agent input: <span class="{voided}">{r.voided_by_agent}</span>'
        f" (an exploit fails where its mean reward is above {EXPLOIT_MAX} at 1%).</p>"
    )


def statistics(r: AuditReport) -> str:
    """The evidence behind the sampled checks: each baseline's p-value and upper bound, and
    the grading tests' p-values and power."""
    baselines = ", ".join(
        f"{name} p = {p:.2g} (95% bound {r.baseline_bound.get(name, 1.0):.3f})"
        for name, p in r.baseline_p.items()
    )
    rises = ", ".join(f"to level {d} p = {p:.2g}" for d, p in r.noisy_oracle_rise_p.items())
    lines = [f"Baselines above {BASELINE_MAX}: {baselines or 'none run'}."]
    if r.noisy_oracle_fall_p is not None:
        lines.append(
            f"Noisy-oracle rises: {rises}; top not {MIN_FALL} below the bottom: "
            f"p = {r.noisy_oracle_fall_p:.2g}, power against a flat curve "
            f"{r.noisy_oracle_fall_power or 0.0:.2f} (each test at {r.grading_alpha or ALPHA:.2g})."
        )
    if r.empty_levels:
        lines.append(f"Levels with no audited task: {', '.join(map(str, r.empty_levels))}.")
    return f'<p class="stats">{"<br>".join(html.escape(line) for line in lines)}</p>'


def render(reports: Sequence[AuditReport]) -> str:
    head = "".join(f"<th>{label}</th>" for _, label in COLUMNS)
    rows = []
    for r in reports:
        verdict = '<td class="pass">passed</td>' if r.passed else '<td class="fail">failed</td>'
        cells = "".join(_cell(getattr(r, key)) for key, _ in COLUMNS)
        rows.append(
            f'<tr><td><a href="#{r.env}">{r.env}</a></td><td>{r.kind}</td>{verdict}{cells}</tr>'
        )
    sections = []
    for r in reports:
        problems = "".join(f"<li>{html.escape(p)}</li>" for p in r.problems)
        plots = "".join(
            f'<img alt="{alt} of {r.env}" src="data:image/png;base64,{data}">'
            for alt, data in (
                ("success vs difficulty", success_plot(r)),
                ("plan length histogram", plan_length_plot(r)),
                ("tool coverage", coverage_plot(r)),
            )
        )
        sections.append(
            f'<section class="env" id="{r.env}"><h2>{r.env}</h2>'
            f"<p>{r.tasks} tasks audited.</p>"
            + (f"<ul>{problems}</ul>" if problems else "")
            + exploits_table(r)
            + statistics(r)
            + f'<div class="plots">{plots}</div></section>'
        )
    passed = sum(r.passed for r in reports)
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>envfactory audit</title>"
        f"<style>{STYLE}</style></head><body><h1>envfactory audit</h1>"
        f"<p>{passed} of {len(reports)} environments passed.</p>"
        '<table class="summary"><tr><th>env</th><th>kind</th><th>verdict</th>'
        f"{head}</tr>{''.join(rows)}</table>"
        f"{''.join(sections)}</body></html>"
    )


def write_report(reports: Sequence[AuditReport], path: str | Path) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(reports))
    return out
