"""text_worlds: TextWorld text adventures on the reset/step protocol, the game's score as dense
per-step reward.

Each task names a game by its recipe (``world``: kind, settings, seed); TextWorld makes it on
this machine (``worlds``). Each turn the model's text is one command typed into the game
(``go north``, ``take the red apple``); the game's answer is the next observation, followed
by the score and, unless ``admissible=false``, the commands the game would accept there.
The step reward is the gain in the game's score over its maximum, so the step rewards add up
to the verdict's reward, ``score / max_score``: 1 exactly when the game is won.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from typing import Any, ClassVar

from palaestra import (
    ConfigError,
    JsonDict,
    Session,
    StepEnvironment,
    StepResult,
    Verdict,
    first_command,
    strip_reasoning,
    task_row,
)
from palaestra.envs.text_worlds.worlds import (
    DIFFICULTIES,
    World,
    settings_for,
    textworld_version,
    world_of,
)
from palaestra.envs.text_worlds.worlds import start as start_game
from palaestra.envs.text_worlds.worlds import walkthrough as game_walkthrough

RULES = (
    "You are playing a text adventure game. Each turn I show you what you see; you answer "
    "with exactly one command for the game, in plain words, such as: go north, open the "
    "fridge, take the red apple, put the knife on the table, examine the cookbook, inventory. "
    "Read the goal at the start and follow it; the score goes up as you get closer to it. "
    "Answer with just the command."
)
META_COMMANDS = frozenset(
    {"quit", "q", "restart", "restore", "save", "undo", "script", "unscript", "transcript"}
)
"""Commands that would leave the story itself (start again, undo): refused, never sent."""
_BANNER = re.compile(r"^[\s$|\\/_<>]+$")
_WORDS = re.compile(r"[a-z0-9'-]+")
_ARTICLES = frozenset({"the", "a", "an", "some"})


class TextWorlds(StepEnvironment):
    """TextWorld text adventures (cooking quests, random houses): dense score rewards, walkthroughs.

    ``kind``, ``difficulty``, ``world_size`` and ``quest_length`` choose what is generated;
    each task carries its own world."""

    name = "text_worlds"
    seed_timeout: ClassVar[float] = 600.0
    """A game not yet in the cache is made by ``seed`` (seconds each, one at a time)."""

    def __init__(
        self,
        kind: str = "cooking",
        difficulty: str = "easy",
        world_size: int | None = None,
        quest_length: int | None = None,
        admissible: bool = True,
    ) -> None:
        """``kind``: ``cooking`` (TextWorld's cooking challenge) or ``custom`` (a random
        house and quest); ``difficulty``: easy, medium or hard; ``world_size`` (rooms) and
        ``quest_length`` (actions, custom only) override the difficulty's; ``admissible``:
        show the commands the game accepts after each observation."""
        self.kind = str(kind)
        self.difficulty = str(difficulty)
        self.settings = settings_for(
            self.kind, self.difficulty, _whole(world_size), _whole(quest_length)
        )
        self.admissible = _flag(admissible)
        textworld_version()  # a missing TextWorld stops the run here, in one line

    def seed(self, task: JsonDict) -> Any:
        world = world_of(task)
        return {
            "game": start_game(world), "score": 0, "max_score": 0, "moves": 0, "refused": 0,
            "won": False, "lost": False, "over": False, "admissible": [],
        }  # fmt: skip

    def close(self, session: Session) -> None:
        state = session.state
        if isinstance(state, dict) and state.get("game") is not None:
            state["game"].close()
            state["game"] = None

    def reset(self, session: Session) -> str:
        state = session.state
        game_state = state["game"].reset()
        state["max_score"] = int(game_state.max_score or 0)
        state["admissible"] = admissible_of(game_state)
        return self._observation(state, game_state, clean_feedback(game_state.feedback))

    def step(self, session: Session, action: str) -> StepResult:
        state = session.state
        if state["over"]:
            return StepResult("The game is over.", terminated=True)
        command = pick_command(action, state["admissible"])
        if not command:
            state["refused"] += 1
            return StepResult("Refused: answer with one command for the game. What do you do?")
        if command in META_COMMANDS:
            state["refused"] += 1
            return StepResult(f"Refused: {command!r} is not a move in the story. What do you do?")
        game_state, _, done = state["game"].step(command)
        before = state["score"]
        state["score"] = int(game_state.score or 0)
        state["moves"] += 1
        state["won"] = bool(game_state.won)
        state["lost"] = bool(game_state.lost)
        state["over"] = bool(done or state["won"] or state["lost"])
        state["admissible"] = admissible_of(game_state)
        gained = (state["score"] - before) / state["max_score"] if state["max_score"] else 0.0
        feedback = clean_feedback(game_state.feedback)
        text = feedback if state["over"] else self._observation(state, game_state, feedback)
        return StepResult(text, reward=gained, terminated=state["over"])

    def _observation(self, state: JsonDict, game_state: Any, feedback: str) -> str:
        lines = [feedback, f"[Score: {state['score']} of {state['max_score']}.]"]
        if self.admissible:
            lines.append("Commands you can use: " + "; ".join(state["admissible"]))
        lines.append("What do you do?")
        return "\n".join(lines)

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        state = session.state
        top = state["max_score"]
        world = session.task.get("world", {})
        return Verdict(
            reward=state["score"] / top if top else 0.0,
            step_rewards=list(session.step_rewards),
            metrics={
                "kind": world.get("kind", "") if isinstance(world, dict) else "",
                "difficulty": session.task.get("difficulty", ""),
                "won": state["won"],
                "lost": state["lost"],
                "score": state["score"],
                "max_score": top,
                "moves": state["moves"],
                "refused_actions": state["refused"],
            },
        )

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]]:
        """TextWorld's walkthrough, one command per turn."""
        return [
            [{"role": "assistant", "content": command}]
            for command in game_walkthrough(world_of(task))
        ]

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """``count`` games of the chosen kind and settings, each from its own seed."""
        rng = random.Random(seed)
        for _ in range(count):
            world = World(self.kind, dict(self.settings), rng.randrange(2**31))
            yield task(world, self.difficulty)


