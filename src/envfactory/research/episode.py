"""The episode of a research world: read-only tools over a shared index, one committed answer."""

from __future__ import annotations

import copy
from typing import Any, Protocol, Self

from envfactory.contract.actions import EpisodeStatus, Message, Observation, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.episode import ToolEpisode, error_observation, unknown_tool
from envfactory.contract.errors import EpisodeError
from envfactory.contract.results import ToolError, ToolFailure
from envfactory.contract.tasks import Task
from envfactory.contract.verdict import RubricItem, Verdict, combine
from envfactory.research import answers
from envfactory.research.corpus import Library
from envfactory.research.hidden import ResearchHidden
from envfactory.research.tools import MAX_FOUND, TOOLS
from envfactory.tasks.seeds import stable_hash
from envfactory.tools.params import validate


class ResearchSetting(Protocol):
    """What a research episode reads from its world (a ``ResearchWorld``)."""

    @property
    def id(self) -> str: ...

    @property
    def corpus(self) -> Library: ...


NOTHING_TO_ADD = "I have nothing to add. Please commit your answer with the answer tool."
RECORDED = "Your answer is recorded. The episode is over."


class ResearchEpisode(ToolEpisode):
    """One live episode; the corpus and its index are shared and never written."""

    def __init__(self, env: ResearchSetting, config: EpisodeConfig | None = None) -> None:
        self.env = env
        self.config = config or EpisodeConfig()
        self.task: Task | None = None
        self.steps = 0
        self.done = False
        self.status: EpisodeStatus = "truncated"
        self.committed: str | None = None
        self.read: set[str] = set()

    @property
    def corpus(self) -> Library:
        return self.env.corpus

    def reset(self, task: Task) -> Observation:
        if task.public.env_id != self.env.id or not isinstance(task.hidden, ResearchHidden):
            raise EpisodeError(f"task {task.task_id} does not belong to {self.env.id}")
        self.task = task
        self.steps = 0
        self.done, self.status, self.committed = False, "truncated", None
        self.read = set()
        return Observation(
            kind="task", content=task.public.instruction, data=task.public.model_dump()
        )

    def fork(self) -> Self:
        """A copy: the corpus is shared and read-only; the documents read are copied."""
        if self.task is None:
            raise EpisodeError("call reset(task) before fork()")
        child = copy.copy(self)
        child.read = set(self.read)
        return child

    def close(self) -> None:
        """Nothing to release: the index belongs to the corpus."""

    # -- acting ------------------------------------------------------------------------------

    def _message(self, msg: Message) -> Observation:
        return self._end() if msg.final else Observation(kind="user", content=NOTHING_TO_ADD)

    def _call(self, call: ToolCall) -> Observation:
        spec = TOOLS.get(call.tool)
        if spec is None:
            return error_observation(unknown_tool(call.tool, TOOLS))
        arguments = call.arguments
        if call.tool == "answer" and isinstance(arguments, dict):
            value = arguments.get("value")  # a number is an answer too
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                arguments = {**arguments, "value": str(value)}
        try:
            args = validate(call.tool, spec[1], arguments)
            return getattr(self, f"_{call.tool}")(**args)  # type: ignore[no-any-return]
        except ToolFailure as exc:
            err = ToolError(code=exc.code, message=exc.message, tool=call.tool, field=exc.field)
            return error_observation(err)

    def _search(self, query: str, k: int | None) -> Observation:
        hits = self.corpus.index.search(query, k or 5)
        rows = [self.corpus.docs[i] for i in hits]
        results = [
            {"doc_id": d.doc_id, "title": d.title, "source": d.source, "snippet": d.lead}
            for d in rows
        ]
        lines = [f"{d.doc_id} | {d.title} | {d.source}\n    {d.lead}" for d in rows]
        text = "\n".join(lines) if lines else "No documents match."
        return Observation(kind="tool_result", content=text, data={"results": results})

    def _doc(self, doc_id: str) -> int:
        pos = self.corpus.by_id.get(doc_id.strip())
        if pos is None:
            raise ToolFailure("not_found", f"there is no document {doc_id[:40]!r}", field="doc_id")
        return pos

    def _open(self, doc_id: str, page: int | None) -> Observation:
        pos = self._doc(doc_id)
        pages = self.corpus.pages(pos)
        page = page or 1
        if page > len(pages):
            why = f"{doc_id} has {len(pages)} page(s)"
            raise ToolFailure("not_found", why, field="page")
        d = self.corpus.docs[pos]
        self.read.add(d.doc_id)
        head = f"{d.doc_id} | {d.title} | {d.source} | page {page} of {len(pages)}"
        data = {"doc_id": d.doc_id, "title": d.title, "source": d.source, "page": page}
        data |= {"pages": len(pages), "text": pages[page - 1]}
        return Observation(kind="tool_result", content=f"{head}\n\n{pages[page - 1]}", data=data)

    def _find(self, doc_id: str, pattern: str) -> Observation:
        needle = pattern.strip().lower()
        if not needle:
            raise ToolFailure("invalid_arguments", "'pattern' is empty", field="pattern")
        pos = self._doc(doc_id)
        found: list[dict[str, Any]] = []
        for number, page in enumerate(self.corpus.pages(pos), start=1):
            found += [
                {"page": number, "line": ln} for ln in page.split("\n") if needle in ln.lower()
            ]
        d = self.corpus.docs[pos]
        self.read.add(d.doc_id)
        shown = found[:MAX_FOUND]
        lines = [f"p{m['page']}: {m['line']}" for m in shown]
        more = (
            f"\n[{len(found) - len(shown)} more lines not shown]" if len(found) > len(shown) else ""
        )
        text = "\n".join(lines) + more if lines else f"No line of {d.doc_id} contains that text."
        data = {"doc_id": d.doc_id, "matches": shown, "total": len(found)}
        return Observation(kind="tool_result", content=text, data=data)

    def _answer(self, value: str) -> Observation:
        self.committed = value
        self.done, self.status = True, "completed"
        return Observation(kind="end", content=RECORDED, done=True)

    # -- judging -----------------------------------------------------------------------------

    def state_hash(self) -> str:
        task_id = self.task.task_id if self.task else ""
        return f"{stable_hash(task_id, sorted(self.read), self.committed):016x}"

    def evaluate(self) -> Verdict:
        """One score item: the committed answer is the expected value (aliases, number and
        date formats allowed); no answer committed with the answer tool scores 0."""
        if self.task is None:
            raise EpisodeError("call reset(task) before evaluate()")
        hidden = self.task.hidden
        assert isinstance(hidden, ResearchHidden)
        if self.committed is None:
            score, why = 0.0, "no answer was committed with the answer tool"
        elif answers.matches(hidden.answer_type, self.committed, hidden.accepted):
            score, why = 1.0, "the committed answer is right"
        else:
            score, why = 0.0, "the committed answer is wrong"
        items = [RubricItem(name="answer", kind="score", weight=1.0, score=score, reason=why)]
        return Verdict(
            reward=combine(items), status=self.status, items=items, state_hash=self.state_hash()
        )
