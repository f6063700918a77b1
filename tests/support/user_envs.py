"""Environments with a simulated user, for tests of the conversation loop and its plumbing.

``Interview``: a scripted user saying the task's ``turns`` one by one (kept in the session);
the reward is the share of turns the policy heard before the end. ``ModelInterview``: a
``ModelUser`` on the run's user model (``--user-model``), its persona from the task.
``WhoAmI``: a user that says which user model the run lent it, then is done.
"""

from __future__ import annotations

from palaestra import Environment, Session, tool
from palaestra.environment.users import ModelUser, ScriptedUser, UserTurn
from palaestra.errors import UserModelFailure
from palaestra.types import JsonDict


class Interview(Environment):
    """A scripted user says its turns; each answer that calls no tool gets the next one."""

    def seed(self, task: JsonDict) -> ScriptedUser:
        return ScriptedUser(task.get("turns", []))

    @tool
    def note(self, session: Session, text: str) -> str:
        """Write a note."""
        return f"noted {text}"

    async def user_turn(self, session: Session, conversation: list[JsonDict]) -> UserTurn:
        user: ScriptedUser = session.state
        return await user.reply(conversation)

    def verify(self, session: Session, response: JsonDict) -> float:
        user: ScriptedUser = session.state
        return 1.0 if user.remaining == 0 else 0.0


class ModelInterview(Environment):
    """An LLM user on the run's user model, playing the task's persona until it says DONE."""

    def seed(self, task: JsonDict) -> ModelUser:
        model = self.context.user_model
        if model is None:
            raise UserModelFailure("this environment needs a user model (--user-model)")
        return ModelUser(model, str(task.get("persona", "")), stop_signals=["DONE"])

    async def user_turn(self, session: Session, conversation: list[JsonDict]) -> UserTurn:
        user: ModelUser = session.state
        return await user.reply(conversation)

    def verify(self, session: Session, response: JsonDict) -> float:
        return 1.0


class WhoAmI(Environment):
    """The user names the user model the run lent the environment, then is done."""

    async def user_turn(self, session: Session, conversation: list[JsonDict]) -> UserTurn:
        model = self.context.user_model
        return UserTurn(f"my model is {model.name if model else 'none'}", done=True)

    def verify(self, session: Session, response: JsonDict) -> float:
        return 1.0
