"""lookup: each task asks for a person's PIN, which only the ``lookup`` tool knows.

The multi-turn learning demo's environment (``examples/train_trl_multiturn.py``): the reward can
only be earned across turns. The PIN is drawn at random per task and is nowhere in the prompt,
so a rollout scores 1 only when the policy calls ``lookup`` with the person's name *and* then
writes the number the tool returned in its final answer (guessing a 4-digit PIN succeeds once
in 9,000 tries). SmolLM2-135M does both now and then, not always: it answers without looking,
or calls the tool again and again after the result; that spread is what GRPO learns from.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

from palaestra import PARAMS, Environment, JsonDict, Session, Verdict, message_text, task_row, tool

SYSTEM = "You are a helpful assistant with access to a directory of PIN codes."
QUESTION = "What is the PIN code of {name}?"
FIRST = [
    "Alice",
    "Bruno",
    "Chloe",
    "Daniel",
    "Emma",
    "Felix",
    "Grace",
    "Hugo",
    "Iris",
    "Jonas",
    "Karin",
    "Liam",
    "Maya",
    "Noah",
    "Olga",
    "Pablo",
    "Quinn",
    "Rosa",
    "Samir",
    "Tara",
    "Umar",
    "Vera",
    "Walter",
    "Xenia",
    "Yusuf",
    "Zoe",
    "Anna",
    "Boris",
    "Clara",
    "David",
    "Elena",
    "Frank",
    "Gina",
    "Henrik",
    "Ines",
    "Jakob",
    "Lena",
    "Marco",
    "Nina",
    "Oscar",
]
LAST = [
    "Adler",
    "Becker",
    "Costa",
    "Dubois",
    "Eriksen",
    "Fischer",
    "Garcia",
    "Hansen",
    "Ito",
    "Jensen",
    "Kowalski",
    "Lopez",
    "Moreau",
    "Novak",
    "Olsen",
    "Petrov",
    "Quist",
    "Rossi",
    "Schmidt",
    "Tanaka",
    "Ueda",
    "Vogel",
    "Weber",
    "Young",
    "Zimmer",
    "Berg",
    "Castro",
    "Diaz",
    "Engel",
    "Frost",
    "Gruber",
    "Horn",
    "Ivanova",
    "Jung",
    "Klein",
    "Lang",
    "Meyer",
    "Nagy",
    "Ortiz",
    "Park",
]
EXAMPLE: list[JsonDict] = [
    {"role": "user", "content": "What is the PIN code of Max Mustermann?"},
    {
        "type": "function_call",
        "call_id": "call_0",
        "name": "lookup",
        "arguments": '{"name": "Max Mustermann"}',
    },
    {"type": "function_call_output", "call_id": "call_0", "output": "Max Mustermann: 5012"},
    {"role": "assistant", "content": "Found it."},
]
"""A worked example before each question. It shows the turns (look up, then reply), but its reply
does not state the number: SmolLM2-135M never replies after a tool result without an example
(it calls the tool again until the step limit), and always states the PIN with an example
whose reply does. With this one it states the PIN about a third of the time at temperature 1."""
_DIGITS = re.compile(r"\d+")


class Lookup(Environment):
    """Find a person's PIN with the lookup tool; reward 1 when the final answer states it."""

    name = "lookup"

    @tool
    def lookup(self, session: Session, name: str) -> str:
        """Look up the PIN code of a person in the directory.

        Args:
            name: The person's full name, e.g. "Alice Adler".
        """
        wanted = str(session.task["name"])
        if _normal(wanted) in _normal(name) or _normal(name) == _normal(wanted).split(" ")[0]:
            session.state["found"] = True
            return f"The PIN code of {wanted} is {session.task['pin']}."
        return f"No one named {name!r} is in the directory."

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        pin = str(session.task["pin"])
        answer = final_answer(response)
        correct = answer is not None and pin in _DIGITS.findall(answer)
        calls = [
            item
            for item in response.get("output", [])
            if item.get("type") == "function_call" and item.get("name") == "lookup"
        ]
        return Verdict(
            reward=1.0 if correct else 0.0,
            metrics={
                "answered": answer is not None,
                "looked_up": bool(calls),
                "lookups": len(calls),
                "found": bool(session.state.get("found")),
            },
        )

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        """Look the person up, then state the PIN the tool returned."""
        call = {"name": "lookup", "arguments": {"name": task["name"]}}
        answer = {
            "role": "assistant",
            "content": f"The PIN code of {task['name']} is {task['pin']}.",
        }
        return [[call, answer]]

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """``count`` tasks with distinct people (at most 1,600) and random 4-digit PINs."""
        rng = random.Random(seed)
        people = [f"{first} {last}" for first in FIRST for last in LAST]
        rng.shuffle(people)
        for name in people[:count]:
            yield lookup_task(name, f"{rng.randint(1000, 9999)}")


def lookup_task(name: str, pin: str) -> JsonDict:
    """The task asking for ``name``'s PIN, which is ``pin``: the system message, the worked
    example (``EXAMPLE``), then the question."""
    row = task_row(QUESTION.format(name=name), system=SYSTEM, name=name, pin=pin)
    system, question = row[PARAMS]["input"]
    row[PARAMS]["input"] = [system, *EXAMPLE, question]
    return row


def final_answer(response: JsonDict) -> str | None:
    """The text of the rollout's last item when it is an assistant message, else None."""
    output = response.get("output") or []
    if not output or output[-1].get("type") != "message":
        return None
    return message_text(output[-1])


def _normal(text: str) -> str:
    return " ".join(text.lower().replace("'s", "").split())