def task(world: World, difficulty: str) -> JsonDict:
    return task_row(None, system=RULES, world=world.row(), difficulty=difficulty)


def clean_feedback(text: str) -> str:
    """The game's text without its title banner, prompt and status line, blank runs folded."""
    kept: list[str] = []
    for line in str(text or "").splitlines():
        stripped = line.strip()
        banner = len(stripped) > 2 and _BANNER.match(stripped)
        if stripped.startswith(">") or banner:
            continue
        if "Would you like to RESTART" in stripped:
            continue
        if not stripped and (not kept or not kept[-1]):
            continue
        kept.append(stripped)
    return "\n".join(kept).strip()


def pick_command(action: str, admissible: list[str]) -> str:
    """The command the answer gives: its first line (``first_command``) when that is one the
    game accepts here or no accepted command is in the answer; else the accepted command the
    answer names first, read without articles ("I will take the knife from the counter." is
    ``take knife from counter``). The game's parser judges whatever is sent."""
    command = first_command(action)
    if not command or command in admissible:
        return command
    words = _WORDS.findall(strip_reasoning(str(action)).lower())
    text = " " + " ".join(word for word in words if word not in _ARTICLES) + " "
    found = [(text.find(f" {c} "), -len(c), c) for c in admissible if f" {c} " in text]
    return min(found)[2] if found else command


def admissible_of(game_state: Any) -> list[str]:
    return [str(command) for command in (game_state.admissible_commands or [])]


def _whole(value: Any) -> int | None:
    """A size argument from the command line (``--env-arg world_size=6``) as a number."""
    if value is None or isinstance(value, int):
        return value
    try:
        return int(str(value))
    except ValueError:
        raise ConfigError(f"text_worlds: expected a whole number, not {value!r}") from None


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"text_worlds: admissible must be true or false, not {value!r}")


__all__ = ["DIFFICULTIES", "TextWorlds", "clean_feedback", "task"]
