"""A deterministic user: answers from its profile, admits what it does not know, stops when
its goal is met or when it gives up."""

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
    r"\?|\b(could you|can you|please (tell|give|provide|share)|what is|what's)\b"
)


def keywords(fact: str) -> tuple[str, ...]:
    return (fact.replace("_", " "), *SYNONYMS.get(fact, ()))


def _say(fact: str) -> str:
    return fact.replace("_", " ")


class ScriptedUser:
    """The default user simulator."""

    def __init__(self, max_unanswered: int = 3) -> None:
        self.max_unanswered = max_unanswered
        self.unanswered = 0

    def reply(self, message: str, situation: Situation) -> UserReply:
        text = message.lower()
        asked = {
            fact: value
            for fact, value in situation.profile.items()
            if any(k in text for k in keywords(fact))
        }
        if asked:
            said = "; ".join(f"my {_say(f)} is {v}" for f, v in asked.items())
            return UserReply(text=f"Sure: {said}.", facts=asked)
        if situation.goal_met:
            return UserReply(text=f"That's everything I needed, thank you! {STOP}", stop=True)
        if _CONFIRM.search(text):
            return UserReply(text="Yes, please go ahead with what I asked.")
        if _QUESTION.search(text):
            self.unanswered += 1
            if self.unanswered >= self.max_unanswered:
                text = f"I don't know any of that. I'll try another time. {STOP}"
                return UserReply(text=text, stop=True)
            known = ", ".join(_say(f) for f in situation.profile)
            hint = f" I can tell you my {known}." if known else ""
            return UserReply(text=f"Sorry, I don't know that.{hint}")
        return UserReply(text="Please go ahead with what I asked.")

    def close(self) -> None:
        """Nothing to release."""
