"""The wire protocol: route names, session names and both halves of every codec (no web framework).

A server half (``palaestra.serve``: the ASGI apps) encodes with the functions here and its
client half (``palaestra.remote``) decodes with their twins, so the two cannot drift
(encoder -> decoder):

- an error (a non-2xx answer): ``error_body`` -> ``error_of``
- a failure: ``failure_fields`` (``failure_error`` when non-2xx) -> ``failure_from_fields``
- a verdict (``/verify``): ``verify_answer`` -> ``verdict_from_answer``
- a rollout (``/run``): ``run_answer`` -> ``run_result``
- a step (``/step``): ``step_answer`` -> ``step_from_answer``
- the first observation (``/reset``): ``reset_answer`` -> ``observation_of``
- the tools (``/tools``): ``tools_answer`` -> ``tools_of``

A failure travels as palaestra's own ``failure`` object and in the form NeMo Gym's collector
reads (``_ng_failure_class``), never as a bare ``reward`` a peer would count as a score.
Importing this module imports no web framework (``collect --env-url`` never loads Starlette).
"""

from __future__ import annotations

from typing import Any, Final

from palaestra.types import AgentResult, Failure, FailureKind, JsonDict, StepResult, Verdict
from palaestra.wire.open_responses import conform
from palaestra.wire.rows import (
    AGENT_REF,
    FACTS,
    FAILURE,
    NG_FAILURE_CLASS,
    NG_FAILURE_TERMINAL,
    PARAMS,
    RESPONSE,
    REWARD,
    REWARD_COMPONENTS,
    ROLLOUT_INDEX,
    STEP_REWARDS,
    TASK_INDEX,
)

__all__ = [
    "AGENT_REF",
    "FAILURE",
    "NG_FAILURE_CLASS",
    "NG_FAILURE_TERMINAL",
    "ROLLOUT_INDEX",
    "TASK_INDEX",
]

# --- routes ---------------------------------------------------------------------------------

LIVENESS: Final = "/"
"""``GET``: ``{"status": "ok", ...}`` on every server."""
SEED_SESSION: Final = "/seed_session"
VERIFY: Final = "/verify"
CLOSE_SESSION: Final = "/close_session"
AGGREGATE_METRICS: Final = "/aggregate_metrics"
TOOLS: Final = "/tools"
"""``GET`` (palaestra's addition): the tool schemas and the agent the environment asks for."""
RESET: Final = "/reset"
"""palaestra's turn-based extension: the first observation."""
STEP: Final = "/step"
USER_TURN: Final = "/user_turn"
"""palaestra's simulated-user extension: ``{"conversation": [...]}`` in, the user's turn out
(``user_turn_answer``); a server announces it in ``GET /tools`` (``"user_turn": true``)."""
HEALTH: Final = "/health"
"""NeMo Evaluator's health route (``GET``)."""
DATASET_SIZE: Final = "/dataset_size"
"""NeMo Evaluator's task count (``GET``)."""
RUN: Final = "/run"
"""An agent server: a task row in, one finished rollout out."""
RESPONSES: Final = "/v1/responses"
"""An agent or model server: create params in, one ``Response`` out."""

RESERVED_ROUTES: Final = frozenset(
    route[1:]
    for route in (
        SEED_SESSION,
        VERIFY,
        CLOSE_SESSION,
        AGGREGATE_METRICS,
        TOOLS,
        RESET,
        STEP,
        USER_TURN,
        HEALTH,
        DATASET_SIZE,
    )
)
"""Names an environment server answers itself: no tool may be called so."""
RESENDABLE_ROUTES: Final = frozenset({SEED_SESSION, CLOSE_SESSION})
"""Routes a client may send twice (a dead connection, a busy server): a second seed costs only
a session that expires, a second close is a no-op. Never a tool call, verify, reset or step."""


def tool_route(name: str) -> str:
    """The route of the tool called ``name`` (NeMo Gym: the function's name)."""
    return f"/{name}"


# --- sessions ---------------------------------------------------------------------------------

