"""The error taxonomy: each exception says which layer failed, and what becomes of it.

A user mistake (bad input file, unknown environment, wrong flag) is an ``InputError`` or a
``ConfigError`` and is shown as one line. A failure during a rollout (model, environment,
tool, verifier) is a ``RolloutFailure``: it becomes a failure record with a ``FailureKind``
and is never scored as 0. The tree (``kind`` of each failure; classes defined elsewhere are
named with their module; a built-in environment's own errors are its own)::

    PalaestraError                     every error palaestra raises on purpose
    ├── ConfigError                    a wrong flag, name, file or missing extra: one line
    │   ├── SandboxUnavailable         palaestra.sandbox: no sandbox on this machine
    │   ├── OutputError                palaestra.collection.files: the output cannot be written
    │   └── StackError                 palaestra.stack.supervisor: a stack cannot run
    ├── InputError                     a bad input row: names the file, line and field
    ├── RunStopped                     a runner cannot go on: the collector stops (resumable)
    ├── CallbackError                  a caller's callback raised: the run stops (resumable)
    ├── RolloutFailure                 a rollout's failure, recorded with its kind
    │   ├── ModelError                 model_error: the model endpoint failed or answered junk
    │   │   ├── ModelHttpError         palaestra.models.openai.retry: HTTP error after retries
    │   │   │   └── ContextLengthExceeded
    │   │   ├── ContextWindowExceeded  palaestra.models.local
    │   │   ├── ModelTimeout           timeout
    │   │   └── ModelUnreachable       also a ServiceUnreachable: the run stops
    │   │       ├── ModelAuthError     401/403: the run stops at once
    │   │       └── ModelHung          timeout: timed out calls in a row, the run stops at once
    │   ├── ServiceUnreachable         a service every rollout needs is gone: the run stops
    │   │   └── ModelOutage            another model (user's, judge) is gone: the run stops
    │   ├── EnvironmentFailure         env_error: the environment's seed/close/reset/step
    │   │   ├── EnvironmentUnreachable also a ServiceUnreachable: the run stops
    │   │   │   └── MCPServerUnreachable palaestra.environment.kinds.mcp: the tools' server
    │   │   ├── MCPServerFailure       palaestra.environment.kinds.mcp: a rollout's own server
    │   │   ├── EnvironmentTimeout     timeout
    │   │   └── SessionLost            session_lost: the environment forgot the session
    │   │       └── SessionExpired     its id is unknown, closed or expired (a LookupError)
    │   ├── ToolFailure                tool_error: a tool raised (not the model's mistake)
    │   │   └── ToolTimeout            timeout
    │   ├── UserModelFailure           user_model_error: the simulated user's model failed
    │   ├── VerifierFailure            verifier_error: verify raised or returned no score
    │   │   ├── VerifierTimeout        timeout
    │   │   ├── JudgeFailure           palaestra.environment.judge: the judge gave no verdict
    │   │   └── RewardRefused          palaestra.environment.kinds.harbor: reward.json holds
    │   │                              a value that is not a number
    │   ├── InvalidTask                invalid_input: a task row the environment cannot use
    │   ├── OrsFailure                 palaestra.environment.kinds.ors: a failure an ORS
    │   │                              server named
    │   ├── AgentServerTimeout         timeout: a served agent did not answer in time
    │   ├── AgentFailure               agent_error: an external harness crashed, hung or
    │   │                              never called the model (palaestra.agents.command)
    │   ├── WorkerCrash                worker_crash: a pool task killed its worker each time
    │   ├── WorkerTimeout              timeout: a pool task overran each time
    │   ├── SandboxLimitExceeded       sandbox_limit: sandboxed code hit a resource limit
    │   └── SandboxFailure             sandbox_error: a machine could not be built, started
    │       │                          or reached (infrastructure, never the agent's doing)
    │       └── BoxRefused             palaestra.environment.kinds.harbor: a command the box's
    │                                  state made fail at verification (the agent's: scored 0)
    ├── ToolError                      raised by a tool: its message goes back to the model
    ├── ToolCallRejected               the model's call was wrong: told to the model
    ├── PoolClosed                     palaestra.sandbox: the worker pool was shut down
    ├── WorkerLost                     palaestra.distributed: a worker died (its tasks rerun)
    ├── PoolTaskError                  palaestra.sandbox: a pool task raised (its trace)
    ├── SessionClosed                  palaestra.sandbox: a sandbox session was closed
    ├── Overran                        palaestra.environment.running.boundary: env code overran
    ├── RequestError                   palaestra.serve: a request a server refuses (an answer)
    ├── BadRequest                     palaestra.gateway: a harness's call the gateway refuses
    ├── UnknownResponse                palaestra.gateway: a previous_response_id of no answer
    ├── GoldenError                    palaestra.authoring: a golden answer of no known shape
    ├── RewardProblem                  palaestra.environment.kinds.harbor: no reward to read
    │                                  (the box is scored 0, the reason in ``unverified``)
    ├── ContextExceeded                palaestra.agents.episode: the prompt outgrew the model's
    │                                  context (the episode ends truncated and is verified)
    ├── ShellEnded                     palaestra.environment.kinds.machine.shell: the shell is gone
    ├── MCPConnectionLost              palaestra.environment.kinds.mcp_connection: server gone
    ├── OrsServerError                 palaestra.environment.kinds.ors: a request the server refused
    ├── OrsProtocolError               palaestra.wire.ors: a message of no ORS shape
    ├── Refused                        palaestra.serve.ors_app: a request ORS answers refused
    ├── SessionsBusy                   palaestra.serve.mcp_app: every machine is in use
    ├── ContiguityError                palaestra.training.tokens: tokens not one sequence
    ├── TasksSaturated                 palaestra.training.sampler: no task left to sample
    ├── RolloutFailed                  palaestra.training.rollouts: a failed rollout, raised
    ├── EpisodeFailed                  palaestra.training.openenv_episode: verify failed
    ├── BadQuery                       palaestra.viewer: a query parameter (a 400)
    ├── ChangedFile                    palaestra.viewer: a run rewritten after indexing
    └── BodyTooLarge                   palaestra.serve: a request body over the server's cap

The transport's errors (``palaestra.transport.TransportError``, also ``TimeoutError`` for its
timeouts) sit below this tree: the clients map them
(``palaestra.environment.running.boundary.Boundary``) into it.
"""

