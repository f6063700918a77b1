"""An LLM judge of answer equivalence, shared by ``equivalence_judge`` and ``math``.

The judge sees the question and two answers and must reply with one line, ``VERDICT:
EQUIVALENT`` or ``VERDICT: DIFFERENT``. Asked in both orders (the reference first, then the
candidate first), the answers count as equivalent only when both replies say so. A reply
without a verdict label, or a judge model that fails, is a ``JudgeFailure``: the rollout cannot
be scored, which is not the same as a wrong answer. A judge that is gone (unreachable after its
retries, or hung) is a ``ModelOutage``: the run stops as for the policy's model, and a run
whose judge is gone at its start is refused (``JudgeModels.check``).

A ``JudgeCache`` keeps the labels already given: the same question with the same two answers in
the same order asks the model once (a group of rollouts often repeats an answer), and a second
rollout that asks while the first is waiting shares its call. Only labels are kept, never a
failure, so a judge that erred is asked again. Each ``JudgeModels`` has one (bounded, in this
process).
"""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from palaestra.environment.context import EnvironmentContext
from palaestra.errors import ModelError, ModelOutage, VerifierFailure
from palaestra.models.base import Model
from palaestra.types import FailureKind, JsonDict, output_text

EQUIVALENT = "EQUIVALENT"
DIFFERENT = "DIFFERENT"
JUDGE_INSTRUCTIONS = (
    "You compare two answers to the same question. Decide whether they give the same final "
    "answer. Ignore wording, formatting, capitalisation, the order of items where order does "
    "not matter, equivalent notations (0.5 and 1/2) and any explanation around the final "
    "answer. Reply with exactly one line: 'VERDICT: EQUIVALENT' if the final answers are the "
    "same, or 'VERDICT: DIFFERENT' if they are not."
)
JUDGE_PROMPT = "Question:\n{question}\n\nAnswer 1:\n{first}\n\nAnswer 2:\n{second}"
_LABEL = re.compile(rf"VERDICT\s*:\s*\**\s*({EQUIVALENT}|{DIFFERENT})\b", re.IGNORECASE)
_BARE = re.compile(rf"^\W*({EQUIVALENT}|{DIFFERENT})\W*$", re.IGNORECASE)
MAX_ANSWER_CHARS = 4000
JUDGE = "the judge"
"""How failures and a run's stop name the judge model."""


class JudgeFailure(VerifierFailure):
    """The judge could not give a verdict (model error, or a reply without a label)."""


@dataclass(frozen=True, slots=True)
class Judgement:
    """What the judge said of a candidate answer against the reference."""

    equivalent: bool
    """True only when every order asked said EQUIVALENT."""
    labels: tuple[str, ...]
    """The label of each order asked: reference first, then (if asked) candidate first."""
    cached: int = 0
    """How many of those labels came from the cache instead of a model call."""

    @property
    def agreed(self) -> bool:
        return len(set(self.labels)) == 1


def parse_label(reply: str) -> str:
    """The verdict label of a judge reply (the last ``VERDICT: ...``, or a bare label)."""
    found = _LABEL.findall(reply)
    if found:
        return str(found[-1]).upper()
    bare = _BARE.match(reply.strip())
    if bare:
        return bare.group(1).upper()
    raise JudgeFailure(f"the judge replied without a verdict label: {reply.strip()[:200]!r}")


CacheKey = tuple[str, str, int]
"""The judge's name, the whole prompt (instructions, question, both answers in order) and the
output budget: what decides the label."""


class JudgeCache:
    """Labels a judge already gave, by prompt: least recently used first out past
    ``max_entries``. One per judge model; not shared between processes (each keeps its own)."""

    def __init__(self, max_entries: int = 4096) -> None:
        if max_entries < 1:
            raise ValueError("a judge cache holds at least one label")
        self.max_entries = max_entries
        self.calls = 0
        """Model calls made through this cache (a cached or shared label is not one)."""
        self._labels: OrderedDict[CacheKey, str] = OrderedDict()
        self._pending: dict[CacheKey, asyncio.Future[str]] = {}

    def __len__(self) -> int:
        return len(self._labels)

    async def label(self, key: CacheKey, ask: Callable[[], Awaitable[str]]) -> tuple[str, bool]:
        """The label for ``key``: kept, awaited from a call already asking it, or asked now.
        The second value says whether no model call was made for it here."""
        found = self._labels.get(key)
        if found is not None:
            self._labels.move_to_end(key)
            return found, True
        loop = asyncio.get_running_loop()
        pending = self._pending.get(key)
        if pending is not None and pending.get_loop() is loop:
            try:
                return await asyncio.shield(pending), True
            except asyncio.CancelledError:
                if not pending.cancelled():
                    raise  # this caller was cancelled, not the call it waited for
            # the caller that was asking was cancelled: ask again here
        future: asyncio.Future[str] = loop.create_future()
        self._pending[key] = future
        self.calls += 1
        try:
            label = await ask()
        except BaseException as error:
            if isinstance(error, Exception):
                future.set_exception(error)
                future.exception()  # retrieved: a failure nobody shared logs no warning
            else:
                future.cancel()
            raise
        finally:
            if self._pending.get(key) is future:
                del self._pending[key]
        future.set_result(label)
        self._labels[key] = label
        if len(self._labels) > self.max_entries:
            self._labels.popitem(last=False)
        return label, False