RESOURCES_SESSION_ID: Final = "resources_session_id"
EPISODE_ID: Final = "episode_id"
"""The fields of the newest NeMo Gym's ``/close_session`` body (``{resources_session_id: str,
episode_id: {rollout_id: str, attempt?: int}}``, no others), whose answer is
``{resources_session_id}``. A server that asks for them says so in its ``GET /openapi.json``;
the session it closes is still the one its cookie names. Older servers take ``{}``."""


def typed_close_body(session_id: str) -> JsonDict:
    """A ``/close_session`` body of the newest NeMo Gym's form for the session ``session_id``
    (letters, digits, ``.``, ``_``, ``-``: what an episode's ``rollout_id`` may hold)."""
    return {RESOURCES_SESSION_ID: session_id, EPISODE_ID: {"rollout_id": session_id}}


def close_fields(document: JsonDict) -> frozenset[str]:
    """The fields of the JSON body an OpenAPI ``document`` says its ``POST /close_session``
    takes (its schema, or the one its local ``$ref`` names); none when it says nothing."""
    try:
        content = document["paths"][CLOSE_SESSION]["post"]["requestBody"]["content"]
        schema = content["application/json"]["schema"]
        reference = schema.get("$ref")
        if isinstance(reference, str) and reference.startswith("#/"):
            schema = document
            for part in reference[2:].split("/"):
                schema = schema[part]
        return frozenset(schema.get("properties") or ())
    except (KeyError, TypeError, AttributeError):
        return frozenset()


SESSION_COOKIE: Final = "palaestra_session"
"""The signed session token, as a cookie (NeMo Gym's agents keep cookies)."""
SESSION_HEADER: Final = "x-palaestra-session"
"""The same token as a header, for clients that keep no cookies (palaestra's)."""

ROLLOUT_HEADER: Final = "x-palaestra-rollout"
"""Sent by palaestra's model clients on every call made inside a rollout: a short random id
naming it, so a model server over a pool keeps the rollout's calls on one endpoint."""
SESSION_ID_HEADER: Final = "x-session-id"
"""The same id under the name the ecosystem's routers read (vLLM's router, SkyRL, prime-rl,
verifiers): a router keeps a session's calls on one replica, where its prefix is cached.
palaestra's clients send both headers with one value on every model call of a rollout; a
palaestra model server over a pool routes by either (``ROLLOUT_HEADER`` first)."""
ROLLOUT_COOKIE: Final = "palaestra_rollout"
"""The same id as a cookie, which a pooled model server sets for clients that send no header:
NeMo Gym's agents send a model server's cookies back on the rollout's next call."""

FAILURES_HEADER: Final = "x-palaestra-failures"
"""Sent as ``x-palaestra-failures: error`` to ``/verify``: a failure in a session is answered
with an error status instead of NeMo Gym's 200 row (which carries a placeholder ``reward`` its
agents require). For clients that read only ``reward``, such as verifiers' NeMo Gym taskset."""

CLOSE_HEADER: Final = "x-palaestra-close"
"""Sent as ``x-palaestra-close: 1`` with a ``/verify`` in a token session: the server closes
the session once it has answered, so the rollout needs no ``/close_session`` of its own (one
HTTP exchange of five fewer per served rollout). A server that did close says so with
``x-palaestra-closed: 1`` on its 200; without that header (a NeMo Gym server, an older
palaestra, an error answer) the client closes as before."""
CLOSED_HEADER: Final = "x-palaestra-closed"

NO_ECHO_HEADER: Final = "x-palaestra-no-echo"
"""Sent as ``x-palaestra-no-echo: 1`` to a palaestra server that announces it takes it: the
answer leaves out what the request carried, which NeMo Gym's form echoes back.

- ``/verify`` in a token session of an env server announcing ``seed_with_first_call`` in
  ``GET /tools``: the answer is the verdict's fields alone (``reward`` and the verifier's
  fields, or the failure fields), and the body carries only ``response``, since such a server
  scores a session against the task it was seeded with.
- ``/run`` to an agent server whose ``GET /`` says ``"no_echo": true``: the answer is the
  rollout's ``response``, verdict (or failure) fields and ``_palaestra`` facts, without the
  task row the request carried.

A server that does not know the header echoes what it got, which reads the same
(``verdict_from_answer``, ``run_result``). Measured on the whole served path: writing and
parsing the echoes (and sending the task to /verify again) were 8% of a rollout's
instructions."""

