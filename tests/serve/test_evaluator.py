"""NeMo Evaluator's environment protocol on the same server and routes as NeMo Gym's."""

from __future__ import annotations

import aiohttp

from palaestra.envs.mcqa.environment import MultipleChoice
from palaestra.registry import find_environment
from palaestra.serve.env_app import environment_app
from palaestra.serve.evaluator import load_dataset
from palaestra.serve.uvicorn_runner import BackgroundServer


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
