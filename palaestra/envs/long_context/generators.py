"""RULER's synthetic tasks, rebuilt from the package's parts, sized to a token budget.

Each family follows RULER's generator of the same name (``long_context_eval/data/synthetic/``:
``niah.py``, ``variable_tracking.py``, ``common_words_extraction.py``,
``freq_words_extraction.py``, ``qa.py``) with its configuration from ``synthetic.yaml``: the same
needles, chains, word lists, distributions, templates and answers. What differs (README): the
randomness is drawn per task from the task's seed; essays are split into sentences with a rule
instead of NLTK's punkt model; needle words are an adjective and a noun drawn separately; and the
haystack is sized by bisection on the counter's tokens instead of RULER's fixed increments.

A family's ``build(n)`` makes the prompt with ``n`` haystack units (essay words, noise
sentences, list words, documents) and is deterministic in ``(seed, n)``; ``fit`` finds the
largest ``n`` whose prompt fits the budget.
"""

from __future__ import annotations

import functools
import math
import random
import re
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from palaestra import ConfigError
from palaestra.envs.long_context import suite
from palaestra.envs.long_context.tokens import TokenCounter

Built = tuple[str, list[str]]
"""A prompt and its references (what the answer must contain)."""
Builder = Callable[[int], Built]

NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
DEPTHS = [round(i * 100 / 39) for i in range(40)]
"""RULER's needle depths: 40 points from 0% to 100% of the haystack's sentences."""
DOCUMENT = "Document {i}:\n{document}"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
RULER_SEED = 42
"""The seed RULER's scripts default to (``--random_seed``): it orders the word list once."""


@dataclass(frozen=True, slots=True)
class Generated:
    prompt: str
    outputs: list[str]
    units: int
    """Haystack units used (essay words, noise sentences, list words, documents)."""
    tokens: int
    """The prompt's tokens, as the counter counts them."""


def generate(family: str, seed: int, length: int, budget: int, count: TokenCounter) -> Generated:
    """The task ``family`` (a name of ``synthetic.yaml``) from ``seed``, its prompt at most
    ``budget`` tokens; ``length`` is the whole task's length (RULER reads it for some choices)."""
    config = suite.configs()[family]
    kind, args = str(config["task"]), dict(config.get("args") or {})
    build, upper = _builder(kind, args, seed, length, count)
    return fit(build, count, budget, upper, family)


