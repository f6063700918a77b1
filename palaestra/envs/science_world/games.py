"""ScienceWorld games: one Java process per game, started on demand and always stopped.

ScienceWorld (AllenAI) is a simulator written in Scala; its Python package ships the simulator
as ``scienceworld.jar`` and talks to it through py4j. Each ``ScienceWorldEnv`` starts its own
JVM (about 2 s, and 500 to 700 MB of memory once a task is loaded), so the number of games
alive at once is bounded: a ``Games`` (one per environment instance, its ``max_games``) hands
out slots, and a rollout waits for a free slot before its game starts. Every game a ``Games``
started is remembered until it is stopped, so the environment's ``aclose`` stops what a
cancelled rollout left behind; py4j's ``die_on_exit`` ends the JVMs of a process that dies.

``scienceworld`` is imported only here, and only when a game starts, so listing the
environments needs neither the package nor Java.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
from importlib import metadata
from typing import Any

from palaestra import ConfigError, EnvironmentTimeout, InvalidTask, JsonDict

SPLITS = ("train", "dev", "test")
SIMPLIFICATIONS = (
    "easy",
    "teleportAction",
    "selfWateringFlowerPots",
    "openContainers",
    "openDoors",
    "noElectricalAction",
)
"""What the simulator takes as ``simplifications`` (comma-separated; ``easy`` is all of them)."""
INSTALL_PACKAGE = "pip install --no-deps scienceworld==1.2.3 py4j==0.10.9.9"
INSTALL_JAVA = "apt-get install default-jre-headless"
MAX_GAMES = 4
"""Games (JVMs) alive at once per environment by default; its ``max_games`` sets it."""
SLOT_WAIT = 240.0
"""Seconds a rollout waits for a free game before it fails as a timeout (within
``seed_timeout``)."""
STEP_LIMIT = 10_000
"""The game's own move limit, set out of the way: ``--max-steps`` bounds an episode."""


def scienceworld_version() -> str:
    """The installed ScienceWorld's version, after checking that Java can run it; a missing
    package or JRE is one ``ConfigError`` line naming the install command."""
    try:
        version = metadata.version("scienceworld")
        metadata.version("py4j")
    except metadata.PackageNotFoundError:
        raise ConfigError(
            f"science_world needs ScienceWorld: {INSTALL_PACKAGE} (or bash scripts/install.sh)"
        ) from None
    if shutil.which("java") is None:
        raise ConfigError(
            f"science_world needs a Java runtime (java on PATH): {INSTALL_JAVA} "
            "(or bash scripts/install.sh as root)"
        )
    return version


