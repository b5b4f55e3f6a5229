"""``envfactory dashboard``: runs side by side in the browser, read while they are written.

Reward and success curves, tables by world and difficulty, status counts, the curriculum's
frontiers and an episode viewer, served by a small FastAPI app (the 'serve' extra) from
trajectory stores that are re-read incrementally on every request; beside them, training runs
(``envfactory train``'s save folder or result): reward by step, before and after.
"""

from envfactory.dashboard.reader import Row, RunReader

__all__ = ["Row", "RunReader"]
