"""The embedded model as a rubric's judge: its replies are read for a label or refused.

SmolLM2-135M does not follow the judge's format (measured here: it answers the question
instead, "2 + 3 = 5"), so a rubric judged by it must end in an explicit failure naming the
part, never in a reward; and a failure is not cached, so the next rollout asks again.
"""

from __future__ import annotations

import pytest

from palaestra.environment.context import EnvironmentContext
from palaestra.environment.judge import DIFFERENT, EQUIVALENT, JudgeModels
from palaestra.environment.rubric import Rubric, criterion, equivalence
from palaestra.environment.sessions import Session
from palaestra.types import FailureKind, assistant_message
from tests.models.test_local import needs_local

pytestmark = [pytest.mark.local_model, needs_local]


async def test_the_embedded_judge_gives_a_label_or_a_failure_never_a_bare_number() -> None:
    judges = JudgeModels(None, "local", None)
    rubric = Rubric(
        equivalence("judged", judges, both_orders=False),
        criterion("has_digit", lambda s: any(c.isdigit() for c in s.answer)),
    )
    session = Session("s", {"question": "What is 2 + 3?", "expected_answer": "5"}, {})
    response = {"output": [assistant_message("5")]}
    try:
        first = await rubric.score(session, response, EnvironmentContext())
        second = await rubric.score(session, response, EnvironmentContext())
    finally:
        await judges.aclose()
    if first.failure is not None:
        assert first.failure.kind is FailureKind.VERIFIER_ERROR
        assert first.failure.reason.startswith("rubric part 'judged': the judge replied without")
        assert second.failure is not None and judges.cache.calls == 2 and len(judges.cache) == 0
    else:  # a label: kept as a component, and the second rollout read it from the cache
        assert first.metrics["judged/labels"] in {EQUIVALENT, DIFFERENT}
        assert first.reward_components is not None
        assert set(first.reward_components) == {"judged", "has_digit"}
        assert second.metrics["judged/cached"] == 1 and judges.cache.calls == 1