from __future__ import annotations

from palaestra.types import FailureKind


class PalaestraError(Exception):
    """Base of every error palaestra raises on purpose."""


class ConfigError(PalaestraError):
    """A wrong flag, an unknown environment name, a missing optional extra."""


class InputError(PalaestraError):
    """A bad input row; the message names the file, the line and the field."""

    def __init__(
        self,
        reason: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.reason = reason
        self.path = path
        self.line = line
        self.field = field
        super().__init__(self.describe())

    def describe(self) -> str:
        where = ":".join(str(p) for p in (self.path, self.line) if p is not None)
        field = f" field '{self.field}':" if self.field else ""
        return f"{where}:{field} {self.reason}" if where else f"{field} {self.reason}".strip()


class RunStopped(PalaestraError):
    """Raised by a runner that cannot run any more rollouts (its workers keep dying): the
    collector stops the run, resumable, and records nothing for the rollout that raised it."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class CallbackError(PalaestraError):
    """A function the caller handed palaestra (``collect``'s or ``eval``'s ``progress``)
    raised: the run stops, its rows so far kept (resumable). The message names the function
    and the line of the caller's code it raised at; the original is the ``__cause__``."""


class RolloutFailure(PalaestraError):
    """Raised inside a rollout; the collector records it as a failure of ``kind``."""

    kind: FailureKind = FailureKind.INTERNAL_ERROR
    worker_reruns: int = 0
    """Times the rollout was started again because its worker died (``palaestra.distributed``
    sets it on the failure it raises); its failure record says so, as a row would."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class ModelError(RolloutFailure):
    """The model endpoint failed after its retry budget, or answered something unusable."""

    kind = FailureKind.MODEL_ERROR
    transient: str | None = None
    """Set when the retry budget was spent on failures that may heal (``connect``,
    ``timeout``, ``disconnect``, ``http 503``, ``http 429``): the last one's kind; or when the
    endpoint answered no completion (``bad answer``: not JSON, no choices). A model pool
    retries such a call on another endpoint; anything else would fail there too."""


class ServiceUnreachable(RolloutFailure):
    """A service every rollout needs (the model, a served environment) cannot be reached.

    Raised after the retry budget; the collector stops the run (resumable) instead of failing
    every remaining rollout one by one. Its failure record is classed ``transient``: the
    rollout did nothing wrong, and a resume runs it again.
    """

    service: str = "a service"
    """What is gone, as the run's stop reason names it."""
    at_once: bool = False
    """The run stops at this one (the count of failures in a row is already made: a model's
    timeouts, ``ModelHung``), not after ``UNREACHABLE_STOP`` rollouts met it in a row."""

    def stop_reason(self) -> str:
        """Why the run stopped, when this stopped it."""
        return self.reason if self.at_once else f"{self.service} is unreachable: {self.reason}"


class ModelUnreachable(ModelError, ServiceUnreachable):
    """The model endpoint cannot be connected to at all; nothing can go on without it."""

    service = "the model"


class ModelAuthError(ModelUnreachable):
    """The model endpoint rejected the credentials (401/403): the run stops at once."""

    at_once = True


class ModelHung(ModelUnreachable):
    """The model endpoint timed out on several calls in a row with no answer in between
    (``palaestra.models.openai.endpoint.TIMEOUTS_TO_STOP``): it takes requests and never answers.
    The collector stops the run at once (resumable), the count being already made."""

    kind = FailureKind.TIMEOUT
    at_once = True


class ModelOutage(ServiceUnreachable):
    """A model other than the policy is gone: the simulated user's (``--user-model``), a
    judge, or any model an environment opened. Its rollout fails as that part fails (``kind``:
    ``user_model_error``, ``verifier_error``), classed ``transient``, and the run stops under
    the same rule as for the policy's model: ``UNREACHABLE_STOP`` rollouts in a row that found
    it unreachable, or at once when it timed out ``TIMEOUTS_TO_STOP`` calls in a row."""

    def __init__(
        self, reason: str, *, kind: FailureKind, service: str, at_once: bool = False
    ) -> None:
        super().__init__(reason)
        self.kind = kind
        self.service = service
        self.at_once = at_once

    @classmethod
    def of(cls, error: ModelError, service: str, kind: FailureKind) -> ModelOutage | None:
        """``error`` of the model that serves as ``service`` (``"the user model"``) as the
        outage that stops a run; None when it is one call's failure (an answer it could not
        use, one timeout), which fails only its rollout."""
        if not isinstance(error, ServiceUnreachable):
            return None
        gone = ":" if error.at_once else " is unreachable:"  # a hung model's reason says so
        reason = f"{service}{gone} {error.reason}"
        return cls(reason, kind=kind, service=service, at_once=error.at_once)

    def stop_reason(self) -> str:
        return self.reason  # it names the service already


class ModelTimeout(ModelError):
    """The model endpoint did not answer within its timeout, after its retries."""

    kind = FailureKind.TIMEOUT


class EnvironmentFailure(RolloutFailure):
    """The environment's own code raised in seed or close: not the model's fault."""

    kind = FailureKind.ENV_ERROR


class EnvironmentUnreachable(EnvironmentFailure, ServiceUnreachable):
    """A served environment cannot be connected to after the retry budget."""

    service = "the environment server"


class SessionLost(EnvironmentFailure):
    """The environment no longer knows the rollout's session (restarted, expired, forged)."""

    kind = FailureKind.SESSION_LOST


class SessionExpired(SessionLost, LookupError):
    """The session id is unknown: never opened, closed, or expired after its TTL.

    A ``SessionLost``: inside a rollout it is that rollout's ``session_lost`` failure; a
    server answers it as a 404 of type ``session_lost``.
    """


class EnvironmentTimeout(EnvironmentFailure):
    """The environment's seed, close, reset or step ran past its time limit."""

    kind = FailureKind.TIMEOUT


class InvalidTask(RolloutFailure):
    """A task row the environment cannot use (a missing or malformed field).

    Raised in ``seed`` or ``verify`` (or caught there and returned as a failed verdict): the
    rollout is an ``invalid_input`` failure, never a 0.
    """

    kind = FailureKind.INVALID_INPUT


class AgentServerTimeout(RolloutFailure):
    """A served agent (``palaestra.remote.RemoteAgent``) did not answer within its timeout."""

    kind = FailureKind.TIMEOUT


class AgentFailure(RolloutFailure):
    """An external harness (``palaestra.agents.command``) exited with an error, ran past its
    time limit or never called the model: the agent failed, so the rollout has no score."""

    kind = FailureKind.AGENT_ERROR


class ToolFailure(RolloutFailure):
    """A tool raised an unexpected exception or timed out."""

    kind = FailureKind.TOOL_ERROR


class ToolTimeout(ToolFailure):
    """A tool ran past the environment's ``tool_timeout``."""

    kind = FailureKind.TIMEOUT


class UserModelFailure(RolloutFailure):
    """The simulated user's model failed or answered nothing: the rollout has no score."""

    kind = FailureKind.USER_MODEL_ERROR


class VerifierFailure(RolloutFailure):
    """``verify`` raised or timed out; the rollout could not be scored."""

    kind = FailureKind.VERIFIER_ERROR


class VerifierTimeout(VerifierFailure):
    """``verify`` ran past the environment's ``verify_timeout``."""

    kind = FailureKind.TIMEOUT


class WorkerCrash(RolloutFailure):
    """A worker-pool task crashed its worker process on every attempt it was given."""

    kind = FailureKind.WORKER_CRASH


class WorkerTimeout(RolloutFailure):
    """A worker-pool task ran past its time limit on every attempt; its worker was killed."""

    kind = FailureKind.TIMEOUT


class SandboxLimitExceeded(RolloutFailure):
    """Sandboxed code or a pool task ran into a resource limit (``limit`` names which)."""

    kind = FailureKind.SANDBOX_LIMIT

    def __init__(self, reason: str, limit: str | None = None) -> None:
        self.limit = limit
        super().__init__(reason)


class SandboxFailure(RolloutFailure):
    """A machine could not be built, started, reached or torn down (an image that cannot be had,
    a build over its time budget, a daemon that is gone). Infrastructure, not the agent: the
    rollout is recorded as ``sandbox_error``, never scored."""

    kind = FailureKind.SANDBOX_ERROR


class ToolError(PalaestraError):
    """Raise this inside a tool to tell the *model* that its call was wrong.

    The message is fed back to the model as the tool's output, and the rollout goes on.
    Any other exception from a tool fails the rollout as ``tool_error``.
    """


class ToolCallRejected(PalaestraError):
    """The model's tool call was wrong (unknown tool, invalid arguments, a ``ToolError``).

    Not a failure of the rollout: the agent feeds the message back to the model.
    """