class Game:
    """One ScienceWorld simulator (its own JVM) holding one loaded task variation; its slot
    belongs to the ``Games`` that started it."""

    def __init__(self, env: Any, games: Games) -> None:
        self.env = env
        self.closed = False
        self._games = games
        self._lock = threading.Lock()

    @property
    def pid(self) -> int:
        return int(self.env._gateway.java_process.pid)

    def memory_kb(self) -> int:
        """The JVM's resident memory (Linux), for measuring what a game costs."""
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def close(self) -> None:
        """Stop the JVM: py4j's shutdown, then a kill if it has not exited within seconds.
        Safe to call twice and from any thread; frees the game's slot."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        process: subprocess.Popen[bytes] = self.env._gateway.java_process
        with contextlib.suppress(Exception):  # a broken gateway still leaves a process to kill
            self.env.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        finally:
            self._games._release(self)


class Games:
    """The games of one environment: at most ``limit`` alive at once (a semaphore), each
    remembered until it is stopped. A game that waits ``slot_wait`` seconds for a free slot
    fails as a timeout (within the environment's ``seed_timeout``)."""

    def __init__(self, limit: int, slot_wait: float = SLOT_WAIT) -> None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ConfigError(
                f"science_world: max_games must be a whole number >= 1, not {limit!r}"
            )
        self.limit = limit
        self.slot_wait = slot_wait
        self._slots = threading.BoundedSemaphore(limit)
        self._live: set[Game] = set()
        self._lock = threading.Lock()

    def start(
        self, task_name: str, variation: int, simplifications: str = "", gold: bool = False
    ) -> Game:
        """A new game of ``task_name``'s ``variation``, loaded (with its gold path if ``gold``);
        waits for a free slot first. The JVM is stopped if loading fails."""
        scienceworld_version()
        if not self._slots.acquire(timeout=self.slot_wait):
            raise EnvironmentTimeout(
                f"science_world: no free game after {self.slot_wait:.0f} s "
                f"({self.limit} alive at most)"
            )
        try:
            from scienceworld import ScienceWorldEnv

            env = ScienceWorldEnv("", envStepLimit=STEP_LIMIT)
        except BaseException:
            self._slots.release()
            raise
        game = Game(env, self)
        with self._lock:
            self._live.add(game)
        try:
            top = int(env.get_max_variations(task_name))
            if variation >= top:  # the simulator would quietly load another variation
                raise InvalidTask(
                    f"science_world: {task_name} has variations 0 to {top - 1}, not {variation}"
                )
            env.load(task_name, variation, simplifications, generateGoldPath=gold)
        except BaseException:
            game.close()
            raise
        return game

    def stop_all(self) -> int:
        """Stop every game of these still alive (the environment's ``aclose``); how many."""
        with self._lock:
            games = list(self._live)
        for game in games:
            game.close()
        return len(games)

    def live(self) -> int:
        with self._lock:
            return len(self._live)

    def gold_path(self, task: JsonDict) -> list[str]:
        """The simulator's gold action sequence for the task (a winning path, not always the
        shortest), from a game started for the purpose and stopped."""
        name, variation, simplifications = game_of(task)
        game = self.start(name, variation, simplifications, gold=True)
        try:
            return [str(action) for action in game.env.get_gold_action_sequence()]
        finally:
            game.close()

    def _release(self, game: Game) -> None:
        with self._lock:
            self._live.discard(game)
        self._slots.release()


def task_names() -> list[str]:
    """ScienceWorld's 30 task names, from the package's task list (no JVM needed)."""
    scienceworld_version()
    from scienceworld.constants import ID2TASK

    return [str(name) for name in ID2TASK.values()]


def variations(game: Game, split: str) -> list[int]:
    """The variations of the game's loaded task in ``split`` (the package's own split)."""
    read = {
        "train": game.env.get_variations_train,
        "dev": game.env.get_variations_dev,
        "test": game.env.get_variations_test,
    }[split]
    return [int(v) for v in read()]


def move(env: Any, command: str) -> tuple[str, int, bool]:
    """Play ``command`` in ``env`` (a ``ScienceWorldEnv``): the observation, the score (0 to
    100, below 0 when the task failed) and whether the game is over, as ``env.step`` decides
    it (completed, out of moves, or failed).

    ``env.step`` also looks around, reads the inventory and the task and lists every valid
    action-object combination after each move, for agents that show them; a turn here shows
    none of them, and listing the combinations is most of a move's cost (in the simulator,
    and in py4j's copy of the list)."""
    server = env.server
    observation = str(server.step(command))
    score = round(100 * float(server.getScore()))
    over = bool(server.getCompleted()) or int(server.getNumMoves()) > env.envStepLimit
    return observation, score, over or score < 0


def restart(env: Any) -> str:
    """Start ``env``'s task over (``env.reset`` without its listing, see ``move``): the
    first observation, the room as ``look around`` shows it."""
    env.server.reset()
    env.lastStepScore = 0
    observation, _, _ = move(env, "look around")
    return observation


def game_of(task: JsonDict) -> tuple[str, int, str]:
    """The task's ``task_name``, ``variation`` and ``simplifications``, checked: a bad row is
    an ``InvalidTask`` saying which field is wrong."""
    name, variation = task.get("task_name"), task.get("variation")
    simplifications = task.get("simplifications", "")
    if not isinstance(name, str) or not name:
        raise InvalidTask("science_world: a task needs 'task_name' (one of ScienceWorld's tasks)")
    if name not in task_names():
        raise InvalidTask(f"science_world: unknown task_name {name!r}")
    if not isinstance(variation, int) or isinstance(variation, bool) or variation < 0:
        raise InvalidTask("science_world: 'variation' must be a whole number >= 0")
    if not isinstance(simplifications, str):
        raise InvalidTask("science_world: 'simplifications' must be a string such as 'easy'")
    return name, variation, simplifications


__all__ = [
    "MAX_GAMES",
    "SPLITS",
    "Game",
    "Games",
    "game_of",
    "scienceworld_version",
    "task_names",
    "variations",
]
