"""science_world: AllenAI's ScienceWorld on the reset/step protocol, the simulator's score as
dense per-step reward.

A task names one of ScienceWorld's 30 tasks (``boil``, ``find-living-thing``, ...) and one of
its variations; the simulator (a JVM per game, ``games``) plays it. Each turn the model's text
is one command (``open door to kitchen``, ``focus on water``); the simulator's answer is the
next observation, followed by the score. The game scores 0 to 100 as the task's subgoals are
reached; the step reward is the gain over 100, so the step rewards add up to the verdict's
reward, ``score / 100``: 1 exactly when the task is completed. A task failed (the game's
score below 0, e.g. focusing on the wrong thing) ends the episode with reward 0.

A sibling of ``text_worlds`` rather than a kind inside it: its rows name a task and variation
instead of a recipe to generate, its games are processes to bound and stop, not files, and its
score is out of 100 with failure as a negative score.
"""

from __future__ import annotations

import random
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
    task_row,
)
from palaestra.envs.science_world.games import (
    MAX_GAMES,
    SIMPLIFICATIONS,
    SPLITS,
    Games,
    game_of,
    move,
    restart,
    scienceworld_version,
    task_names,
    variations,
)

RULES = (
    "You are doing a science task in a text simulation of a house with a kitchen, a "
    "workshop, a greenhouse and more. Each turn I show you what happened; you answer with "
    "exactly one command, such as: look around, go to kitchen, open door to kitchen, pick "
    "up thermometer, focus on water, move pot to stove, activate stove, wait, inventory. "
    "Focus on an object only when the task asks for it: focusing on the wrong one fails the "
    "task. The score goes up as you get closer to the goal. Answer with just the command."
)
REFUSED = frozenset({"reset task", "quit", "exit", "restart"})
"""Commands that would leave or restart the task: refused, never sent."""
_HIDDEN = REFUSED | {"wait1"}
"""Templates not shown: the refused ones and ``wait1`` (``wait`` for one tick)."""
SPLIT_LISTS: dict[tuple[str, str], list[int]] = {}
"""Each task's variations in a split, by (task name, split): the package's own fixed lists,
read once per process (asking starts a simulator)."""


class ScienceWorld(StepEnvironment):
    """ScienceWorld's 30 elementary-science tasks (boil, grow plants, build circuits...): the
    simulator's score as dense reward, its gold path as oracle.

    ``split`` (train, dev or test) chooses the variations ``generate_tasks`` draws from;
    ``simplifications`` (e.g. ``easy``, or ``openDoors,teleportAction``) is passed to the
    simulator for generated tasks. ``max_games`` bounds the games (JVMs) this environment has
    alive at once: a rollout beyond it waits for a free one."""

    name = "science_world"
    seed_timeout: ClassVar[float] = 300.0
    """A game starts a JVM and loads its task (seconds), after waiting for a free slot."""
    close_timeout: ClassVar[float] = 30.0

    def __init__(
        self, split: str = "dev", simplifications: str = "", max_games: int = MAX_GAMES
    ) -> None:
        if split not in SPLITS:
            raise ConfigError(
                f"science_world: split must be one of {', '.join(SPLITS)}, not {split!r}"
            )
        for simplification in filter(None, str(simplifications).split(",")):
            if simplification not in SIMPLIFICATIONS:
                raise ConfigError(
                    f"science_world: simplifications: {simplification!r} is not one of "
                    f"{', '.join(SIMPLIFICATIONS)} (comma-separated)"
                )
        self.split = split
        self.simplifications = str(simplifications)
        self.games = Games(max_games)  # a bad max_games is one ConfigError line
        scienceworld_version()  # a missing package or JRE stops the run here, in one line

    def seed(self, task: JsonDict) -> Any:
        name, variation, simplifications = game_of(task)
        return {
            "game": self.games.start(name, variation, simplifications), "score": 0, "moves": 0,
            "refused": 0, "completed": False, "failed": False, "over": False,
        }  # fmt: skip

    def close(self, session: Session) -> None:
        state = session.state
        if isinstance(state, dict) and state.get("game") is not None:
            state["game"].close()
            state["game"] = None

    async def aclose(self) -> None:
        self.games.stop_all()

    def reset(self, session: Session) -> str:
        env = session.state["game"].env
        observation = restart(env)
        templates = ", ".join(str(a) for a in env.get_possible_actions() if a not in _HIDDEN)
        return "\n".join(
            [
                str(env.get_task_description()).strip(),
                "",
                str(observation).strip(),
                "[Score: 0 of 100.]",
                f"Commands (OBJ is a thing you can see): {templates}.",
                "What do you do?",
            ]
        )

    def step(self, session: Session, action: str) -> StepResult:
        state = session.state
        if state["over"]:
            return StepResult("The task is over.", terminated=True)
        command = first_command(action)
        if not command or command in REFUSED:
            state["refused"] += 1
            what = f"{command!r} is not a move in the task" if command else "answer with one"
            return StepResult(f"Refused: {what} command. What do you do?")
        env = state["game"].env
        observation, score, done = move(env, command)
        before = max(state["score"], 0)
        state["score"] = score
        state["moves"] += 1
        state["completed"] = bool(env.server.getCompleted()) and score >= 100
        state["failed"] = score < 0
        state["over"] = bool(done or state["completed"] or state["failed"])
        gained = (max(score, 0) - before) / 100
        text = observation.strip()
        if not state["over"]:
            text += f"\n[Score: {max(score, 0)} of 100.]\nWhat do you do?"
        elif state["failed"]:
            text += "\nThe task has failed."
        return StepResult(text, reward=gained, terminated=state["over"])

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        state = session.state
        return Verdict(
            reward=max(state["score"], 0) / 100,
            step_rewards=list(session.step_rewards),
            metrics={
                "task_name": session.task.get("task_name", ""),
                "variation": session.task.get("variation", -1),
                "score": state["score"],
                "moves": state["moves"],
                "completed": state["completed"],
                "failed": state["failed"],
                "refused_actions": state["refused"],
            },
        )

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]]:
        """The simulator's gold path, one command per turn."""
        return [
            [{"role": "assistant", "content": command}] for command in self.games.gold_path(task)
        ]

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """``count`` (task, variation) pairs of the chosen split: the task types in a shuffled
        round, each with a variation drawn from the package's split. Listing a task's split
        loads it in a simulator, so one game is started for the listings this process has not
        made yet (``SPLIT_LISTS``) and stopped."""
        rng = random.Random(seed)
        names = task_names()
        picks: list[str] = []
        while len(picks) < count:
            round_ = list(names)
            rng.shuffle(round_)
            picks.extend(round_[: count - len(picks)])
        unlisted = [name for name in dict.fromkeys(picks) if (name, self.split) not in SPLIT_LISTS]
        if unlisted:
            game = self.games.start(names[0], 0)
            try:
                for name in unlisted:
                    game.env.load(name, 0, "")
                    SPLIT_LISTS[name, self.split] = variations(game, self.split)
            finally:
                game.close()
        for name in picks:
            variation = rng.choice(SPLIT_LISTS[name, self.split])
            yield task(name, variation, self.split, self.simplifications)


def task(name: str, variation: int, split: str = "dev", simplifications: str = "") -> JsonDict:
    row = task_row(None, system=RULES, task_name=name, variation=variation, split=split)
    if simplifications:
        row["simplifications"] = simplifications
    return row


__all__ = ["RULES", "ScienceWorld", "task"]
