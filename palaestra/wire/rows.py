"""The rows a run reads and writes, typed: task, rollout, failure and the aggregate file.

Types only. At run time every row is a plain ``dict`` (parsed and written by orjson); these
``TypedDict`` s name its fields for readers and for mypy, and the ``Final`` names below are the
one spelling of each protocol field (``row[TASK_INDEX]``, never ``row["_ng_task_index"]``).
Reading a file of rows with types::

    from palaestra.wire.rows import RolloutRow

    for line in open("runs/math.jsonl", "rb"):
        row: RolloutRow = orjson.loads(line)
        print(row["_ng_task_index"], row["reward"])

A row also carries the task's own fields (``expected_answer``, ...) and the verifier's metrics
beside ``reward``: they are the environment's, so they are not declared here (NeMo Gym writes
them flat, and so does palaestra). The shapes are NeMo Gym 0.4's: its collector, its resume and
its ``/aggregate_metrics`` read palaestra's files, and palaestra reads theirs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Required, TypedDict

# --- field names ---------------------------------------------------------------------------

PARAMS: Final = "responses_create_params"
"""The task's OpenAI Responses create params (``input``, ``tools``, sampling)."""
AGENT_REF: Final = "agent_ref"
"""Which agent ran the rollout: ``{"type": "responses_api_agents", "name": ...}``."""
TASK_INDEX: Final = "_ng_task_index"
"""The task's position in the input (its line number among the tasks, from 0)."""
ROLLOUT_INDEX: Final = "_ng_rollout_index"
"""Which repeat of the task this rollout is (0 .. repeats - 1)."""
RESPONSE: Final = "response"
"""The whole trajectory as one OpenAI ``Response`` (every output item, usage summed)."""
REWARD: Final = "reward"
REWARD_COMPONENTS: Final = "reward_components"
STEP_REWARDS: Final = "step_rewards"
FACTS: Final = "_palaestra"
"""palaestra's facts about the run of a rollout (``RunFacts``); NeMo Gym ignores them."""
FAILURE: Final = "failure"
"""palaestra's failure object: ``{kind, reason, masked}``."""
NG_FAILURE_CLASS: Final = "_ng_failure_class"
"""NeMo Gym's collector routes a row carrying this to its failures file, not its output."""
NG_FAILURE_TERMINAL: Final = "_ng_failure_terminal"
"""NeMo Gym's collector never retries a row marked terminal on resume."""
SOURCE: Final = "source"
"""Where a failed rollout's task came from: ``{path, line[, field]}``."""
TASK_DIGEST: Final = "task_digest"
"""What a task is beyond its row, when it has more (a Harbor task folder): ``{path, digest}``,
the folder and ``palaestra.wire.harbor.folder_digest`` of it when the row was made. Rows carry
it; a resume refuses a task whose digest differs from the one its rows were written with."""

IDENTITY_FIELDS: Final = frozenset({AGENT_REF, TASK_INDEX, ROLLOUT_INDEX})
"""The fields a collector adds to a task row before it is dispatched."""


# --- the rows -------------------------------------------------------------------------------


class AgentRef(TypedDict, total=False):
    type: str
    name: str


class FailureRecord(TypedDict):
    """Why a rollout has no reward (``palaestra.types.Failure`` as JSON)."""

    kind: str
    reason: str
    masked: bool