def fit(build: Builder, count: TokenCounter, budget: int, upper: int, family: str) -> Generated:
    """The prompt of the largest ``n`` (1..``upper``) that fits ``budget`` tokens: proportional
    guesses, bisection when a guess leaves the bracket, stopping within 0.5% of the units."""
    fits, fails = 0, upper + 1
    best: Generated | None = None
    n = max(1, min(upper, 64))
    while fails - fits > max(1, fits // 200):
        prompt, outputs = build(n)
        tokens = count(prompt)
        if tokens <= budget:  # then go up, at least a little, at most eightfold
            fits, best = n, Generated(prompt, outputs, n, tokens)
            guess = min(max(n * budget // max(tokens, 1), n + max(1, n // 400)), n * 8)
        else:
            fails = n
            guess = min(n * budget // max(tokens, 1), n - 1)
        n = guess if fits < guess < fails else (fits + fails) // 2
        if n == fits:
            break
    if best is None:
        raise ConfigError(f"long_context: {family} does not fit in {budget} prompt tokens")
    return best


def _builder(
    kind: str, args: dict[str, Any], seed: int, length: int, count: TokenCounter
) -> tuple[Builder, int]:
    if kind == "niah":
        haystack = str(args.get("type_haystack", "essay"))
        upper = len(suite.essay_words()) if haystack == "essay" else 1_000_000
        return (lambda n: niah(seed, n, args)), upper
    if kind == "variable_tracking":
        example = variable_tracking_example(seed, args, count)
        return (lambda n: variable_tracking(seed, n, args, example)), 1_000_000
    if kind == "common_words_extraction":
        return (lambda n: common_words(seed, n, args, length)), len(_cwe_words())
    if kind == "freq_words_extraction":
        return (lambda n: frequent_words(seed, n, args, length)), 10_000_000
    if kind == "qa":
        dataset = str(args.get("dataset", "squad"))
        documents = suite.squad()[1] if dataset == "squad" else suite.hotpotqa()[1]
        return (lambda n: question_answering(seed, n, dataset)), len(documents)
    raise ConfigError(f"long_context: RULER task {kind!r} is not generated here")


def _template(kind: str) -> str:
    return str(suite.templates()[kind]["template"])


def _answer_prefix(kind: str) -> str:
    return str(suite.templates()[kind].get("answer_prefix", ""))


# --- needles in a haystack ---------------------------------------------------------------------


def _random_value(rng: random.Random, kind: str) -> str:
    if kind == "numbers":
        return str(rng.randint(1_000_000, 9_999_999))
    if kind == "words":
        return f"{rng.choice(suite.adjectives())}-{rng.choice(suite.nouns())}"
    if kind == "uuids":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    raise ConfigError(f"long_context: needle type {kind!r} is not one of RULER's")


def niah(seed: int, n: int, args: dict[str, Any]) -> Built:
    """RULER's needle in a haystack: ``num_needle_k`` keys with ``num_needle_v`` values each,
    ``num_needle_q`` keys asked; the haystack is essays, a repeated noise or other needles."""
    rng = random.Random(seed)
    type_k, type_v = str(args["type_needle_k"]), str(args["type_needle_v"])
    num_q = int(args.get("num_needle_q", 1))
    num_k, num_v = max(int(args.get("num_needle_k", 1)), num_q), int(args.get("num_needle_v", 1))
    keys: list[str] = []
    values: list[list[str]] = []
    needles: list[str] = []
    for _ in range(num_k):
        keys.append(_random_value(rng, type_k))
        values.append([])
        for _ in range(num_v):
            values[-1].append(_random_value(rng, type_v))
            needles.append(NEEDLE.format(type_needle_v=type_v, key=keys[-1], value=values[-1][-1]))
    random.Random(seed).shuffle(needles)
    haystack = str(args.get("type_haystack", "essay"))
    if haystack == "essay":
        sentences = _SENTENCE_END.split(" ".join(suite.essay_words()[:n]).strip())
        cuts = sorted(
            int(len(sentences) * depth / 100) for depth in rng.sample(DEPTHS, len(needles))
        )
        bounds = [0, *cuts, len(sentences)]
        pieces: list[str] = []
        for i in range(1, len(bounds)):
            pieces.append(" ".join(sentences[bounds[i - 1] : bounds[i]]))
            if i - 1 < len(needles):
                pieces.append(needles[i - 1])
        context = " ".join(pieces)
    else:
        n = max(n, len(needles))
        if haystack == "repeat":
            lines = [NOISE] * n
        else:
            lines = [
                NEEDLE.format(
                    type_needle_v=type_v,
                    key=_random_value(rng, type_k),
                    value=_random_value(rng, type_v),
                )
                for _ in range(n)
            ]
        for index, needle in zip(
            sorted(rng.sample(range(n), len(needles)), reverse=True), needles, strict=True
        ):
            lines.insert(index, needle)
        context = "\n".join(lines)
    asked = rng.sample(range(num_k), num_q)
    queries = [keys[i] for i in asked]
    answers = [value for i in asked for value in values[i]]
    query = ", ".join(queries[:-1]) + ", and " + queries[-1] if len(queries) > 1 else queries[0]
    template, shown_type = _template("niah"), type_v
    if num_q * num_v == 1:  # RULER's singular wording
        for plural, singular in (("Some", "A"), ("are all", "is"), ("are", "is")):
            template = template.replace(plural, singular)
        shown_type = type_v[:-1]
    return template.format(type_needle_v=shown_type, context=context, query=query), answers


# --- variable tracking -------------------------------------------------------------------------


def _chains(rng: random.Random, chains: int, hops: int, letters: int) -> list[list[str]]:
    """Each chain's variables, the first assigned a five-digit value, each next one the
    previous; RULER's names are ``letters`` random capitals, all distinct."""
    names = [
        "".join(rng.choices(string.ascii_uppercase, k=letters)) for _ in range((hops + 1) * chains)
    ]
    while len(set(names)) < chains * (hops + 1):
        names.append("".join(rng.choices(string.ascii_uppercase, k=letters)))
    return [names[start : start + hops + 1] for start in range(0, len(names), hops + 1)]


def _tracking(
    rng: random.Random, n: int, chains: int, hops: int, letters: int
) -> tuple[str, list[str], str]:
    """The prompt with ``n`` noise lines, the first chain's variables and its value."""
    variables = _chains(rng, chains, hops, letters)
    statements: list[list[str]] = []
    for chain in variables:
        lines = [f"VAR {chain[0]} = {rng.randint(10000, 99998)}"]
        lines += [f"VAR {chain[j + 1]} = VAR {chain[j]} " for j in range(hops)]
        statements.append(lines)
    sentences = [NOISE + "\n"] * n
    if len(sentences) <= len(statements[0]):
        sentences = [s.strip() + "." for s in NOISE.split(".") if s.strip()] * max(n, 1)
    for lines in statements:
        positions = sorted(rng.sample(range(len(sentences)), len(lines)))
        for offset, (position, line) in enumerate(zip(positions, lines, strict=True)):
            sentences.insert(position + offset, line)
    context = " ".join(sentences).replace(". \n", ".\n")
    value = statements[0][0].split("=")[-1].strip()
    prompt = _template("variable_tracking").format(context=context, query=value, num_v=hops + 1)
    return prompt, variables[0], value


def variable_tracking_example(seed: int, args: dict[str, Any], count: TokenCounter) -> str:
    """RULER's one worked example (about 500 tokens, three-letter names), with its answer."""
    chains, hops = int(args.get("num_chains", 1)), min(10, int(args.get("num_hops", 4)))
    prefix = _answer_prefix("variable_tracking")
    budget = 500 - int(suite.templates()["variable_tracking"]["tokens_to_generate"])

    def build(n: int) -> Built:
        prompt, names, value = _tracking(random.Random(seed ^ 0x5EED), n, chains, hops, 3)
        answer = prefix.format(num_v=hops + 1, query=value)
        return f"{prompt}{answer}{' '.join(names)}", names

    return fit(build, count, budget, 10_000, "variable tracking's example").prompt


def variable_tracking(seed: int, n: int, args: dict[str, Any], example: str) -> Built:
    """RULER's variable tracking: a chain of ``num_hops`` assignments from a five-digit value,
    hidden among ``n`` noise lines; every variable of the chain is an answer."""
    chains, hops = int(args.get("num_chains", 1)), int(args.get("num_hops", 4))
    prompt, names, _ = _tracking(random.Random(seed), n, chains, hops, 5)
    return f"{example}\n\n{prompt}", names


# --- common and frequent words -----------------------------------------------------------------


@functools.cache
def _cwe_words() -> list[str]:
    """RULER's list: nouns, adjectives and verbs, sorted, shuffled with its default seed."""
    words = sorted(set(suite.nouns() + suite.adjectives() + suite.verbs()))
    random.Random(RULER_SEED).shuffle(words)
    return words


def _word_list(
    rng: random.Random, seed: int, words: int, common: int, rare: int, commons: int
) -> tuple[str, list[str]]:
    chosen = rng.sample(_cwe_words(), words)
    frequent, others = chosen[:commons], chosen[commons:]
    listed = frequent * common + others * rare
    random.Random(seed).shuffle(listed)
    return _numbered(listed), frequent


def _numbered(words: list[str]) -> str:
    return " ".join(f"{i + 1}. {word}" for i, word in enumerate(words))


def common_words(seed: int, n: int, args: dict[str, Any], length: int) -> Built:
    """RULER's common words extraction: ``num_cw`` words repeated ``freq_cw`` times among
    others repeated ``freq_ucw`` times, after one worked example; below 4,096 tokens RULER
    uses 6 and 1 repeats (and a smaller example)."""
    rng = random.Random(seed)
    commons = int(args.get("num_cw", 10))
    n = max(n, commons)
    if length < 4096:
        example, example_answer = _word_list(rng, seed, 20, 3, 1, commons)
        context, answer = _word_list(rng, seed, n, 6, 1, commons)
    else:
        example, example_answer = _word_list(rng, seed, 40, 10, 3, commons)
        common, rare = int(args.get("freq_cw", 30)), int(args.get("freq_ucw", 3))
        context, answer = _word_list(rng, seed, n, common, rare, commons)
    template = _template("common_words_extraction")
    shown = template.format(context=example, query="") + _answer_prefix("common_words_extraction")
    prompt = f"{shown} {_numbered(example_answer)}\n{template.format(context=context, query='')}"
    return prompt, answer


def _zeta(alpha: float) -> float:
    """Riemann's zeta for ``alpha`` > 1 (Euler-Maclaurin after 1,000 terms: within 1e-9)."""
    terms = 1000
    head = math.fsum(math.pow(k, -alpha) for k in range(1, terms))
    return head + math.pow(terms, 1 - alpha) / (alpha - 1) + math.pow(terms, -alpha) / 2


def frequent_words(seed: int, n: int, args: dict[str, Any], length: int) -> Built:
    """RULER's frequent words extraction: about ``n`` coded words drawn by a Zipf law
    (``alpha``) over a vocabulary of length/50 six-letter words; the most frequent is the noise
    ``...``, the next three are the answer."""
    rng = random.Random(seed)
    alpha = float(args.get("alpha", 2.0))
    size = max(int(args.get("vocab_size", -1)), 0) or max(length // 50, 5)
    letters = int(args.get("coded_wordlen", 6))
    vocabulary = ["".join(rng.choices(string.ascii_lowercase, k=letters)) for _ in range(size)]
    while len(set(vocabulary)) < size:
        vocabulary.append("".join(rng.choices(string.ascii_lowercase, k=letters)))
    vocabulary = sorted(set(vocabulary))
    random.Random(seed).shuffle(vocabulary)
    vocabulary[0] = "..."
    zeta = _zeta(alpha)
    drawn = [
        word
        for rank, word in enumerate(vocabulary, start=1)
        for _ in range(int(n * rank**-alpha / zeta))
    ]
    random.Random(seed).shuffle(drawn)
    prompt = _template("freq_words_extraction").format(context=" ".join(drawn), query="")
    return prompt, vocabulary[1:4]


# --- question answering ------------------------------------------------------------------------


def question_answering(seed: int, n: int, dataset: str) -> Built:
    """RULER's QA: one question's own paragraphs among ``n`` documents (its article's others
    first, for SQuAD, then random ones), shuffled; any gold answer counts."""
    rng = random.Random(seed)
    questions, documents = suite.squad() if dataset == "squad" else suite.hotpotqa()
    question = questions[rng.randrange(len(questions))]
    own: list[int] = list(question["context"])
    near: list[int] = list(question.get("more_context", []))
    if n < len(documents):
        if n - len(own) > len(near):
            taken = set(own + near)
            rest = [i for i in range(len(documents)) if i not in taken]
            chosen = own + near + rng.sample(rest, max(0, n - len(own) - len(near)))
        else:
            chosen = own + rng.sample(near, max(0, n - len(own)))
    else:
        chosen = list(range(len(documents)))
    random.Random(seed).shuffle(chosen)
    context = "\n\n".join(
        DOCUMENT.format(i=i + 1, document=documents[index]) for i, index in enumerate(chosen)
    )
    prompt = _template("qa").format(context=context, query=question["query"])
    return prompt, [str(answer) for answer in question["outputs"]]