async def judge(
    model: Model,
    question: str,
    reference: str,
    candidate: str,
    *,
    both_orders: bool = True,
    max_output_tokens: int = 32,
    cache: JudgeCache | None = None,
) -> Judgement:
    """Ask ``model`` whether ``candidate`` is equivalent to ``reference`` (through ``cache``,
    when given, so a prompt already answered is not asked again)."""
    orders = [(reference, candidate)]
    if both_orders:
        orders.append((candidate, reference))
    labels = []
    cached = 0
    for first, second in orders:
        prompt = JUDGE_PROMPT.format(
            question=question, first=first[:MAX_ANSWER_CHARS], second=second[:MAX_ANSWER_CHARS]
        )
        ask = _asker(model, prompt, max_output_tokens)
        if cache is None:
            labels.append(await ask())
            continue
        key = (model.name, f"{JUDGE_INSTRUCTIONS}\n{prompt}", max_output_tokens)
        label, hit = await cache.label(key, ask)
        labels.append(label)
        cached += hit
    return Judgement(all(label == EQUIVALENT for label in labels), tuple(labels), cached)


def _asker(model: Model, prompt: str, max_output_tokens: int) -> Callable[[], Awaitable[str]]:
    async def ask() -> str:
        params: JsonDict = {
            "input": [
                {"role": "system", "content": JUDGE_INSTRUCTIONS},
                {"role": "user", "content": prompt},
            ],
            "temperature": 0.0,
            "max_output_tokens": max_output_tokens,
        }
        try:
            reply = await model.respond(params)
        except ModelError as error:
            raise judge_failed(error) from error
        return parse_label(output_text(reply))

    return ask


def judge_failed(error: ModelError) -> VerifierFailure | ModelOutage:
    """What a failed judge call fails: the run, when the judge is gone (a ``ModelOutage``,
    ``verifier_error``: the policy's stop rule), or only its rollout (``JudgeFailure``)."""
    outage = ModelOutage.of(error, JUDGE, FailureKind.VERIFIER_ERROR)
    return outage or JudgeFailure(f"the judge model failed: {error}")


class JudgeModels:
    """The judge model of an environment: given explicitly, or opened from a model spec once
    (through the environment's context, on first use) and kept until the environment closes.

    ``model`` given as text (``--env-arg judge=URL``) is the spec, opened as ``--model`` and
    ``--user-model`` open theirs (``local``, a URL, a configured name); it wins over ``spec``
    (the environment's default).
    """

    def __init__(
        self,
        model: Model | str | None,
        spec: str,
        model_name: str | None,
        *,
        cache: JudgeCache | None = None,
        within: float | None = None,
    ) -> None:
        self.cache = cache if cache is not None else JudgeCache()
        """The labels this judge gave (``judge(..., cache=judges.cache)``)."""
        self.within = within
        """The seconds one verify may wait on the judge (the environment's ``verify_timeout``):
        a judge opened from the spec asks both orders within it, so one that hangs times out
        (and counts toward the run's stop) before the verify does."""
        self._given = None if isinstance(model, str) else model
        self._spec = model if isinstance(model, str) else spec
        self._model_name = model_name
        self._opened: Model | None = None

    def use(self, context: EnvironmentContext) -> Model:
        """The judge: the given model, or the one opened from the spec (opened now if first)."""
        if self._given is not None:
            return self._given
        if self._opened is None:
            within = None if self.within is None else self.within / 2  # both orders
            self._opened = context.open_model(self._spec, self._model_name, within=within)
        return self._opened

    async def check(self, context: EnvironmentContext) -> None:
        """Reach the judge (``Environment.check_models``): ``ModelOutage`` when it is gone."""
        try:
            await self.use(context).check()
        except ModelError as error:
            raise judge_failed(error) from None

    async def aclose(self) -> None:
        if self._opened is not None:
            opened, self._opened = self._opened, None
            await opened.aclose()


def judge_metrics(result: Judgement) -> dict[str, Any]:
    """A verdict's metrics of a judgement: its labels, and whether both orders agreed."""
    return {"judge_labels": ",".join(result.labels), "judge_agreed": result.agreed}
