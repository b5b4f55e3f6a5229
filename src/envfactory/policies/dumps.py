"""Dumps after the work: the gold plan's look-ups, then every value they showed as the answer.

An optimizer that learns the look-ups a question needs has still to learn which value answers
it. These policies skip that part: they make the gold plan's read calls (the one use of hidden data
the audit allows them: the look-ups are the work, and they declare it with
``never_excused``), keep every value the observations show
(:class:`~envfactory.policies.exploits.Knowledge`), and then answer with all of them:

- ``dump_after_work``: one final reply listing every value seen, under the usual guards (at
  most ``MAX_NUMBERS`` countable numbers, under 2,000 characters);
- ``dump_spread``: the values spread over non-final messages, ``per`` values each, that the
  user answers without stopping (each asks to go ahead), then a final reply with the last
  ones.

A grader that takes the answer as the one value the agent commits to gives both nothing.
Where the look-ups showed at most one value of an answer's kind (the one number of the row
asked about), listing what was seen is committing to it: no dump is possible, and the policy
says it found nothing (it reads the answers' kinds for this, never their values).
"""

from __future__ import annotations

from typing import Any, Literal

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.tasks import Task
from envfactory.policies.exploits import MAX_REPLY, Knowledge, batches, interleave
from envfactory.policies.scripted import Action, Oracle
from envfactory.verify.answers import comparable, kind_of

Mode = Literal["dump_after_work", "dump_spread"]
MODES: tuple[Mode, ...] = ("dump_after_work", "dump_spread")
NOTHING = "I could not work out the answer."
_SKIPPED = Observation(kind="tool_result", content="{}", data={})


class DumpAfterWork:
    """The gold plan's calls, made as the oracle makes them (asking the user where it must),
    then every value seen: in one final reply, or spread over ``messages`` non-final ones."""

    never_excused = True  # every gold call is made by design: the audit must not excuse it

    def __init__(
        self,
        mode: Mode = "dump_after_work",
        writes: set[str] | None = None,
        messages: int = 20,
        per: int = 2,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
        self.name: str = mode
        self.writes = writes or set()
        self.messages = messages
        self.per = per
        self.oracle = Oracle()
        self.k: Knowledge | None = None
        self.queue: list[str] | None = None
        self.answers: list[Any] = []
        self.request = ""

    def start(self, task: Task, tools: list[dict[str, Any]]) -> None:
        hidden = task.hidden
        self.answers = list(getattr(hidden, "answers", None) or [])
        self.request = task.public.instruction
        self.k = Knowledge(task, tools)
        self.queue = None
        if self.answers and getattr(hidden, "gold_plan", None):
            self.oracle.start(task, tools)
        else:  # no question, or no plan of calls (a world of another kind): nothing to dump
            self.queue = []

    def act(self, observation: Observation) -> Action:
        assert self.k is not None
        self.k.observe(observation)
        if self.queue is None:
            action = self.oracle.act(observation)
            while isinstance(action, ToolCall) and not self._look_up(action):
                action = self.oracle.act(_SKIPPED)
            if not (isinstance(action, Message) and action.final):
                return action  # a gold call, or a question the oracle asks the user
            self.queue = self._texts() if self._choice() else []
        if len(self.queue) > 1:
            return Message(content=f"Shall I go ahead with {self.queue.pop(0)}?", final=False)
        if not self.queue:
            return Message(content=NOTHING)
        return Message(content=f"The answer: {self.queue.pop(0)}.")

    def _look_up(self, call: ToolCall) -> bool:
        """Whether a gold call is a look-up: no write, and no argument that is an answer (a
        research world's ``answer`` call is the commitment itself, not work before it)."""
        args = call.arguments.values() if isinstance(call.arguments, dict) else ()
        said = {comparable(v) for v in args if isinstance(v, (str, int, float))}
        return call.tool not in self.writes and not said & {comparable(a) for a in self.answers}

    def _choice(self) -> bool:
        """Whether what was seen holds several values of some answer's kind (else a dump
        would be the answer itself). A word's rivals are names (capitalised: "fiction" is no
        rival of an author); values the request names are no rivals; a clock time or yes/no
        always has some."""
        assert self.k is not None
        coded = [s for s in self.k.strings if any(c.isdigit() for c in s)]
        seen: dict[str, list[str]] = {
            "number": self.k.numbers,
            "fraction": self.k.numbers,
            "date": self.k.dates,
            "code": self.k.ids + coded,
            "word": [s for s in self.k.strings if s[:1].isupper() and s not in coded],
        }
        rivals = (seen.get(kind_of(a)) for a in self.answers)
        asked = self.request.lower()
        return any(
            values is None or len([v for v in values if v.lower() not in asked]) > 1
            for values in rivals
        )

    def _texts(self) -> list[str]:
        """The texts to send: one, or one per message (the last one final)."""
        assert self.k is not None
        seen = {
            "numbers": self.k.numbers,
            "dates": self.k.dates,
            "ids": self.k.ids,
            "strings": self.k.strings,
        }
        items = interleave(seen)
        if self.name == "dump_after_work":
            return batches(items, chars=MAX_REPLY - 100, limit=1)
        chunks = (items[i : i + self.per] for i in range(0, len(items), self.per))
        return [batches(chunk, limit=1)[0] for chunk in chunks][: self.messages]


def dump_policies(writes: set[str]) -> list[DumpAfterWork]:
    """One policy per mode, for the audit's attack (``writes``: the world's write tools)."""
    return [DumpAfterWork(mode, writes) for mode in MODES]
