"""Canary analysis: template variables, judging samples, the Prometheus answer parser and client."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from aiohttp import web

from ome.omenative import canary_analysis as analysis
from ome.omenative import canary_metrics as metrics
from ome.omenative import canary_prometheus as prom

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
VARS = analysis.variables("prod", "chat", "engine", "bbbbbbbb", "aaaaaaaa")


def test_template_variables_fill_every_documented_name() -> None:
    query = " ".join("{{." + name + "}}" for name in analysis.VARIABLES)
    assert analysis.render(query, VARS) == (
        "prod chat engine bbbbbbbb aaaaaaaa chat-engine-rev-bbbbbbbb chat-engine-rev-aaaaaaaa"
    )
    assert analysis.render('x{namespace="{{ .Namespace }}"}', VARS) == 'x{namespace="prod"}'


@pytest.mark.parametrize("query", ["{{.Nope}}", "{{ printf 1 }}", "{{.Namespace"])
def test_template_errors(query: str) -> None:
    with pytest.raises(analysis.TemplateError):
        analysis.render(query, VARS)


def metric(operator: str = "LT", threshold: str = "0.01") -> dict[str, str]:
    return {"name": "m", "query": "q", "operator": operator, "threshold": threshold}


def test_the_worst_value_is_judged_per_operator() -> None:
    values = analysis.QueryAnswer(values=(0.001, 0.2))
    assert analysis.judge_metric(metric("LT"), values).value == 0.2
    assert not analysis.judge_metric(metric("LT"), values).passed
    assert analysis.judge_metric(metric("GTE", "0.001"), values).passed
    assert analysis.judge_metric(metric("GT", "0.001"), values).value == 0.001
    assert not analysis.judge_metric(metric("GT", "0.001"), values).passed


def test_no_data_and_errors_are_inconclusive() -> None:
    empty = analysis.judge_metric(metric(), analysis.QueryAnswer())
    assert (empty.passed, empty.value, empty.message) == (False, None, "no data")
    nan = analysis.judge_metric(metric(), analysis.QueryAnswer(values=(float("nan"),)))
    assert nan.message == "no data"
    broken = analysis.judge_metric(metric(), analysis.QueryAnswer(error="query failed: refused"))
    assert broken.message == "query failed: refused"
    assert analysis.verdict([empty]) == "inconclusive"
    passed = analysis.judge_metric(metric(), analysis.QueryAnswer(values=(0.0,)))
    failed = analysis.judge_metric(metric(), analysis.QueryAnswer(values=(1.0,)))
    assert analysis.verdict([passed, empty]) == "inconclusive"
    assert analysis.verdict([failed, empty]) == "fail"
    assert analysis.verdict([passed]) == "pass"


def test_metric_result_status_shape() -> None:
    result = analysis.judge_metric(metric(), analysis.QueryAnswer(values=(0.5,)))
    assert result.as_status(T0) == {
        "name": "m", "passed": False, "time": "2026-12-03T12:00:00Z", "value": "0.5", "threshold": "0.01",
        "operator": "LT",
    }


def test_next_sample_after_initial_delay_then_every_interval() -> None:
    spec = {"interval": "1m", "initialDelay": "2m"}
    canary = {"stepEnteredTime": "2026-12-03T12:00:00Z"}
    assert analysis.next_sample_at(spec, canary) == T0 + timedelta(minutes=2)
    later = {**canary, "lastEvaluationTime": "2026-12-03T12:05:00Z"}
    assert analysis.next_sample_at(spec, later) == T0 + timedelta(minutes=6)


def test_a_pass_does_not_reset_failed_checks() -> None:
    spec = {"interval": "1m", "failureLimit": 3}
    status = {"stepEnteredTime": "2026-12-03T12:00:00Z", "analysisFailedChecks": 2}
    passing = analysis.Sample(T0, (analysis.judge_metric(metric(), analysis.QueryAnswer(values=(0.0,))),))
    decision = analysis.decide(spec, status, passing, T0, None, bake_done=True)
    assert decision.action == "advance" and "analysisFailedChecks" not in decision.status


@pytest.mark.parametrize(
    ("body", "values", "error"),
    [
        ({"status": "success", "data": {"resultType": "vector", "result": [
            {"metric": {}, "value": [1, "0.5"]}, {"metric": {}, "value": [1, "0.25"]}]}}, (0.5, 0.25), None),
        ({"status": "success", "data": {"resultType": "scalar", "result": [1, "3"]}}, (3.0,), None),
        ({"status": "success", "data": {"resultType": "vector", "result": []}}, (), None),
        ({"status": "success", "data": {"resultType": "matrix", "result": []}}, (),
         "query returned a range vector; use an instant vector"),
        ({"status": "error", "error": "parse error"}, (), "parse error"),
    ],
)
def test_parse_answer(body: dict[str, object], values: tuple[float, ...], error: str | None) -> None:
    answer = prom.parse_answer(orjson.dumps(body))
    assert answer.values == values and answer.error == error


async def test_client_queries_the_http_api_with_token_and_headers() -> None:
    seen: list[tuple[str, str | None, str | None]] = []

    async def query(request: web.Request) -> web.Response:
        seen.append((request.query["query"], request.headers.get("Authorization"),
                     request.headers.get("X-Scope-OrgID")))
        return web.json_response({"status": "success", "data": {"resultType": "vector", "result": [
            {"metric": {}, "value": [1, "0.2"]}]}})

    app = web.Application()
    app.router.add_get("/api/v1/query", query)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    client = prom.PrometheusClient(max_concurrency=1)
    try:
        source = prom.Source(f"http://127.0.0.1:{port}", {"X-Scope-OrgID": "tenant-a"}, "tok")
        spec = [{"name": "error-rate", "query": 'r{ns="{{.Namespace}}"}', "operator": "LT", "threshold": "0.01"},
                {"name": "bad", "query": "{{.Missing}}", "operator": "LT", "threshold": "1"}]
        sample = await client.sample(source, spec, VARS, timeout=5, now=T0)
        assert seen == [('r{ns="prod"}', "Bearer tok", "tenant-a")]
        assert sample.verdict == "fail"
        assert sample.results[0].value == 0.2
        assert sample.results[1].message == "template error: can't evaluate field Missing"
        unreachable = await client.sample(prom.Source("http://127.0.0.1:1"), spec[:1], VARS, timeout=2, now=T0)
        assert unreachable.verdict == "inconclusive"
        assert (unreachable.results[0].message or "").startswith("query failed:")
        missing = await client.sample(None, spec, VARS, timeout=1, now=T0,
                                      source_error=("auth", "resolve bearer token: secret not found"))
        assert [r.name for r in missing.results] == ["auth"]
        assert metrics.SAMPLER_INFLIGHT._value.get() == 0  # noqa: SLF001
    finally:
        await client.close()
        await runner.cleanup()


async def test_a_slow_source_times_the_whole_sample_out() -> None:
    async def slow(request: web.Request) -> web.Response:
        await asyncio.Event().wait()  # never answers
        return web.json_response({})

    app = web.Application()
    app.router.add_get("/api/v1/query", slow)
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    client = prom.PrometheusClient()
    try:
        source = prom.Source(f"http://127.0.0.1:{runner.addresses[0][1]}")
        sample = await client.sample(source, [metric()], VARS, timeout=0.2, now=T0)
        assert sample.verdict == "inconclusive"
        assert "timed out" in (sample.results[0].message or "")
    finally:
        await client.close()
        await runner.cleanup()
