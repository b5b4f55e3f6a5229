"""A deterministic user: answers questions from its profile, says yes to confirmation
requests, admits what it does not know, and takes anything else the agent says as its report.

It cannot see the database or the task's target, and it never judges the agent's work: what it
says depends on the message text and its own profile only. So an agent learns nothing about
whether an answer is right by talking to it, and each episode ends on one committed reply.
"""

from __future__ import annotations

import re

from envfactory.users.base import STOP, Situation, UserReply

SYNONYMS: dict[str, tuple[str, ...]] = {
    "email": ("e-mail", "mail address", "email address"),
    "phone": ("phone number", "telephone", "mobile"),
    "name": ("full name", "your name"),
    "date_of_birth": ("birth", "dob", "born", "birthday"),
    "zip": ("postcode", "postal code", "zip code"),
    "city": ("town", "where you live"),
    "last4": ("last four", "last 4", "card number"),
}
_CONFIRM = re.compile(
    r"\b(shall i|should i|may i|can i|do you want|would you like|confirm|proceed|go ahead)\b"
)
_QUESTION = re.compile(
    r"\?|\b(could you|can you|please (tell|give|provide|share|send|confirm)|i need your"
    r"|i'll need your)\b"
)
_WRAP_UP = re.compile(
    r"\b(anything else|something else|any other (question|request|thing)s?"
    r"|further (help|assistance)|else i can (help|do))\b"
)
THANKS = f"Thank you, that's all I needed. {STOP}"
GIVE_UP = f"I don't know any of that. I'll try another time. {STOP}"


def keywords(fact: str) -> tuple[str, ...]:
    return (fact.replace("_", " "), *SYNONYMS.get(fact, ()))


def _say(fact: str) -> str:
    return fact.replace("_", " ")


class ScriptedUser:
    """The default user simulator. A message is, in this order: a question about its profile
    (answered); a closing "anything else?" (the agent is done); a request for confirmation
    ("yes, go ahead"); another question ("I don't know", and it gives up after
    ``max_unanswered`` of them); or a statement, which it takes as the agent's report: it
    thanks the agent and stops, and that message is the reply graded."""

    def __init__(self, max_unanswered: int = 3) -> None:
        self.max_unanswered = max_unanswered
        self.unanswered = 0

    def fork(self) -> ScriptedUser:
        twin = ScriptedUser(self.max_unanswered)
        twin.unanswered = self.unanswered
        return twin

    def reply(self, message: str, situation: Situation) -> UserReply:
        text = message.lower()
        asks = _QUESTION.search(text) is not None
        asked = {
            fact: value
            for fact, value in situation.profile.items()
            if asks and any(k in text for k in keywords(fact))
        }
        if asked:
            said = "; ".join(f"my {_say(f)} is {v}" for f, v in asked.items())
            return UserReply(text=f"Sure: {said}.", facts=asked)
        if _WRAP_UP.search(text):
            return UserReply(text=THANKS, stop=True)
        if asks and _CONFIRM.search(text):
            return UserReply(text="Yes, please go ahead with what I asked.")
        if asks:
            self.unanswered += 1
            if self.unanswered >= self.max_unanswered:
                return UserReply(text=GIVE_UP, stop=True)
            known = ", ".join(_say(f) for f in situation.profile)
            hint = f" I can tell you my {known}." if known else ""
            return UserReply(text=f"Sorry, I don't know that.{hint}")
        return UserReply(text=THANKS, stop=True)

    def close(self) -> None:
        """Nothing to release."""
