"""NeMo Gym 0.4's own collector and simple_agent against palaestra's agent and env servers."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from palaestra import LocalEnvironmentClient, ToolCallingAgent
from palaestra.environment.sessions import Session
from palaestra.envs.counter.environment import Counter
from palaestra.envs.weather.environment import Weather
from palaestra.http.runner import BackgroundServer
from palaestra.models.openai.responses import OpenAIResponsesModel
from palaestra.serve.agent_app import agent_app
from palaestra.serve.env_app import environment_app
from palaestra.types import FailureKind, JsonDict, Verdict
from tests.cli.test_collect_cli import weather_script
from tests.interop.peer_run import run_peer
from tests.support.network import free_port
from tests.support.scripted_model import ScriptedFault, ScriptedModelServer, text_response


def _address(url: str) -> dict[str, object]:
    parts = urlsplit(url)
    return {"host": parts.hostname, "port": parts.port}


def _row(agent: str, **fields: object) -> JsonDict:
    return {
        "responses_create_params": {"input": [{"role": "user", "content": "go"}]},
        "agent_ref": {"type": "responses_api_agents", "name": agent},
        **fields,
    }


def test_nemo_gym_files_a_failed_rollout_of_a_palaestra_agent_under_failures(
    tmp_path: Path,
) -> None:
    scripted = weather_script()

    def script(params: JsonDict) -> JsonDict | ScriptedFault:
        if "Oslo" in str(params["input"]):  # this rollout's model call fails: a model_error
            return ScriptedFault(status=400, body={"error": {"message": "bad request"}})
        return scripted(params)

    with ScriptedModelServer(script) as model:
        app = agent_app(
            ToolCallingAgent(), LocalEnvironmentClient(Weather()), OpenAIResponsesModel(model.url)
        )
        with BackgroundServer(app) as agent:
            rows = [
                {**_row("palaestra_agent", city="Rome")},
                {
                    **_row("palaestra_agent", city="Oslo"),
                    "responses_create_params": {"input": "Weather in Oslo?"},
                },
            ]
            servers = {"palaestra_agent": {"kind": "responses_api_agents", **_address(agent.url)}}
            out = run_peer(
                "nemo-gym",
                "nemo_gym_collect.py",
                {"workdir": str(tmp_path), "rows": rows, "servers": servers},
                cwd=tmp_path,
            )
    assert out["error"] is None  # a non-2xx /run stops NeMo Gym's whole run
    assert [r["city"] for r in out["rollouts"]] == ["Rome"]
    assert out["rollouts"][0]["reward"] == 1.0
    [failed] = out["failures"]
    assert failed["city"] == "Oslo" and failed["_ng_failure_class"] == "transient"
    assert failed["failure"]["kind"] == "model_error" and "reward" not in failed
    [entry] = out["aggregate"]
    assert entry["agent_metrics"]["mean/reward"] == 1.0  # the failure is not averaged as a 0


USAGE = {  # NeMo Gym's Response model requires the token details
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 5,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}


class BrokenVerifyCounter(Counter):
    """A counter whose verify raises for tasks marked ``break_verify``."""

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        if session.task.get("break_verify") == "raise":
            raise ValueError("the verifier has a bug")
        if session.task.get("break_verify") == "verdict":
            return Verdict.failed(FailureKind.VERIFIER_ERROR, "cannot grade this answer")
        return super().verify(session, response)


def test_nemo_gym_simple_agent_passes_a_palaestra_verify_failure_on_as_a_failure_row(
    tmp_path: Path,
) -> None:
    with (
        ScriptedModelServer(lambda params: text_response("done", usage=USAGE)) as model,
        BackgroundServer(environment_app(BrokenVerifyCounter())) as env,
    ):
        servers = {
            "palaestra_env": {"kind": "resources_servers", **_address(env.url)},
            "palaestra_model": {"kind": "responses_api_models", **_address(model.url)},
            "simple_agent": {
                "kind": "responses_api_agents",
                "host": "127.0.0.1",
                "port": free_port(),
                "resources_server": {"type": "resources_servers", "name": "palaestra_env"},
                "model_server": {"type": "responses_api_models", "name": "palaestra_model"},
                "max_steps": 2,
            },
        }
        rows = [
            _row("simple_agent", target_value=0, label="scored"),
            _row("simple_agent", target_value=0, label="raised", break_verify="raise"),
            _row("simple_agent", target_value=0, label="failed", break_verify="verdict"),
        ]
        out = run_peer(
            "nemo-gym",
            "nemo_gym_collect.py",
            {
                "workdir": str(tmp_path),
                "rows": rows,
                "servers": servers,
                "simple_agent": "simple_agent",
            },
            cwd=tmp_path,
        )
    assert out["error"] is None  # a non-2xx /verify would stop NeMo Gym's whole run
    assert [(r["label"], r["reward"]) for r in out["rollouts"]] == [("scored", 1.0)]
    failed = sorted(out["failures"], key=lambda r: r["label"])
    assert [r["label"] for r in failed] == ["failed", "raised"]
    assert all(r["_ng_failure_class"] == "legitimate" for r in failed)
    assert all(r["failure"]["kind"] == "verifier_error" for r in failed)
    assert out["aggregate"][0]["agent_metrics"]["mean/reward"] == 1.0
