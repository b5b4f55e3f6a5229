"""The simulation's picture: skill over the episode budget per arm, and the frontier following
the learner."""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from envfactory.curriculum.simulate import ARMS, SimulationResult

COLOURS = {"curriculum": "#1f77b4", "fixed": "#ff7f0e", "uniform": "#2ca02c"}


def plot_simulation(result: SimulationResult, path: str | Path, every: int = 50) -> Path:
    """Write a PNG: mean skill (min-max band over seeds) per arm, and one seed's frontier."""
    fig = Figure(figsize=(11, 4.2), dpi=110)
    ax, ax2 = fig.subplots(1, 2)
    for arm in ARMS:
        traces = [r.skill_trace[arm] for r in result.per_seed]
        n = min(len(t) for t in traces)
        xs = [every * (i + 1) for i in range(n)]
        mean = [sum(t[i] for t in traces) / len(traces) for i in range(n)]
        low = [min(t[i] for t in traces) for i in range(n)]
        high = [max(t[i] for t in traces) for i in range(n)]
        label = f"fixed (level {result.fixed_level})" if arm == "fixed" else arm
        ax.plot(xs, mean, color=COLOURS[arm], label=label)
        ax.fill_between(xs, low, high, color=COLOURS[arm], alpha=0.15)
    ax.set_xlabel("episodes")
    ax.set_ylabel("skill (level solved half the time)")
    ax.set_title(f"mean over {result.seeds} seeds, band: min to max")
    ax.legend(loc="upper left")
    seed = result.per_seed[0]
    n = len(seed.frontier_trace)
    xs = [every * (i + 1) for i in range(n)]
    ax2.plot(xs, seed.skill_trace["curriculum"][:n], color=COLOURS["curriculum"], label="skill")
    ax2.step(xs, seed.frontier_trace, color="black", where="post", label="frontier (mean level)")
    ax2.set_xlabel("episodes")
    ax2.set_ylabel("level")
    ax2.set_title(
        f"seed {seed.seed}: frontier follows the learner "
        f"({100 * seed.frontier_in_band_fraction:.0f}% in band)"
    )
    ax2.legend(loc="upper left")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    return out
