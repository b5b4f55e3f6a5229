"""What only the verifier knows of a research question."""

from __future__ import annotations

from pydantic import Field

from envfactory.contract.tasks import HiddenTask
from envfactory.research.answers import AnswerType


class ResearchHidden(HiddenTask):
    """The expected answer, the forms that count as it, and what a fan page would say."""

    kind: str = Field(description="lead, chain, compare, count or as_of")
    answer_type: AnswerType
    accepted: list[str] = Field(description="normalised names, or the number or ISO date")
    unreliable: str | None = Field(None, description="the answer trusting fan pages gives")
    shape: list[str] = Field(default_factory=list, description="relations followed, fact read")