SEED_HEADER: Final = "x-palaestra-seed"
"""Sent as ``x-palaestra-seed: <n>`` with a session route's ``POST`` (a tool, ``/verify``,
``/reset``, ``/step``) in place of a ``/seed_session`` of its own: the body's first ``n`` bytes
are the task to seed a session with, the rest is the route's own body, which runs in the new
session. The answer is the route's, carrying the new session's token (``x-palaestra-session``
and the cookie); an answer without the token is the seed's refusal or failure, as
``/seed_session`` would have answered it, and the route did not run. A palaestra server says it
takes this header in its ``GET /tools`` answer (``seed_with_first_call``); palaestra's env client
then sends no seed of its own (one HTTP exchange fewer per served rollout)."""

TASK_HEADER: Final = "x-palaestra-task"
"""Sent as ``x-palaestra-task: 1`` with NeMo Evaluator's ``/seed_session {"idx"}``: a palaestra
server adds ``task``, its whole row ``idx``, to the evaluator's answer (whose own fields stay as
they are). The evaluator's view (prompt, messages, metadata) cannot carry a row whole: the
tools and sampling of ``responses_create_params`` are not in it, and the task fields come
nested under ``metadata``, where no environment looks. palaestra's own client
(``palaestra.collection.served_tasks``) runs the row as the server holds it; from a server
that answers without ``task`` (``nel serve``, an older palaestra) it makes a row of the
evaluator's view, as before."""

# --- errors -----------------------------------------------------------------------------------

SESSION_LOST: Final = "session_lost"
"""The error ``type`` of a 404 naming a session the server does not know."""
SERVER_BUSY: Final = "server_busy"
"""The error ``type`` of a 503 refusing a seed over the session cap (with ``Retry-After``)."""
INVALID_REQUEST: Final = "invalid_request_error"
SERVER_ERROR: Final = "server_error"


def error_body(
    status: int, message: str, *, kind: str | None = None, param: str | None = None
) -> JsonDict:
    """OpenAI's error shape, which OpenAI clients and NeMo Gym's model client read."""
    if kind is None:
        kind = INVALID_REQUEST if status < 500 else SERVER_ERROR
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}


def error_of(body: Any) -> tuple[str | None, str]:
    """(error ``type``, message) of a non-2xx answer's parsed body, whoever sent it.

    OpenAI's shape first, then FastAPI's ``detail`` (NeMo Gym's servers), then the body itself.
    """
    if not isinstance(body, dict):
        return None, "" if body is None else str(body)[:300]
    detail = body.get("error", body.get("detail", body))
    if isinstance(detail, dict) and "message" in detail:
        kind = detail.get("type")
        return (kind if isinstance(kind, str) else None), str(detail["message"])
    return None, str(detail)[:300]


# --- failures ---------------------------------------------------------------------------------

# NeMo Gym 0.4 knows five failure classes (kill_shaped, timeout_exceeded, skipped, transient,
# legitimate). kill_shaped means "write nothing, re-dispatch on resume": palaestra never sends
# it, since its failures are records. A timed-out or invalid rollout is not retried by NeMo
# Gym's resume (terminal), the rest are, within its attempt budget.
_NG_CLASS: dict[FailureKind, tuple[str, bool]] = {
    FailureKind.TIMEOUT: ("timeout_exceeded", True),
    FailureKind.INVALID_INPUT: ("skipped", True),
    FailureKind.MODEL_ERROR: ("transient", False),
    FailureKind.SESSION_LOST: ("transient", False),
    FailureKind.WORKER_CRASH: ("transient", False),
}


def failure_fields(failure: Failure) -> JsonDict:
    """The fields a failed rollout (a row, a verify or run answer) carries."""
    ng_class, terminal = _NG_CLASS.get(failure.kind, ("legitimate", False))
    if failure.transient:  # an outage of a model or server, whatever part it served
        ng_class, terminal = "transient", False
    fields: JsonDict = {FAILURE: failure.to_json(), NG_FAILURE_CLASS: ng_class}
    if terminal:
        fields[NG_FAILURE_TERMINAL] = True
    return fields


