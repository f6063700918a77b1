"""Environments with gold actions, for the oracle and null agents and ``palaestra test``.

``Ledger``: pay the task's ``amount``; the verifier reads the state (paid exactly that).
``Lenient``: a Ledger whose verifier always says 1 (doing nothing is rewarded).
``Misled``: a Ledger whose gold actions pay the wrong amount (the oracle scores 0).
``Balance``: a Ledger whose verifier also wants the balance said; the gold actions say it.
``Counter``: a Ledger whose user is the run's user model (``ModelUser``), none lent: a failure.
``Dictation``: a scripted user dictates two words over two turns; the gold actions write one
per turn, and the verifier wants both, in order, each after the user said it.
"""

from __future__ import annotations

import orjson

from palaestra import Environment, JsonDict, Session, Verdict, output_text, tool
from palaestra.environment.users import ModelUser, ScriptedUser, UserTurn
from palaestra.errors import UserModelFailure
from palaestra.types import message_text


class Ledger(Environment):
    """A ledger to pay into: reward when exactly the task's amount was paid."""

    def seed(self, task: JsonDict) -> JsonDict:
        return {"paid": 0}

    @tool
    def pay(self, session: Session, amount: int) -> str:
        """Pay an amount into the ledger.

        Args:
            amount: How much to pay.
        """
        session.state["paid"] += amount
        return f"paid {amount}"

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        amount = task.get("amount")
        if amount is None:
            return None
        if amount == 0:
            return [[]]
        return [[{"name": "pay", "arguments": {"amount": amount}}]]

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        paid, wanted = session.state["paid"], session.task.get("amount", 0)
        return Verdict(reward=float(paid == wanted), metrics={"paid": paid})


class Lenient(Ledger):
    """A ledger whose verifier rewards everything."""

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        return Verdict(reward=1.0)


class Misled(Ledger):
    """A ledger whose gold actions pay one too much."""

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        return [[{"name": "pay", "arguments": {"amount": int(task["amount"]) + 1}}]]


class Dictation(Environment):
    """The user dictates words, one per turn; write each one down when it is said."""

    def seed(self, task: JsonDict) -> JsonDict:
        return {"words": [], "user": ScriptedUser(task["words"][1:])}

    @tool
    def write(self, session: Session, word: str) -> str:
        """Write a word down.

        Args:
            word: The word the user said.
        """
        session.state["words"].append(word)
        return "written"

    async def user_turn(self, session: Session, conversation: list[JsonDict]) -> UserTurn:
        user: ScriptedUser = session.state["user"]
        return await user.reply(conversation)

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        return [[{"name": "write", "arguments": {"word": w}}] for w in task["words"]]

    def verify(self, session: Session, response: JsonDict) -> float:
        """1 when every word was written, in order, and none before the user said it."""
        words: list[str] = session.task["words"]
        heard = words[:1]  # the first word is in the task's own message
        for item in response["output"]:
            if item.get("role") == "user":
                heard.append(message_text(item))
            elif item.get("type") == "function_call" and written(item) not in heard:
                return 0.0
        return float(session.state["words"] == words and heard == words)


def written(call: JsonDict) -> str:
    """The word a ``write`` call writes."""
    return str(orjson.loads(call["arguments"])["word"])


class Balance(Ledger):
    """Pay, then tell the user the new balance: the verifier reads the state and the answer."""

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        amount = int(task["amount"])
        say = {"role": "assistant", "content": f"Your balance is {amount}."}
        return [[{"name": "pay", "arguments": {"amount": amount}}, say]]

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        told = f"balance is {session.state['paid']}" in output_text(response)
        return Verdict(reward=float(told and session.state["paid"] == session.task["amount"]))


class Counter(Ledger):
    """A ledger whose customer is played by the run's user model, until it says DONE."""

    async def user_turn(self, session: Session, conversation: list[JsonDict]) -> UserTurn:
        model = self.context.user_model
        if model is None:
            raise UserModelFailure("this environment's user needs a user model")
        user = ModelUser(model, "You are paying in. Say DONE when paid.", stop_signals=["DONE"])
        return await user.reply(conversation)
