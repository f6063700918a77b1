"""NeMo Evaluator's environment protocol on the same server and routes as NeMo Gym's."""

from __future__ import annotations

import aiohttp

from palaestra.collection.tasks import load_dataset
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.mcqa.environment import MultipleChoice
from palaestra.http.runner import BackgroundServer
from palaestra.serve.env_app import environment_app
from palaestra.serve.evaluator import prompt_of
from palaestra.types import JsonDict, Verdict


async def test_evaluator_client_seeds_by_index_and_verifies_text() -> None:
    entry = find_environment("mcqa")
    dataset = load_dataset(entry.example_tasks)
    with BackgroundServer(environment_app(MultipleChoice(), dataset=dataset)) as server:
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(base_url=server.url, cookie_jar=jar) as http:
            async with http.get("/health") as health:
                assert await health.json() == {
                    "status": "ok",
                    "benchmark": "mcqa",
                    "dataset_size": 5,
                    "protocol": "nemo-gym+nemo-evaluator",
                }
            async with http.get("/dataset_size") as size:
                assert await size.json() == {"size": 5}
            async with http.post("/seed_session", json={"idx": 0}) as seeded:
                prompt = await seeded.json()
            assert "Red Planet" in prompt["prompt"]
            assert prompt["expected_answer"] == "B"
            assert prompt["metadata"]["idx"] == 0
            assert prompt["messages"][-1]["role"] == "user"
            assert set(prompt) == {"prompt", "expected_answer", "metadata", "messages", "system"}
            body = {
                "response": "It is Mars, so \\boxed{B}",
                "expected": "B",
                "metadata": prompt["metadata"],
            }
            async with http.post("/verify", json=body) as verified:
                right = await verified.json()
            assert right["reward"] == 1.0 and right["extracted_answer"] == "B"
            assert right["metadata"] == prompt["metadata"]
            assert "scoring_details" in right
            # without a session (another client), the task comes from metadata.idx
        async with aiohttp.ClientSession(base_url=server.url) as fresh:
            wrong = {"response": "\\boxed{C}", "expected": "B", "metadata": {"idx": 0}}
            async with fresh.post("/verify", json=wrong) as verified:
                assert (await verified.json())["reward"] == 0.0
            async with fresh.post("/seed_session", json={"idx": 99}) as out_of_range:
                assert out_of_range.status == 400
                assert "out of range" in (await out_of_range.json())["error"]["message"]


async def test_a_cookie_keeping_client_on_a_host_name_is_scored_against_the_task_it_names() -> None:
    dataset = load_dataset(find_environment("mcqa").example_tasks)
    with BackgroundServer(environment_app(MultipleChoice(), dataset=dataset)) as server:
        by_name = server.url.replace("127.0.0.1", "localhost")
        # aiohttp's default jar keeps cookies for host names only, as NeMo Evaluator's client
        # does: each seed overwrites the one session cookie every later verify sends.
        async with aiohttp.ClientSession(base_url=by_name) as http:
            prompts = []
            for idx in range(len(dataset)):
                async with http.post("/seed_session", json={"idx": idx}) as seeded:
                    prompts.append(await seeded.json())
            assert len(http.cookie_jar) == 1
            rewards = []
            for prompt in prompts:
                letter = prompt["expected_answer"]  # in each task's grading mode:
                body = {
                    "response": f"\\boxed{{{letter}}}\nAnswer: {letter}\n<answer>{letter}</answer>",
                    "expected": prompt["expected_answer"],
                    "metadata": prompt["metadata"],
                }
                async with http.post("/verify", json=body) as verified:
                    assert verified.status == 200
                    rewards.append((await verified.json())["reward"])
    assert rewards == [1.0] * len(dataset)


class BrokenChoice(MultipleChoice):
    def verify(self, session: object, response: JsonDict) -> Verdict:
        raise RuntimeError("broken verifier")


async def test_an_evaluator_verify_that_cannot_be_scored_is_an_error_status_not_a_score() -> None:
    dataset = load_dataset(find_environment("mcqa").example_tasks)
    with BackgroundServer(environment_app(BrokenChoice(), dataset=dataset)) as server:
        async with aiohttp.ClientSession(base_url=server.url) as http:
            body = {"response": "\\boxed{B}", "expected": "B", "metadata": {"idx": 0}}
            async with http.post("/verify", json=body) as verified:
                status, answer = verified.status, await verified.json()
    assert status == 500  # NeMo Evaluator's client raises on it and counts an error
    assert "reward" not in answer
    assert answer["error"]["type"] == "verifier_error"
    assert "broken verifier" in answer["failure"]["reason"]


def test_a_seed_answers_the_whole_task_as_metadata_so_a_gym_solver_row_is_complete() -> None:
    """NeMo Evaluator's GymSolver sends an agent ``messages`` + ``metadata`` as the row to
    run: without ``expected_answer`` there, the agent could only fail the rollout."""
    dataset = load_dataset(find_environment("mcqa").example_tasks)
    seed = prompt_of(2, dataset[2])
    assert seed["metadata"] == {
        "idx": 2,
        **{k: v for k, v in dataset[2].items() if k != "responses_create_params"},
    }
    assert seed["metadata"]["expected_answer"] == seed["expected_answer"]


async def test_a_session_seeded_by_index_is_scored_on_its_own_task_when_the_body_names_none() -> (
    None
):
    dataset = load_dataset(find_environment("mcqa").example_tasks)
    with BackgroundServer(environment_app(MultipleChoice(), dataset=dataset)) as server:
        async with aiohttp.ClientSession(base_url=server.url) as http:
            async with http.post("/seed_session", json={"idx": 0}) as seeded:
                token = seeded.headers["x-palaestra-session"]
                letter = (await seeded.json())["expected_answer"]
            answer = {"output": [{"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": f"\\boxed{{{letter}}}"}]}]}  # fmt: skip
            headers = {"x-palaestra-session": token, "x-palaestra-no-echo": "1"}
            async with http.post("/verify", json={"response": answer}, headers=headers) as done:
                verdict = await done.json()
    # Before: the index rule found no task named in the body and scored a fresh empty session.
    assert done.status == 200 and verdict["reward"] == 1.0
    assert "response" not in verdict