def failure_error(failure: Failure) -> JsonDict:
    """The body of a non-2xx answer for a failure: OpenAI's error shape plus the failure fields.

    Sent where the peer reads only the status (NeMo Evaluator's client raises on any non-2xx
    and counts an error, never a score).
    """
    return {**error_body(500, failure.reason, kind=str(failure.kind)), **failure_fields(failure)}


def is_failure_row(row: dict[str, Any]) -> bool:
    """Whether a verify answer or rollout row is a failure (palaestra's or NeMo Gym's form)."""
    return FAILURE in row or NG_FAILURE_CLASS in row


def failure_from_fields(body: dict[str, Any]) -> Failure | None:
    """The failure a wire answer carries (palaestra's form first, then NeMo Gym's), or None."""
    raw = body.get(FAILURE)
    if isinstance(raw, dict):
        try:
            kind = FailureKind(str(raw.get("kind")))
        except ValueError:
            kind = FailureKind.INTERNAL_ERROR
        return Failure(kind, str(raw.get("reason", "")), bool(raw.get("masked", True)))
    ng_class = body.get(NG_FAILURE_CLASS)
    if ng_class is not None:
        kind = FailureKind.TIMEOUT if ng_class == "timeout_exceeded" else FailureKind.INTERNAL_ERROR
        return Failure(kind, f"the server marked the rollout failed ({ng_class})")
    return None


# --- verdicts (/verify) -----------------------------------------------------------------------

_NOT_METRICS = frozenset(
    {
        REWARD,
        REWARD_COMPONENTS,
        STEP_REWARDS,
        FAILURE,
        NG_FAILURE_CLASS,
        NG_FAILURE_TERMINAL,
        RESPONSE,
        PARAMS,
        FACTS,
        AGENT_REF,
        TASK_INDEX,
        ROLLOUT_INDEX,
        "error",
    }
)
"""Fields of a verify answer that are the protocol's, not the verifier's metrics."""


def verdict_fields(verdict: Verdict) -> JsonDict:
    """A scored verdict as verify-answer fields: ``reward`` and the verifier's fields."""
    return verdict.to_fields()


def verify_answer(body: JsonDict, verdict: Verdict) -> JsonDict:
    """The ``/verify`` answer in a session: the request plus the verdict's fields.

    A failed verdict carries its failure fields beside a placeholder ``reward`` of 0.0: NeMo
    Gym's ``BaseVerifyResponse`` needs a float, and its collector files the row under failures
    by ``_ng_failure_class``; ``verdict_from_answer`` reads the failure, never the 0.0.
    """
    if verdict.failure is None:
        return {**body, **verdict.to_fields()}
    return {**body, REWARD: 0.0, **failure_fields(verdict.failure)}


def verdict_from_answer(answer: JsonDict, task: JsonDict) -> Verdict:
    """A verify answer back into a Verdict: its fields beyond the task's are the metrics.

    An answer carrying a failure (palaestra's ``failure`` or NeMo Gym's ``_ng_failure_class``)
    is that failure, whatever placeholder ``reward`` travels beside it. ``KeyError``,
    ``TypeError`` or ``ValueError`` when it is neither a failure nor a numeric ``reward``.
    """
    failure = failure_from_fields(answer)
    if failure is not None:
        return Verdict(failure=failure)
    metrics = {k: v for k, v in answer.items() if k not in _NOT_METRICS and k not in task}
    return Verdict(
        reward=float(answer[REWARD]),
        reward_components=answer.get(REWARD_COMPONENTS),
        step_rewards=answer.get(STEP_REWARDS),
        metrics=metrics,
    )


# --- rollouts (/run) --------------------------------------------------------------------------


