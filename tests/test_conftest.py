"""How tests/conftest.py hands the test groups to xdist's workers."""

from __future__ import annotations

from tests.conftest import FIRST, HEAVY, group_of, next_group

MODEL = "tests/cli/test_collect_local.py::test_weather_rollouts"
TRAINER = "tests/examples/test_train_trl_multiturn.py"
BOXES = "tests/envs/terminal/test_environment.py"
QUICK = "tests/_util/test_arguments.py"


def test_the_first_groups_go_first_in_their_order_then_the_queues() -> None:
    assert FIRST.index(TRAINER) < FIRST.index(BOXES)
    assert next_group([QUICK, BOXES, TRAINER], heavy_elsewhere=0) == TRAINER
    assert next_group([QUICK, "tests/a.py"], heavy_elsewhere=0) == QUICK


def test_a_worker_takes_a_light_group_while_two_others_run_heavy_ones() -> None:
    assert group_of(MODEL) in {MODEL} and MODEL.partition("::")[0] in HEAVY
    waiting = [MODEL, TRAINER, QUICK, BOXES]
    assert next_group(waiting, heavy_elsewhere=1) == TRAINER
    assert next_group(waiting, heavy_elsewhere=2) == BOXES  # the first light one by rank
    assert next_group([MODEL, TRAINER], heavy_elsewhere=2) == TRAINER  # only heavy ones left