class RunFacts(TypedDict, total=False):
    """``_palaestra``: how the rollout ran. Timings are seconds per phase (seed, model, ...)."""

    attempt: int
    env_version: int
    """The environment's version (``Environment.version``) the rollout was scored by; absent
    in rows of older runs and of a served environment (its version is its server's)."""
    model_calls: int
    tool_calls: int
    timings: dict[str, float]
    truncated: str
    """Why the agent stopped before the model finished (``"max_steps"``, or
    ``"max_user_turns"`` when a simulated user still had something to say)."""
    producers: list[str]
    """Who produced each item of ``response.output``, aligned with it: ``policy`` (the model
    being trained: messages, reasoning, tool calls), ``tool`` (a tool's output), ``user`` (a
    simulated user's message) or ``environment`` (a turn-based environment's observation).
    Only ``policy`` items are trainable (``palaestra.types.TRAINABLE_PRODUCERS``). Kept here,
    not on the items, so the trajectory can be sent back to any model server as it is (OpenAI
    rejects unknown input fields). Absent in rows of older runs and of agents that do not say:
    ``palaestra.types.producers_of`` derives it then."""
    user_turns: int
    """Messages a simulated user added to the trajectory (absent: 0)."""
    verifier_fields: list[str]
    """The fields the verifier returned: the aggregate averages these, not the task's own."""
    endpoints: list[str]
    """The endpoints of a model pool the rollout's calls went to, in order."""
    endpoint_moves: int
    """Times the rollout moved to another endpoint of the pool after a failure (absent: 0)."""
    policy_versions: list[int]
    """The policy version that served each model request, in order: the engine's reported
    version, else the trainer's (``RolloutSampler.policy_version``); a call resumed after an
    abort has one entry per segment. Absent when no version was known."""
    policy_version_span: int
    """Policy updates the rollout straddled: the newest version in ``policy_versions`` minus
    the oldest (0: one policy served it all). Its age at a trainer is the trainer's to know:
    ``Rollout.age`` (``palaestra.training``)."""
    resumed: dict[str, int]
    """A durable rollout continued from its checkpoint after its collection stopped:
    ``from_turn`` (the model calls it had made) and ``attempts`` (this one included). Absent:
    the rollout ran in one go (or was restarted from its first turn)."""
    worker_reruns: int
    """Times the rollout was started again because its worker died (absent: 0)."""
    branches: int
    """How many branches (leaves) the rollout's model calls form: 1 for a line, more when its
    harness compacted its history, retried a call or ran a sub-agent; one training sequence
    each (``palaestra.training.tree``). Only for agents whose calls went through a gateway."""
    retokenized: int
    """Of those calls, the ones whose token ids do not extend the call their messages
    continue (re-tokenised on the way): counted and never spliced. Beside ``branches``."""
    closed_book: bool
    """Whether the rollout's model requests went without provider-hosted tools (web search,
    file search, code interpreter...: ``palaestra.models.closed_book``): true when the
    environment declares no network (``Environment.network``) and the run did not opt in to
    them (``hosted_tools``). Absent in rows of older runs and of served agents."""
    hosted_tools_dropped: list[str]
    """The hosted tool types the closed-book route kept out of the rollout's requests (the
    task named them); absent when it named none."""


class SourceRef(TypedDict, total=False):
    path: str | None
    line: int | None
    field: str | None


class TaskRow(TypedDict, total=False):
    """A line of the input file; the collector adds the identity fields when it dispatches it."""

    responses_create_params: Required[dict[str, Any]]
    agent_ref: AgentRef
    _ng_task_index: int
    _ng_rollout_index: int


class RolloutRow(TaskRow, total=False):
    """A scored rollout: a line of the output file (NeMo Gym's verify answer plus identities)."""

    response: Required[dict[str, Any]]
    reward: Required[float]
    reward_components: dict[str, float]
    step_rewards: list[float]
    _palaestra: RunFacts


class FailureRow(TypedDict, total=False):
    """A rollout that has no reward: a line of the failures file, with the trajectory so far.

    ``_ng_failure_class`` (and ``_ng_failure_terminal``) are NeMo Gym 0.4's form of the same
    failure, so NeMo Gym's resume counts it as a failed attempt. An input line that could not
    be read has ``_ng_rollout_index`` null and no ``responses_create_params``.
    """

    failure: Required[FailureRecord]
    _ng_failure_class: Required[str]
    _ng_failure_terminal: bool
    _ng_task_index: int
    _ng_rollout_index: int | None
    responses_create_params: dict[str, Any]
    agent_ref: AgentRef
    response: dict[str, Any] | None
    _palaestra: RunFacts
    source: SourceRef


GroupMetrics = TypedDict(
    "GroupMetrics",
    {"_ng_task_index": int, "num_rollouts": int, "mean/reward": float},
)
"""One task's line of ``group_level_metrics``."""


class AggregateEntry(TypedDict, total=False):
    """One agent's entry of the aggregate file (a JSON list of these), as NeMo Gym writes it.

    ``agent_metrics`` holds ``mean/``, ``median/``, ``std/``, ``min/`` and ``max/`` of every
    numeric verifier field and of the token usage (``mean/input_tokens``); ``key_metrics`` its
    ``mean/`` entries plus palaestra's counts (rollouts, tasks, failures, pass@k, ...).
    """

    agent_ref: Required[AgentRef]
    agent_metrics: Required[dict[str, float]]
    key_metrics: Required[dict[str, float]]
    failures_by_kind: dict[str, int]
    group_level_metrics: list[GroupMetrics]


AggregateFile = list[AggregateEntry]
"""The aggregate file: one entry per agent."""


if TYPE_CHECKING:  # mypy checks that every name above is a field of the rows it names

    def _names_are_fields(
        rollout: RolloutRow, failed: FailureRow, group: GroupMetrics, entry: AggregateEntry
    ) -> None:
        _ = rollout[PARAMS], rollout[AGENT_REF], rollout[TASK_INDEX], rollout[ROLLOUT_INDEX]
        _ = rollout[RESPONSE], rollout[REWARD], rollout[REWARD_COMPONENTS], rollout[FACTS]
        _ = rollout[STEP_REWARDS], failed[FAILURE], failed[NG_FAILURE_CLASS], failed[SOURCE]
        _ = failed[NG_FAILURE_TERMINAL], group[TASK_INDEX], entry[AGENT_REF]