def run_answer(task: JsonDict, result: AgentResult) -> JsonDict:
    """An agent server's ``/run`` answer: the verify answer of the rollout, or its failure.

    A failed rollout is a row with no ``reward`` carrying the failure fields: the form NeMo
    Gym's own agents give a failed rollout, which its collector files under failures. The
    ``response`` is an Open Responses ``Response``, as in palaestra's own rows.
    """
    failure = result.failure or (result.verdict.failure if result.verdict else None)
    response = result.response
    if response is not None and not result.conformed:
        response = conform(response, task.get(PARAMS))
    facts = {
        "model_calls": result.model_calls,
        "tool_calls": result.tool_calls,
        "timings": result.timings,
    }
    if result.truncated:
        facts["truncated"] = result.truncated
    if result.producers is not None:
        facts["producers"] = result.producers
    if result.user_turns:
        facts["user_turns"] = result.user_turns
    if result.endpoints is not None:  # a model pool's endpoints, in order: the row's own keys
        facts["endpoints"] = result.endpoints
        if len(result.endpoints) > 1:
            facts["endpoint_moves"] = len(result.endpoints) - 1
    if result.policy_versions is not None:  # which policy served each model request
        facts["policy_versions"] = result.policy_versions
    if result.branches is not None:  # the shape of a gateway's calls
        facts["branches"] = result.branches
        facts["retokenized"] = result.retokenized
    if result.closed_book is not None:  # whether hosted tools were kept out of the requests
        facts["closed_book"] = result.closed_book
        if result.hosted_tools_dropped:
            facts["hosted_tools_dropped"] = result.hosted_tools_dropped
    if failure is None and result.verdict is not None:
        return {**task, RESPONSE: response, **result.verdict.to_fields(), FACTS: facts}
    failure = failure or Failure(FailureKind.INTERNAL_ERROR, "no verdict")
    return {**task, RESPONSE: response, **failure_fields(failure), FACTS: facts}


def run_result(status: int, body: JsonDict, task: JsonDict) -> AgentResult:
    """A ``/run`` answer back into an ``AgentResult``: a verdict, or the failure it carries.

    Anything but a 2xx row with a numeric ``reward`` and no failure fields is a failure: never
    a score.
    """
    facts = body.get(FACTS)
    facts = facts if isinstance(facts, dict) else {}
    result = AgentResult(
        response=body.get(RESPONSE),
        model_calls=int(facts.get("model_calls", 0)),
        tool_calls=int(facts.get("tool_calls", 0)),
        timings=dict(facts.get("timings", {})),
        truncated=facts.get("truncated") or None,
    )
    endpoints = facts.get("endpoints")
    if isinstance(endpoints, list) and endpoints:
        result.endpoints = [str(url) for url in endpoints]
    producers = facts.get("producers")
    if isinstance(producers, list):
        result.producers = [str(producer) for producer in producers]
    versions = facts.get("policy_versions")
    if isinstance(versions, list) and all(type(version) is int for version in versions):
        result.policy_versions = versions
    result.user_turns = int(facts.get("user_turns", 0))
    branches = facts.get("branches")
    if type(branches) is int:
        result.branches = branches
        retokenized = facts.get("retokenized")
        result.retokenized = retokenized if type(retokenized) is int else 0
    closed = facts.get("closed_book")
    if type(closed) is bool:
        result.closed_book = closed
        dropped = facts.get("hosted_tools_dropped")
        if isinstance(dropped, list):
            result.hosted_tools_dropped = [str(kind) for kind in dropped]
    failure = failure_from_fields(body)
    if failure is None and 200 <= status < 300 and REWARD in body:
        try:
            result.verdict = verdict_from_answer(body, task)
            return result
        except (KeyError, TypeError, ValueError) as error:
            failure = Failure(
                FailureKind.INTERNAL_ERROR, f"agent server answered an unusable row: {error}"
            )
    if failure is None:
        _, message = error_of(body)
        failure = Failure(
            FailureKind.INTERNAL_ERROR, f"agent server answered {status}: {message}"[:500]
        )
    result.failure = failure
    return result


# --- turn-based environments (/reset, /step) ---------------------------------------------------


def reset_answer(observation: str) -> JsonDict:
    return {"observation": observation}


def observation_of(answer: JsonDict) -> str:
    """The first observation of a ``/reset`` answer; ``KeyError`` without one."""
    return str(answer["observation"])


