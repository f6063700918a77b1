"""An environment whose verifier cannot score any rollout (its verdict is a failure)."""

from __future__ import annotations

from palaestra import Environment, JsonDict, Session, Verdict, tool
from palaestra.types import FailureKind

TASK: JsonDict = {"responses_create_params": {"input": "Write a note, then say done."}}


class Unscorable(Environment):
    """Takes notes; its answer key is missing, so no rollout can be scored."""

    name = "unscorable"

    @tool
    def note(self, text: str) -> str:
        """Write a note.

        Args:
            text: The note.
        """
        return "noted"

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        return Verdict.failed(FailureKind.VERIFIER_ERROR, "the answer key is missing")
