"""The viewer's HTTP API on a real server: the token, paging, one rollout, pairs, errors."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from palaestra.http.runner import BackgroundServer
from palaestra.viewer import open_runs
from palaestra.viewer.app import viewer_app
from tests.viewer.rows import CITIES, scored, small_run, write_run

TOKEN = "s3cret/with=odd&chars"


def run_b(path: Path) -> Path:
    """Tasks 0..5 again with every reward flipped, and task 20 only here."""
    rows = [scored(t, CITIES[t % len(CITIES)], float(t % 3 != 0)) for t in range(6)]
    return write_run(path, [*rows, scored(20, "Rome", 1.0)])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    folder = tmp_path_factory.mktemp("runs")
    runs = open_runs([small_run(folder / "a.jsonl"), run_b(folder / "b.jsonl")])
    with BackgroundServer(viewer_app(runs, token=TOKEN)) as running:
        yield running


def get(server: BackgroundServer, path: str, *, token: str | None = TOKEN) -> tuple[int, Any]:
    request = urllib.request.Request(server.url + path)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            body = answer.read()
            status = answer.status
    except urllib.error.HTTPError as error:
        body, status = error.read(), error.code
    try:
        return status, orjson.loads(body)
    except orjson.JSONDecodeError:
        return status, body.decode()


def test_every_route_refuses_a_request_without_the_token(server: BackgroundServer) -> None:
    for path in ["/", "/static/viewer.js", "/api/runs", "/api/rows", "/api/rollout/0"]:
        assert get(server, path, token=None)[0] == 401, path
        assert get(server, path, token="wrong")[0] == 401, path


def test_the_token_in_the_url_opens_the_page_and_its_assets_carry_it(
    server: BackgroundServer,
) -> None:
    quoted = urllib.parse.quote(TOKEN, safe="")
    status, html = get(server, f"/?token={quoted}", token=None)
    assert status == 200
    assert f'src="static/viewer.js?token={quoted}"' in html
    assert get(server, f"/static/viewer.js?token={quoted}", token=None)[0] == 200
    assert get(server, f"/api/runs?token={quoted}", token=None)[0] == 200
    assert get(server, "/api/runs?token=wrong", token=None)[0] == 401


def test_the_runs_route_gives_each_runs_summary(server: BackgroundServer) -> None:
    status, body = get(server, "/api/runs")
    assert status == 200
    a, b = body["runs"]
    assert (a["name"], a["summary"]["rows"], a["summary"]["failed"]) == ("a.jsonl", 15, 3)
    assert a["kinds"] == ["tool_error", "timeout"]
    assert (b["summary"]["rows"], b["failures_file"]) == (7, None)
    assert "interval" not in a["summary"]  # the intervals come from /api/figures, on request


def test_rows_are_paged_filtered_and_sorted_by_the_query(server: BackgroundServer) -> None:
    status, body = get(server, "/api/rows?kind=failed&sort=task&order=desc&limit=2")
    assert status == 200
    assert (body["total"], body["matched"]) == (15, 3)
    assert [row["n"] for row in body["rows"]] == [14, 13]
    assert body["rows"][1]["kind"] == "timeout"
    assert body["rows"][0]["preview"] == "KeyError: 'Mu' (at weather.py:41 in get_weather)"
    status, body = get(server, "/api/rows?run=1&reward_min=1&q=oslo")
    assert [row["task"] for row in body["rows"]] == [4]


def test_a_wrong_parameter_is_a_400_naming_it(server: BackgroundServer) -> None:
    assert get(server, "/api/rows?sort=colour") == (
        400,
        {"error": "sort must be one of row, reward, time, tokens, task, not 'colour'"},
    )
    assert get(server, "/api/rows?reward_min=high")[1] == {
        "error": "reward_min must be a number, not 'high'"
    }
    assert get(server, "/api/rows?run=2")[0] == 400
    assert get(server, "/api/rollout/99")[0] == 404


def test_one_rollout_comes_with_where_it_is_stored_and_its_raw_row(
    server: BackgroundServer,
) -> None:
    status, body = get(server, "/api/rollout/12")
    assert status == 200
    assert (body["source"], body["line"], body["failure"]["kind"]) == ("failures", 1, "tool_error")
    status, raw = get(server, "/api/rollout/10?raw=1")
    assert "generation_token_ids" in raw["row"]["response"]["output"][1]
    status, tokens = get(server, "/api/tokens/10")
    assert (tokens["trained"], tokens["contiguous"]) == (23, True)


def test_two_runs_are_paired_by_task_and_rollout(server: BackgroundServer) -> None:
    status, body = get(server, "/api/pairs?limit=100")
    assert status == 200
    assert body["total"] == 16  # tasks 0..14 of A, and 20 only in B
    first = body["pairs"][0]
    assert (first["task"], first["a"]["reward"], first["b"]["reward"], first["delta"]) == (
        0, 1.0, 0.0, -1.0,
    )  # fmt: skip
    last = body["pairs"][-1]
    assert (last["task"], last["a"], last["b"]["reward"]) == (20, None, 1.0)
    assert body["stats"] == {
        "both": 6, "only_a": 9, "only_b": 1, "a_better": 2, "b_better": 4, "ties": 0,
        "mean_delta": pytest.approx(2 / 6),
    }  # fmt: skip
    status, different = get(server, "/api/pairs?only=different&sort=delta")
    assert different["matched"] == 6 + 9 + 1  # every shared task differs; the rest are absent
    status, one = get(server, "/api/pairs?task=3&rollout=0")
    assert [(p["a"]["n"], p["b"]["n"]) for p in one["pairs"]] == [(3, 3)]


def test_the_page_its_script_and_its_style_ship_in_the_package() -> None:
    from tests.test_packaging import shipped_package_data

    shipped = {path.name for path in shipped_package_data("palaestra.viewer")}
    assert {"index.html", "viewer.js", "viewer.css"} <= shipped


def test_each_runs_figures_come_with_palaestra_evaluates_intervals(
    server: BackgroundServer,
) -> None:
    status, body = get(server, "/api/figures?run=0")
    assert status == 200
    mean = next(f for f in body["figures"] if f["name"] == "mean reward")
    assert mean["value"] == pytest.approx((4 + 1 + 0.5) / 12)
    assert (mean["tasks"], mean["failed"]) == (12, 3)
    assert mean["interval"]["low"] < mean["value"] < mean["interval"]["high"]
    assert body["reading"] == "failures excluded"


def test_the_comparison_is_palaestra_evaluates_over_the_paired_tasks(
    server: BackgroundServer,
) -> None:
    status, body = get(server, "/api/comparison")
    assert status == 200
    assert (body["paired"], body["only_in_b"]) == (6, [20])
    mean = next(d for d in body["differences"] if d["name"] == "mean reward")
    assert (mean["a"], mean["b"], mean["difference"]) == pytest.approx((1 / 3, 2 / 3, 1 / 3))
    assert mean["test"]["p_value"] > 0


def test_a_run_palaestra_evaluate_cannot_read_still_opens_and_says_why(tmp_path: Path) -> None:
    row = scored(0, "Oslo", 1.0)
    del row["_ng_task_index"]
    runs = open_runs([write_run(tmp_path / "bare.jsonl", [row])])
    with BackgroundServer(viewer_app(runs)) as bare:
        assert get(bare, "/api/rows", token=None)[1]["matched"] == 1
        status, body = get(bare, "/api/figures", token=None)
    assert status == 200
    assert body["figures"] == []
    assert body["error"].startswith("no intervals: ") and "_ng_task_index" in body["error"]


def test_a_request_addressed_to_another_host_name_is_refused_on_loopback(
    server: BackgroundServer,
) -> None:
    request = urllib.request.Request(server.url + "/api/runs", headers={"Host": "evil.example"})
    request.add_header("Authorization", f"Bearer {TOKEN}")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 400
    request = urllib.request.Request(
        server.url + "/api/runs", headers={"Host": f"localhost:{server.port}"}
    )
    request.add_header("Authorization", f"Bearer {TOKEN}")
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200


@pytest.mark.parametrize("given", ["%E2%82%AC", "s3cr%C3%A9t", "%FF%FE"])
def test_a_token_in_the_url_that_is_not_ascii_is_a_401_not_a_500(
    server: BackgroundServer, given: str
) -> None:
    status, body = get(server, f"/api/runs?token={given}", token=None)
    assert status == 401 and body["error"]["message"] == "missing or wrong bearer token"
