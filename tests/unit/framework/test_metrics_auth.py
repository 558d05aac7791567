"""/metrics under --metrics-secure: TokenReview, then SubjectAccessReview for get on /metrics, cached
(ome/framework/metrics_auth.py; controller-runtime's filters.WithAuthenticationAndAuthorization)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from ome.cmd import manager as manager_cmd
from ome.cmd import rbac
from ome.framework import errors
from ome.framework.metrics_auth import (
    ALLOW_TTL,
    DENY_TTL,
    TOKEN_TTL,
    MetricsAuthFilter,
    MetricsAuthOptions,
    bearer_token,
)
from ome.framework.probes_server import MetricsServer
from tests.unit.framework.fakeclock import FakeClock

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[3]
READER = "system:serviceaccount:monitoring:prometheus"
OTHER = "system:serviceaccount:default:nobody"


class FakeReviews:
    """The apiserver's two review endpoints: `tokens` maps a token to its user; `allowed` lists the users
    RBAC lets get /metrics. Every review body is kept."""

    def __init__(self) -> None:
        self.tokens: dict[str, Obj] = {
            "reader-token": {"username": READER, "uid": "u-1", "groups": ["system:serviceaccounts"],
                             "extra": {"authentication.kubernetes.io/pod-name": ["prometheus-0"]}},
            "other-token": {"username": OTHER, "uid": "u-2", "groups": ["system:authenticated"]},
        }
        self.allowed = {READER}
        self.token_reviews: list[Obj] = []
        self.access_reviews: list[Obj] = []
        self.fail_tokens: Exception | None = None
        self.fail_access: Exception | None = None
        self.hold: asyncio.Event | None = None

    async def token_review(self, review: Obj) -> Obj:
        self.token_reviews.append(review)
        if self.hold is not None:
            await self.hold.wait()
        if self.fail_tokens is not None:
            raise self.fail_tokens
        user = self.tokens.get(review["spec"]["token"])
        status: Obj = {"authenticated": True, "user": user} if user else {"error": "invalid bearer token"}
        return {**review, "status": status}

    async def subject_access_review(self, review: Obj) -> Obj:
        self.access_reviews.append(review)
        if self.fail_access is not None:
            raise self.fail_access
        spec = review["spec"]
        allowed = (spec["user"] in self.allowed and spec["nonResourceAttributes"] == {"path": "/metrics",
                                                                                        "verb": "get"})
        return {**review, "status": {"allowed": allowed, "reason": "RBAC: allowed" if allowed else ""}}


def bearer(token: str) -> str:
    return f"Bearer {token}"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def reviews() -> FakeReviews:
    return FakeReviews()


@pytest.fixture
def auth(reviews: FakeReviews, clock: FakeClock) -> MetricsAuthFilter:
    return MetricsAuthFilter(reviews, MetricsAuthOptions(clock=clock.monotonic))


# ---- the answers --------------------------------------------------------------------------------------


async def test_allowed_user_passes_after_both_reviews(auth: MetricsAuthFilter, reviews: FakeReviews) -> None:
    decision = await auth.check("GET", "/metrics", bearer("reader-token"))
    assert (decision.status, decision.user) == (200, READER)
    assert reviews.token_reviews == [{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                      "spec": {"token": "reader-token"}}]
    # The SubjectAccessReview asks for the reviewed user, all of its identity, verb get on the URL path.
    assert reviews.access_reviews == [{
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": READER, "uid": "u-1", "groups": ["system:serviceaccounts"],
                 "extra": {"authentication.kubernetes.io/pod-name": ["prometheus-0"]},
                 "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}}]


async def test_user_not_allowed_is_forbidden(auth: MetricsAuthFilter, reviews: FakeReviews) -> None:
    decision = await auth.check("GET", "/metrics", bearer("other-token"))
    assert (decision.status, decision.message) == (403, f"Authorization denied for user {OTHER}")
    assert len(reviews.access_reviews) == 1


async def test_bad_token_is_unauthorized_without_an_access_review(
    auth: MetricsAuthFilter, reviews: FakeReviews
) -> None:
    decision = await auth.check("GET", "/metrics", bearer("made-up"))
    assert (decision.status, decision.message) == (401, "Unauthorized")
    assert len(reviews.token_reviews) == 1 and reviews.access_reviews == []


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer ", "Basic cmVhZGVyOnB3", "reader-token"],
                         ids=["missing", "empty", "scheme-only", "empty-token", "basic", "no-scheme"])
async def test_no_bearer_token_is_unauthorized_without_any_review(
    auth: MetricsAuthFilter, reviews: FakeReviews, header: str | None
) -> None:
    assert (await auth.check("GET", "/metrics", header)).status == 401
    assert reviews.token_reviews == [] and reviews.access_reviews == []


def test_bearer_token_parsing_follows_the_apiserver() -> None:
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("bearer abc") == "abc"  # the scheme in any case
    assert bearer_token("  Bearer abc  ") == "abc"
    assert bearer_token("Bearer abc trailing") == "abc"
    assert bearer_token("Bearer  abc") is None  # two spaces: an empty token


async def test_token_review_failure_is_401_and_not_cached(auth: MetricsAuthFilter, reviews: FakeReviews) -> None:
    reviews.fail_tokens = errors.ApiError(503, "ServiceUnavailable", "apiserver unavailable")
    decision = await auth.check("GET", "/metrics", bearer("reader-token"))
    assert (decision.status, decision.message) == (401, "Authentication failed")
    reviews.fail_tokens = None
    assert (await auth.check("GET", "/metrics", bearer("reader-token"))).status == 200
    assert len(reviews.token_reviews) == 2


async def test_access_review_failure_is_500_and_not_cached(auth: MetricsAuthFilter, reviews: FakeReviews) -> None:
    reviews.fail_access = errors.ApiError(403, "Forbidden", "cannot create subjectaccessreviews")
    decision = await auth.check("GET", "/metrics", bearer("reader-token"))
    assert (decision.status, decision.message) == (500, f"Authorization for user {READER} failed")
    reviews.fail_access = None
    assert (await auth.check("GET", "/metrics", bearer("reader-token"))).status == 200
    assert len(reviews.access_reviews) == 2


async def test_other_verbs_and_paths_are_reviewed_as_such(auth: MetricsAuthFilter, reviews: FakeReviews) -> None:
    assert (await auth.check("HEAD", "/metrics", bearer("reader-token"))).status == 403
    assert reviews.access_reviews[-1]["spec"]["nonResourceAttributes"] == {"path": "/metrics", "verb": "head"}


# ---- the cache ----------------------------------------------------------------------------------------


async def test_repeated_scrapes_review_once_until_each_ttl_runs_out(
    auth: MetricsAuthFilter, reviews: FakeReviews, clock: FakeClock
) -> None:
    assert (TOKEN_TTL, ALLOW_TTL, DENY_TTL) == (60.0, 300.0, 30.0)  # controller-runtime's
    for _ in range(4):  # a minute of 15 s scrapes
        assert (await auth.check("GET", "/metrics", bearer("reader-token"))).status == 200
        clock.step(14.9)
    assert (len(reviews.token_reviews), len(reviews.access_reviews)) == (1, 1)
    clock.step(0.5)  # 60.1 s: the token is reviewed again, the allowed decision is still fresh
    assert (await auth.check("GET", "/metrics", bearer("reader-token"))).status == 200
    assert (len(reviews.token_reviews), len(reviews.access_reviews)) == (2, 1)
    clock.step(ALLOW_TTL - 60)
    assert (await auth.check("GET", "/metrics", bearer("reader-token"))).status == 200
    assert (len(reviews.token_reviews), len(reviews.access_reviews)) == (3, 2)


async def test_a_denial_is_kept_for_the_deny_ttl_only(
    auth: MetricsAuthFilter, reviews: FakeReviews, clock: FakeClock
) -> None:
    assert (await auth.check("GET", "/metrics", bearer("other-token"))).status == 403
    reviews.allowed.add(OTHER)  # an operator binds ome-metrics-reader
    clock.step(DENY_TTL - 1)
    assert (await auth.check("GET", "/metrics", bearer("other-token"))).status == 403
    assert len(reviews.access_reviews) == 1
    clock.step(2)
    assert (await auth.check("GET", "/metrics", bearer("other-token"))).status == 200
    assert len(reviews.access_reviews) == 2


async def test_a_revoked_grant_ends_within_the_allow_ttl(
    auth: MetricsAuthFilter, reviews: FakeReviews, clock: FakeClock
) -> None:
    assert (await auth.check("GET", "/metrics", bearer("reader-token"))).status == 200
    reviews.allowed.clear()
    clock.step(ALLOW_TTL + 1)
    assert (await auth.check("GET", "/metrics", bearer("reader-token"))).status == 403


async def test_an_unauthenticated_token_is_cached_too(
    auth: MetricsAuthFilter, reviews: FakeReviews, clock: FakeClock
) -> None:
    for _ in range(3):
        assert (await auth.check("GET", "/metrics", bearer("made-up"))).status == 401
    assert len(reviews.token_reviews) == 1
    clock.step(TOKEN_TTL + 0.1)
    assert (await auth.check("GET", "/metrics", bearer("made-up"))).status == 401
    assert len(reviews.token_reviews) == 2


async def test_ttls_are_configurable(reviews: FakeReviews, clock: FakeClock) -> None:
    auth = MetricsAuthFilter(reviews, MetricsAuthOptions(token_ttl=5, allow_ttl=5, clock=clock.monotonic))
    await auth.check("GET", "/metrics", bearer("reader-token"))
    clock.step(4)
    await auth.check("GET", "/metrics", bearer("reader-token"))
    assert (len(reviews.token_reviews), len(reviews.access_reviews)) == (1, 1)
    clock.step(2)
    await auth.check("GET", "/metrics", bearer("reader-token"))
    assert (len(reviews.token_reviews), len(reviews.access_reviews)) == (2, 2)


async def test_a_zero_ttl_turns_the_cache_off(reviews: FakeReviews, clock: FakeClock) -> None:
    auth = MetricsAuthFilter(reviews, MetricsAuthOptions(token_ttl=0, allow_ttl=0, clock=clock.monotonic))
    for _ in range(2):
        await auth.check("GET", "/metrics", bearer("reader-token"))
    assert (len(reviews.token_reviews), len(reviews.access_reviews)) == (2, 2)


async def test_concurrent_scrapes_with_one_token_share_one_review(
    auth: MetricsAuthFilter, reviews: FakeReviews
) -> None:
    reviews.hold = asyncio.Event()
    pending = [asyncio.create_task(auth.check("GET", "/metrics", bearer("reader-token"))) for _ in range(5)]
    await asyncio.sleep(0)
    reviews.hold.set()
    assert [d.status for d in await asyncio.gather(*pending)] == [200] * 5
    assert (len(reviews.token_reviews), len(reviews.access_reviews)) == (1, 1)


async def test_the_cache_is_bounded_and_keeps_no_raw_token(reviews: FakeReviews, clock: FakeClock) -> None:
    auth = MetricsAuthFilter(reviews, MetricsAuthOptions(max_entries=2, clock=clock.monotonic))
    for token in ("made-up-1", "made-up-2", "made-up-3", "reader-token"):
        await auth.check("GET", "/metrics", bearer(token))
    assert len(auth.tokens) == 2
    assert not any("token" in key for key in auth.tokens._entries)  # SHA-256 digests only
    await auth.check("GET", "/metrics", bearer("reader-token"))  # the newest entries stay
    assert len(reviews.token_reviews) == 4


# ---- on the metrics server ----------------------------------------------------------------------------


@pytest.fixture
async def server(auth: MetricsAuthFilter) -> AsyncIterator[MetricsServer]:
    srv = MetricsServer("127.0.0.1:0", request_filter=auth)
    await srv.start()
    yield srv
    await srv.stop()


async def scrape(port: int, authorization: str | None) -> tuple[int, str]:
    headers = {"Authorization": authorization} if authorization is not None else {}
    async with aiohttp.ClientSession() as session, \
            session.get(f"http://127.0.0.1:{port}/metrics", headers=headers) as resp:
        return resp.status, await resp.text()


async def test_metrics_server_answers_200_403_401(server: MetricsServer) -> None:
    status, body = await scrape(server.port, bearer("reader-token"))
    assert status == 200 and "python_info" in body
    assert await scrape(server.port, bearer("other-token")) == (403, f"Authorization denied for user {OTHER}\n")
    assert await scrape(server.port, bearer("made-up")) == (401, "Unauthorized\n")
    assert await scrape(server.port, None) == (401, "Unauthorized\n")


async def test_metrics_server_without_a_filter_stays_open() -> None:
    srv = MetricsServer("127.0.0.1:0")
    await srv.start()
    try:
        assert (await scrape(srv.port, None))[0] == 200
    finally:
        await srv.stop()


# ---- flag and RBAC ------------------------------------------------------------------------------------


def test_metrics_secure_help_names_the_reader_role(capsys: pytest.CaptureFixture[str]) -> None:
    """controller-manager-flags.md: "`--metrics-secure` | `false` | None | Serves the metrics endpoint over
    HTTPS." With it, as controller-runtime's scaffold does, scrapes need a token allowed get on /metrics."""
    with pytest.raises(SystemExit):
        manager_cmd.parse_args(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "get on /metrics only (TokenReview and SubjectAccessReview" in help_text
    assert "ome-metrics-reader" in help_text


def _docs(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _by_name(docs: list[Obj], kind: str, name: str) -> Obj:
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


def test_config_rbac_has_v13_metrics_roles_and_binding() -> None:
    """v1.3's config/rbac: ClusterRole ome-metrics-auth-role (create tokenreviews, subjectaccessreviews),
    bound to the manager by ome-metrics-auth-rolebinding, and ome-metrics-reader (get on /metrics)."""
    roles = _docs(rbac.ROLE_FILE)
    auth_role = _by_name(roles, "ClusterRole", "ome-metrics-auth-role")
    assert {(r["apiGroups"][0], r["resources"][0], tuple(r["verbs"])) for r in auth_role["rules"]} == {
        ("authentication.k8s.io", "tokenreviews", ("create",)),
        ("authorization.k8s.io", "subjectaccessreviews", ("create",))}
    reader = _by_name(roles, "ClusterRole", "ome-metrics-reader")
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    binding = _by_name(_docs(ROOT / "config" / "rbac" / "role_binding.yaml"), "ClusterRoleBinding",
                       "ome-metrics-auth-rolebinding")
    assert binding["roleRef"]["name"] == "ome-metrics-auth-role"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "ome-controller-manager",
                                    "namespace": "ome"}]
    assert rbac.render() == rbac.ROLE_FILE.read_text()  # generated, not hand-edited


def test_chart_ships_the_same_metrics_roles() -> None:
    text = (ROOT / "charts" / "ome-resources" / "templates" / "rbac.yaml").read_text()
    docs = _docs_from_template(text)
    config = _docs(rbac.ROLE_FILE) + _docs(ROOT / "config" / "rbac" / "role_binding.yaml")
    for kind, name in (("ClusterRole", "ome-metrics-auth-role"), ("ClusterRole", "ome-metrics-reader"),
                       ("ClusterRoleBinding", "ome-metrics-auth-rolebinding")):
        chart = _by_name(docs, kind, name)
        expected = _by_name(config, kind, name)
        if kind == "ClusterRoleBinding":
            assert chart["subjects"][0]["namespace"] == "RELEASE_NAMESPACE"
            chart["subjects"][0]["namespace"] = "ome"
        assert chart == expected


def _docs_from_template(text: str) -> list[Obj]:
    return [d for d in yaml.safe_load_all(text.replace("{{ .Release.Namespace }}", "RELEASE_NAMESPACE")) if d]
