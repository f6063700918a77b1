"""synonyms: look values up with one tool, submit them in order with another."""

from __future__ import annotations

from palaestra import Environment, JsonDict, Session, ToolError, Verdict, tool

THESAURUS: dict[str, str] = {
    "happy": "joyful",
    "big": "large",
    "fast": "quick",
    "smart": "clever",
    "cold": "chilly",
    "angry": "furious",
    "small": "tiny",
    "begin": "start",
    "end": "finish",
    "easy": "simple",
}


class Synonyms(Environment):
    """Look up a synonym for each word, then submit them all in order (exact ordered match)."""

    name = "synonyms"

    def seed(self, task: JsonDict) -> JsonDict:
        return {"lookups": [], "submitted": None}

    @tool
    def get_synonym(self, session: Session, word: str) -> str:
        """Look up the synonym of a word.

        Args:
            word: The word to look up, in lower case.
        """
        synonym = THESAURUS.get(word.strip().lower())
        if synonym is None:
            raise ToolError(f"no synonym known for '{word}'")
        session.state["lookups"].append(word)
        return synonym

    @tool
    def submit(self, session: Session, synonyms: list[str]) -> str:
        """Submit the synonyms, in the same order as the words were given. Only the last
        submission counts.

        Args:
            synonyms: One synonym per word, in order.
        """
        session.state["submitted"] = [s.strip().lower() for s in synonyms]
        return "submitted"

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        expected = [w.lower() for w in session.task["expected_synonyms"]]
        submitted = session.state["submitted"]
        correct = submitted == expected
        return Verdict(
            reward=1.0 if correct else 0.0,
            metrics={
                "submitted": submitted is not None,
                "lookups": len(session.state["lookups"]),
            },
        )
