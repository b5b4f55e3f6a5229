"""The calibration page's generated section: numbers, heat map and table from the file, written
between the page's markers and nowhere else; and cells whose episodes were not scored."""

from __future__ import annotations

from pathlib import Path

import pytest

from envfactory.bench.calibration import CalibrationCell, calibrate, store_cells
from envfactory.bench.calibration_page import BEGIN, END, PageError, main, remaining, section
from envfactory.policies.base import EpisodeContext, PolicyReply, PolicyRequest
from envfactory.trajectory.record import ModelInfo


def _cell(env: str, difficulty: int, wins: int, reach: float) -> CalibrationCell:
    return CalibrationCell(
        env=env,
        difficulty=difficulty,
        tasks=10,
        success=wins / 10,
        ci95=(0.0, 0.3),
        mean_reward=wins / 10,
        tool_call_valid_rate=0.5,
        invalid_argument_rate=0.5,
        calls_attempted=20,
        turns_mean=2.0,
        prompt_tokens=1000,
        completion_tokens=100,
        tool_format="grammar",
        max_turns=3,
        reach=reach,
    )


CELLS = [_cell("hotel", 0, 3, 1.0), _cell("hotel", 1, 0, 0.0), _cell("web-hotel", 0, 5, 1.0)]
EXPECTED = {"hotel": [0, 1, 2], "web-hotel": [0, 1]}


def test_what_remains_is_every_level_without_a_row_within_reach() -> None:
    assert remaining(CELLS, EXPECTED) == {"hotel": [1, 2], "web-hotel": [1]}
    assert remaining([*CELLS, _cell("hotel", 1, 0, 1.0)], {"hotel": [0, 1]}) == {}


def test_a_complete_calibration_says_so_and_lists_nothing_to_measure() -> None:
    text = section([*CELLS, _cell("hotel", 1, 0, 1.0)], {"hotel": [0, 1]}, "images/cal.png")
    assert text.startswith("**All 2 cells** (every single-agent world at every difficulty)")
    assert "remain" not in text and "Still to measure" not in text


def test_the_section_counts_cells_within_reach_and_lists_the_rest() -> None:
    text = section(CELLS, EXPECTED, "images/cal.png")
    assert text.startswith("**2 of the 5 cells**")
    assert "3 remain" in text
    assert "| 0 | 2 | 8/20 (0.400) | 20/40 (50%) | web-hotel 5/10, hotel 3/10 |" in text
    assert "| 0 | 1 | 5/10 (0.500) | 10/20 (50%) | web-hotel 5/10 |" in text  # web alone
    assert "Still to measure within reach: hotel (1, 2); web-hotel (1)." in text
    assert "![calibration heat map](images/cal.png)" in text
    assert "| hotel | 1 | 10 | 0.00 (0.00-0.30) |" in text  # every row is in the table


def test_a_cell_with_episodes_not_scored_is_not_measured_and_says_so(tmp_path: Path) -> None:
    """A cell whose episodes were not scored (no browser, say) is still to measure, and its row
    in the table and on the heat map says how many were not scored."""
    lost = _cell("web-hotel", 1, 0, 1.0).model_copy(
        update={"tasks": 0, "success": 0.0, "faults": 10, "fault_reasons": ["no browser"]}
    )
    assert not lost.whole and _cell("web-hotel", 1, 0, 1.0).whole
    assert remaining([*CELLS, lost], EXPECTED) == {"hotel": [1, 2], "web-hotel": [1]}
    text = section([*CELLS, lost], EXPECTED, "images/cal.png")
    assert text.startswith("**2 of the 5 cells**")
    assert "| web-hotel | 1 | 0 (+10 not scored) | 0.00 (0.00-0.30) |" in text
    data = tmp_path / "cal.jsonl"
    store_cells(data, [*CELLS, lost])
    main([str(data), "--plot", str(tmp_path / "cal.png")])  # a cell of no episodes is blank
    assert (tmp_path / "cal.png").read_bytes()[:4] == b"\x89PNG"


class _Unplugged:
    """A local policy whose model is gone: every call fails."""

    name, local = "unplugged", True
    info = ModelInfo(name="unplugged", provider="test")

    def session(self, ctx: EpisodeContext) -> _Unplugged:
        return self

    async def act(self, request: PolicyRequest) -> PolicyReply:
        raise RuntimeError("the model's device is gone")

    def replay(self, observations: list[object]) -> None: ...

    async def aclose(self) -> None: ...


def test_episodes_that_fail_for_want_of_a_model_are_faults_with_their_reason() -> None:
    """An infrastructure failure is never a reward of 0: the cell scores none of its episodes,
    counts them as faults and keeps why (the CLI prints it; a resumed run measures it again)."""
    (cell,) = calibrate(_Unplugged(), ["hotel"], tasks=2, difficulties=[1], fit_plan=False)
    assert (cell.tasks, cell.success) == (0, 0.0) and cell.faults >= 2 and not cell.whole
    assert cell.fault_reasons == ["the policy failed: RuntimeError: the model's device is gone"]


def test_the_page_keeps_its_prose_and_is_rewritten_in_place(tmp_path: Path) -> None:
    data = tmp_path / "results" / "cal.jsonl"
    data.parent.mkdir()
    store_cells(data, CELLS)
    page = tmp_path / "calibration.md"
    page.write_text(f"# Calibration\n\nProse before.\n\n{BEGIN}\nold numbers\n{END}\n\nAfter.\n")
    main([str(data), "--page", str(page)])
    first = page.read_text()
    assert first.startswith("# Calibration\n\nProse before.\n\n" + BEGIN)
    assert first.endswith(END + "\n\nAfter.\n") and "old numbers" not in first
    assert "![calibration heat map](images/cal.png)" in first
    assert (tmp_path / "images" / "cal.png").read_bytes()[:4] == b"\x89PNG"
    main([str(data), "--page", str(page)])
    assert page.read_text() == first  # generated from the file alone


def test_a_page_without_the_markers_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "cal.jsonl"
    store_cells(data, CELLS)
    page = tmp_path / "page.md"
    page.write_text("# No section here\n")
    with pytest.raises(PageError, match="calibration:begin"):
        main([str(data), "--page", str(page)])
    assert page.read_text() == "# No section here\n"
