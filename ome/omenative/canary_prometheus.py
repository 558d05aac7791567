"""Prometheus HTTP API client for canary analysis: instant queries (`GET /api/v1/query`) over aiohttp.

`sample` runs every metric of one analysis step within one `queryTimeout`, and never raises: a
failure becomes an inconclusive metric with the cause as its message (the source is unreachable, it
refused the token, the sample ran out of time, a template error, a range vector). A global semaphore
bounds concurrent samples (`canaryAnalysis.maxConcurrency`); the sampler gauges count them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import aiohttp
import orjson

from ome.omenative import canary_analysis as analysis
from ome.omenative import canary_metrics as metrics


@dataclass(frozen=True, slots=True)
class Source:
    """Where one canary's queries go, resolved from its `prometheus` block and the config."""

    address: str
    headers: Mapping[str, str] = field(default_factory=dict)
    token: str | None = None


class PrometheusClient:
    def __init__(self, *, max_concurrency: int = 8, session: aiohttp.ClientSession | None = None) -> None:
        self._session = session
        self._own_session = session is None
        self._slots = asyncio.Semaphore(max(1, max_concurrency))
        self._waiting = 0

    async def close(self) -> None:
        if self._session is not None and self._own_session:
            await self._session.close()
            self._session = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        return self._session

    async def query(self, source: Source, promql: str, timeout: float) -> analysis.QueryAnswer:
        """One instant query; the answer's numbers, or why there are none."""
        url = source.address.rstrip("/") + "/api/v1/query"
        headers = dict(source.headers)
        if source.token:
            headers["Authorization"] = f"Bearer {source.token}"
        try:
            async with self._http().get(
                url,
                params={"query": promql},
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as resp:
                body = await resp.read()
                if resp.status != 200:
                    return analysis.QueryAnswer(error=_error_text(resp.status, body))
                return parse_answer(body)
        except TimeoutError:
            return analysis.QueryAnswer(error=f"query timed out after {timeout:g}s")
        except (aiohttp.ClientError, ValueError, OSError) as exc:
            return analysis.QueryAnswer(error=f"query failed: {exc}")

    async def sample(
        self,
        source: Source | None,
        metrics_spec: Sequence[Mapping[str, Any]],
        variables: Mapping[str, str],
        *,
        timeout: float,
        now: datetime,
        source_error: tuple[str, str] | None = None,
    ) -> analysis.Sample:
        """Judge every metric of a step once. `source_error` (metric name, message) stands for a source
        that could not be resolved (`auth`: the token Secret; `prometheus`: the address)."""
        if source_error is not None or source is None:
            name, message = source_error or (analysis.PROMETHEUS_METRIC, "no Prometheus address configured")
            return analysis.Sample(now, (analysis.MetricResult(name, False, message=message),))
        starved = self._slots.locked()
        if starved:
            metrics.SAMPLER_STARVED.inc()
        self._waiting += 1
        metrics.SAMPLER_QUEUE.set(self._waiting)
        entered = False
        try:
            async with self._slots:
                entered = True
                self._waiting -= 1
                metrics.SAMPLER_QUEUE.set(self._waiting)
                metrics.SAMPLER_INFLIGHT.inc()
                try:
                    results = await self._judge_all(source, metrics_spec, variables, timeout)
                finally:
                    metrics.SAMPLER_INFLIGHT.dec()
        finally:
            if not entered:  # cancelled while waiting for a slot
                self._waiting -= 1
                metrics.SAMPLER_QUEUE.set(self._waiting)
        return analysis.Sample(now, tuple(results))

    async def _judge_all(
        self,
        source: Source,
        metrics_spec: Sequence[Mapping[str, Any]],
        variables: Mapping[str, str],
        timeout: float,
    ) -> list[analysis.MetricResult]:
        async def one(metric: Mapping[str, Any]) -> analysis.MetricResult:
            try:
                promql = analysis.render(str(metric.get("query") or ""), variables)
            except analysis.TemplateError as exc:
                answer = analysis.QueryAnswer(error=analysis.TEMPLATE_ERROR + str(exc))
                return analysis.judge_metric(metric, answer)
            return analysis.judge_metric(metric, await self.query(source, promql, timeout))

        # All the queries of one sample share one queryTimeout.
        try:
            async with asyncio.timeout(timeout):
                return list(await asyncio.gather(*(one(m) for m in metrics_spec)))
        except TimeoutError:
            message = f"sample timed out after {timeout:g}s"
            return [analysis.judge_metric(m, analysis.QueryAnswer(error=message)) for m in metrics_spec]


def parse_answer(body: bytes) -> analysis.QueryAnswer:
    """A `/api/v1/query` body: a vector's or scalar's numbers; a matrix or an error is inconclusive."""
    doc = orjson.loads(body)
    if not isinstance(doc, dict) or doc.get("status") != "success":
        error = doc.get("error") if isinstance(doc, dict) else None
        return analysis.QueryAnswer(error=str(error or "query failed"))
    data = doc.get("data") or {}
    kind, result = data.get("resultType"), data.get("result")
    if kind == "vector":
        values = [_number(item.get("value")) for item in result or [] if isinstance(item, dict)]
        return analysis.QueryAnswer(values=tuple(v for v in values if v is not None))
    if kind == "scalar":
        value = _number(result)
        return analysis.QueryAnswer(values=(value,) if value is not None else ())
    if kind == "matrix":
        return analysis.QueryAnswer(error="query returned a range vector; use an instant vector")
    return analysis.QueryAnswer(error=f"unsupported result type {kind!r}")


def _number(pair: Any) -> float | None:
    if not isinstance(pair, list) or len(pair) != 2:
        return None
    try:
        value = float(pair[1])
    except (TypeError, ValueError):
        return None
    return None if value != value or value in (float("inf"), float("-inf")) else value


def _error_text(status: int, body: bytes) -> str:
    try:
        doc = orjson.loads(body)
        if isinstance(doc, dict) and doc.get("error"):
            return f"prometheus returned {status}: {doc['error']}"
    except orjson.JSONDecodeError:
        pass
    return f"prometheus returned {status}"