def step_answer(result: StepResult) -> JsonDict:
    return {
        "observation": result.observation,
        "reward": result.reward,
        "terminated": result.terminated,
        "truncated": result.truncated,
        "info": result.info,
    }


def step_from_answer(answer: JsonDict) -> StepResult:
    """A ``/step`` answer back into a ``StepResult``; ``KeyError``/``ValueError`` if unusable."""
    return StepResult(
        str(answer["observation"]),
        float(answer.get("reward", 0.0)),
        bool(answer.get("terminated", False)),
        bool(answer.get("truncated", False)),
        dict(answer.get("info") or {}),
    )


# --- tools (/tools) and liveness ---------------------------------------------------------------


def tools_answer(
    tools: list[JsonDict],
    default_agent: str,
    *,
    user: bool = False,
    version: int | None = None,
    ending: frozenset[str] = frozenset(),
) -> JsonDict:
    answer: JsonDict = {
        "tools": tools,
        "default_agent": default_agent,
        "seed_with_first_call": True,
    }
    if user:  # only when there is one: the answer of a server without a user is as it was
        answer["user_turn"] = True
    if ending:  # the tools a call of which ends the episode (``submit``)
        answer["ends_episode"] = sorted(ending)
    if version is not None:  # the environment's version (``Environment.version``)
        answer["version"] = version
    return answer


def version_of(answer: Any) -> int | None:
    """The environment's version a ``/tools`` answer announces; None when it says none."""
    version = answer.get("version") if isinstance(answer, dict) else None
    return version if isinstance(version, int) and not isinstance(version, bool) else None


def ending_tools_of(answer: Any) -> frozenset[str]:
    """The tools a ``/tools`` answer says end the episode when called (none unless said)."""
    names = answer.get("ends_episode") if isinstance(answer, dict) else None
    if not isinstance(names, list):
        return frozenset()
    return frozenset(name for name in names if isinstance(name, str))


def has_user_turn(answer: Any) -> bool:
    """Whether a ``/tools`` answer announces a simulated user (``POST /user_turn``)."""
    return isinstance(answer, dict) and answer.get("user_turn") is True


def user_turn_answer(turn: tuple[str, bool] | None) -> JsonDict:
    """``POST /user_turn``'s answer: ``{"turn": {"text", "done"}}``, or ``{"turn": null}``
    when the environment has nothing to say (the conversation ends)."""
    if turn is None:
        return {"turn": None}
    return {"turn": {"text": turn[0], "done": turn[1]}}


def user_turn_of(answer: Any) -> tuple[str, bool] | None:
    """(text, done) of a ``/user_turn`` answer, None for ``{"turn": null}``; ``KeyError`` or
    ``TypeError`` when it is unusable."""
    turn = answer["turn"]
    if turn is None:
        return None
    text, done = turn["text"], turn.get("done", False)
    if not isinstance(text, str) or not isinstance(done, bool):
        raise TypeError("turn.text must be a string and turn.done a boolean")
    return text, done


def seeds_with_first_call(answer: Any) -> bool:
    """Whether a ``/tools`` answer says its server takes ``SEED_HEADER``."""
    return isinstance(answer, dict) and answer.get("seed_with_first_call") is True


def tools_of(answer: Any) -> tuple[list[JsonDict], str]:
    """(tool schemas, default agent) of a ``/tools`` answer; ``KeyError``/``TypeError`` if
    unusable."""
    return list(answer["tools"]), str(answer.get("default_agent", "tool_calling"))


def agent_health(agent: str, environment: str) -> JsonDict:
    """An agent server's ``GET /``."""
    return {"status": "ok", "agent": agent, "environment": environment, "no_echo": True}


def echoes_run(answer: JsonDict) -> bool:
    """Whether an agent server's ``GET /`` leaves ``/run`` answers in NeMo Gym's echo form
    (every server but a palaestra one that says ``"no_echo": true``; ``NO_ECHO_HEADER``)."""
    return answer.get("no_echo") is not True


def agent_identity_of(answer: JsonDict) -> tuple[str, str | None]:
    """(agent name, environment name or None) of an agent server's ``GET /``."""
    environment = answer.get("environment")
    return str(answer.get("agent", "remote")), str(environment) if environment else None
