"""Observability: request ids, JSON logs with request and table ids, no secret or hidden card in any
log line of a whole game, and the Prometheus metrics (/metrics, its guard, multiprocess mode)."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import random
import re
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.db import connection
from django.test import AsyncClient
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from games import services
from games.accounts import app_create
from games.engine import state_from_dict
from games.engine.cards import names
from games.models import Table
from hearts_service import observability
from hearts_service.celery import app as celery_app
from tests.api.test_api import choose

pytestmark = pytest.mark.django_db(transaction=True)  # on-commit hooks (bots, counters) run
ROOT = Path(__file__).resolve().parents[2]
CARD = re.compile(r"\b(?:10|[2-9TJQKA])[CDSH]\b")
ACTIONS_ROUTE = "api/v1/tables/<id:table_id>/actions"


class Lines(logging.Handler):
    """Every record formatted as the JSON formatter writes it, through the context filter."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(observability.JsonFormatter())
        self.addFilter(observability.ContextFilter())
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    def parsed(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines]


@pytest.fixture
def logs() -> Iterator[Lines]:
    """Captures the root logger at DEBUG (pytest runs with -p no:logging, so no caplog), with
    SQL statements going through the debug cursor: the logging settings must keep them out."""
    root = logging.getLogger()
    handler, level = Lines(), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    connection.force_debug_cursor = True
    try:
        yield handler
    finally:
        connection.force_debug_cursor = False
        root.removeHandler(handler)
        root.setLevel(level)


def client(token: str | None = None) -> APIClient:
    c = APIClient()
    if token:
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return c


def scrape(**headers: str) -> list[Any]:
    r = APIClient().get("/metrics", **headers)
    assert r.status_code == 200, r.content
    assert r["Content-Type"].startswith("text/plain")
    return [s for family in text_string_to_metric_families(r.content.decode()) for s in family.samples]


def value(samples: list[Any], name: str, **labels: str) -> float:
    """The sum of the samples called `name` whose labels include `labels` (0 when none)."""
    return sum(
        s.value for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def hidden_forms(cards: list[str]) -> set[str]:
    """The ways a list of cards could be written into a log line."""
    return {json.dumps(cards), repr(cards), ",".join(cards), ", ".join(cards), " ".join(cards)}


def test_request_id_is_honoured_when_sane_and_generated_otherwise() -> None:
    r = client().get("/healthz", HTTP_X_REQUEST_ID="edge-7f3a.42:retry-1")
    assert r["X-Request-ID"] == "edge-7f3a.42:retry-1"
    generated = {
        client().get("/healthz", HTTP_X_REQUEST_ID=bad)["X-Request-ID"] for bad in ("", "a b", "x" * 200)
    }
    generated.add(client().get("/healthz")["X-Request-ID"])
    assert len(generated) == 4 and all(re.fullmatch(r"[0-9a-f]{32}", g) for g in generated)
    assert client().get("/no/such/route")["X-Request-ID"]  # a 404 carries one too


def test_json_log_lines_parse_and_carry_request_and_table_ids(logs: Lines) -> None:
    _, key = app_create(name="logs")
    table_id = client(key).post("/api/v1/tables", {}, format="json").json()["id"]
    logs.lines.clear()
    r = client(key).get(f"/api/v1/tables/{table_id}", HTTP_X_REQUEST_ID="req-1")
    assert r.status_code == 200 and r["X-Request-ID"] == "req-1"
    r = client(key).get(f"/api/v1/tables/{table_id + 1000}", HTTP_X_REQUEST_ID="req-2")
    assert r.status_code == 404
    lines = logs.parsed()
    access = [line for line in lines if line["logger"] == "hearts.access"]
    assert [a["request_id"] for a in access] == ["req-1", "req-2"]
    first = access[0]
    assert {"time", "level", "logger", "message"} <= first.keys()
    assert first["level"] == "INFO" and first["status"] == 200 and first["duration_ms"] >= 0
    assert first["route"] == "api/v1/tables/<id:table_id>" and first["method"] == "GET"
    assert first["table_id"] == table_id and access[1]["table_id"] == table_id + 1000
    dt.datetime.fromisoformat(first["time"])
    # django.request's warning about the 404 is written after the middleware: it still has the ids
    warning = next(line for line in lines if line["logger"] == "django.request")
    assert warning["request_id"] == "req-2" and warning["table_id"] == table_id + 1000
    # a line logged with an exception keeps its traceback in one JSON object
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("games.test").exception("failed")
    failed = json.loads(logs.lines[-1])
    assert failed["message"] == "failed" and "ValueError: boom" in failed["exc"]


def test_async_requests_get_an_id_and_an_access_line(logs: Lines) -> None:
    import asyncio

    response = asyncio.run(AsyncClient().get("/healthz", headers={"X-Request-ID": "async-1"}))
    assert response["X-Request-ID"] == "async-1"
    access = [line for line in logs.parsed() if line["logger"] == "hearts.access"]
    assert access[-1]["request_id"] == "async-1" and access[-1]["route"] == "healthz"


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
def test_a_whole_game_over_rest_logs_no_secret_and_moves_the_metrics(logs: Lines) -> None:
    """Three players (tokens from an app key) and a bot play a game to 50 points over REST with
    logs captured at DEBUG: no key, token, dealt hand or pass appears in any line, every request's
    lines carry its id (and the table's), and the counters and histograms moved by what was done."""
    before = scrape()
    rng = random.Random(8)
    _, key = app_create(name="crawl")
    tokens = []
    for i in range(3):
        r = client(key).post("/api/v1/players", {"name": f"p{i}"}, format="json")
        assert r.status_code == 201
        tokens.append(r.json()["token"])
    r = client(key).post(
        "/api/v1/tables",
        {"options": {"players": 4, "target_score": 50}, "bots": {"3": "basic"}},
        format="json",
    )
    table_id = r.json()["id"]
    for token in tokens:
        assert client(token).post(f"/api/v1/tables/{table_id}/join", {}, format="json").status_code == 200
    seat_of = {client(t).get(f"/api/v1/tables/{table_id}").json()["your_seat"]: t for t in tokens}

    hidden: set[str] = set()  # every written form of every hand dealt and every pass made
    hands_seen: set[int] = set()
    done = {"pass": 0, "play": 0, "moon": 0}
    while True:
        table = Table.objects.get(pk=table_id)
        if table.status == Table.Status.FINISHED:
            break
        state = state_from_dict(table.state)
        if state.hand_no not in hands_seen:
            hands_seen.add(state.hand_no)
            for mask in state.hands:
                hidden |= hidden_forms(names(mask)) | {format(mask, "x"), str(mask)}
        seat = rng.choice([s for s in state.to_act() if s in seat_of])
        mine = client(seat_of[seat]).get(f"/api/v1/tables/{table_id}").json()
        action = choose(mine["game"], rng)
        if action["type"] == "pass":
            hidden |= hidden_forms(action["cards"])
        r = client(seat_of[seat]).post(
            f"/api/v1/tables/{table_id}/actions", action, format="json", HTTP_IF_MATCH=str(mine["version"])
        )
        assert r.status_code == 200, r.json()
        done[action["type"]] += 1
    assert len(hands_seen) >= 2 and done["pass"] and done["play"]

    secrets = [key, *tokens]
    assert logs.lines
    for line in logs.lines:
        for secret in secrets:
            assert secret not in line and secret[-16:] not in line, line
        assert not CARD.search(line), line
        assert not any(form in line for form in hidden if len(form) > 3), line
        assert "authorization" not in line.lower() and "bearer" not in line.lower(), line
    parsed = logs.parsed()
    access = [p for p in parsed if p["logger"] == "hearts.access"]
    assert len(access) >= 2 * sum(done.values())
    assert all(re.fullmatch(r"[0-9a-f]{32}", a["request_id"]) for a in access)
    assert all(a["table_id"] == table_id for a in access if "<id:table_id>" in a["route"])
    tasks = [p for p in parsed if p.get("task") == "games.play_bots"]
    assert all(p["table_id"] == table_id and p["task_id"] for p in tasks)

    after = scrape()

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    for kind, count in done.items():
        assert moved("hearts_actions_applied_total", kind=kind, actor="human") == count
    assert moved("hearts_actions_applied_total", actor="bot") > 0
    assert moved("hearts_bot_decision_seconds_count", level="basic") > 0
    assert moved("hearts_task_duration_seconds_count", task="games.play_bots", state="SUCCESS") > 0
    posts = moved(
        "hearts_http_request_duration_seconds_count", route=ACTIONS_ROUTE, method="POST", status="200"
    )
    assert posts == sum(done.values())
    assert moved("hearts_http_request_duration_seconds_bucket", route=ACTIONS_ROUTE, le="+Inf") == posts
    assert not [s for s in after if s.name.startswith("hearts_http") and f"/{table_id}" in s.labels["route"]]


def test_refusals_are_counted_by_code_over_rest_and_graphql() -> None:
    before = scrape()
    _, key = app_create(name="refusals")
    assert client().get("/api/v1/tables").status_code == 401
    assert client("hs_nonsense").get("/api/v1/tables").status_code == 401
    table = client(key).post("/api/v1/tables", {}, format="json").json()
    stale = client(key).post(f"/api/v1/tables/{table['id']}/abandon", {}, format="json", HTTP_IF_MATCH="99")
    assert stale.status_code == 409 and stale.json()["code"] == "stale_version"
    bad = client(key).post("/api/v1/tables", {"options": {"players": 99}}, format="json")
    assert bad.status_code == 400
    gql = client(key).post("/graphql/", {"query": "{ tables("}, format="json")
    assert gql.json()["errors"][0]["extensions"]["code"] == "invalid_query"
    assert client("wrong").post("/graphql/", {"query": "{ __typename }"}, format="json").status_code == 401
    after = scrape()

    def moved(**labels: str) -> float:
        return value(after, "hearts_refusals_total", **labels) - value(
            before, "hearts_refusals_total", **labels
        )

    assert moved(code="not_authenticated", api="rest") == 1
    assert moved(code="authentication_failed", api="rest") == 1
    assert moved(code="stale_version", api="rest") == 1
    assert moved(code=bad.json()["code"], api="rest") == 1
    assert moved(code="invalid_query", api="graphql") == 1
    assert moved(code="authentication_failed", api="graphql") == 1


def test_a_turn_clock_running_out_is_counted() -> None:
    _, key = app_create(name="clocks")
    tokens = [
        client(key).post("/api/v1/players", {"name": f"p{i}"}, format="json").json()["token"]
        for i in range(3)
    ]
    table_id = client(key).post("/api/v1/tables", {"options": {"players": 3}}, format="json").json()["id"]
    for token in tokens:
        client(token).post(f"/api/v1/tables/{table_id}/join", {}, format="json")
    table = Table.objects.get(pk=table_id)
    assert table.status == Table.Status.PASSING and table.deadline is not None
    before = scrape()
    services.clock_expired(table_id=table_id, now=table.deadline + dt.timedelta(seconds=1))
    after = scrape()
    assert (
        value(after, "hearts_turn_timeouts_total", kind="pass")
        - value(before, "hearts_turn_timeouts_total", kind="pass")
        == 3
    )
    assert (
        value(after, "hearts_actions_applied_total", kind="pass", actor="timeout")
        - value(before, "hearts_actions_applied_total", kind="pass", actor="timeout")
        == 3
    )


def test_task_queue_latency_is_measured_from_publication_or_eta() -> None:
    published: list[dict[str, Any]] = []

    def capture(headers: dict[str, Any] | None = None, **_: Any) -> None:
        published.append(dict(headers or {}))

    from celery import signals

    signals.before_task_publish.connect(capture)
    try:  # a real publication (to the in-memory broker of the test settings) is stamped
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "task_always_eager has no effect on send_task": wanted here
            celery_app.send_task("games.observability_probe", args=(1,))
    finally:
        signals.before_task_publish.disconnect(capture)
    assert published and published[-1][observability.PUBLISHED_HEADER] == pytest.approx(time.time(), abs=5)

    def run(name: str, **request: Any) -> None:
        task = SimpleNamespace(name=name, request=SimpleNamespace(**request))
        observability.task_started(task_id=f"{name}-id", task=task, args=(5, 1), kwargs={})
        observability.task_finished(task_id=f"{name}-id", task=task, state="SUCCESS")

    before = scrape()
    run("games.play_bots", **{observability.PUBLISHED_HEADER: time.time() - 2.0})
    eta = (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=0.5)).isoformat()
    run("games.enforce_clock", **{observability.PUBLISHED_HEADER: time.time() - 30.0, "eta": eta})
    run("games.sweep")  # eager: no stamp, no queue latency, a duration all the same
    after = scrape()

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("hearts_task_queue_latency_seconds_sum", task="games.play_bots") == pytest.approx(
        2.0, abs=0.5
    )
    assert moved("hearts_task_queue_latency_seconds_sum", task="games.enforce_clock") == pytest.approx(
        0.5, abs=0.4
    )
    assert moved("hearts_task_queue_latency_seconds_count", task="games.sweep") == 0
    assert moved("hearts_task_duration_seconds_count", task="games.sweep", state="SUCCESS") == 1
    assert observability.current() == {}  # the task's context was restored


def test_task_log_lines_carry_task_and_table_ids(logs: Lines) -> None:
    task = SimpleNamespace(name="games.enforce_clock", request=SimpleNamespace())
    observability.task_started(task_id="t-1", task=task, args=(42, 3), kwargs={})
    logging.getLogger("games.tasks").info("inside")
    observability.task_finished(task_id="t-1", task=task, state="SUCCESS")
    logging.getLogger("games.tasks").info("outside")
    inside, outside = logs.parsed()[-2:]
    assert (inside["task_id"], inside["task"], inside["table_id"]) == ("t-1", "games.enforce_clock", 42)
    assert "task_id" not in outside and "table_id" not in outside


def test_metrics_are_guarded_in_production(settings: Any) -> None:
    settings.PRODUCTION = True
    settings.METRICS_TOKEN = ""
    assert client().get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client().get("/metrics", REMOTE_ADDR="8.8.8.8").status_code == 403
    proxied = client().get("/metrics", REMOTE_ADDR="10.1.2.3", HTTP_X_FORWARDED_FOR="8.8.8.8")
    assert proxied.status_code == 403 and proxied.json()["code"] == "metrics_forbidden"
    settings.METRICS_TOKEN = "m-" + "x" * 30
    assert client().get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 403
    assert client("wrong").get("/metrics").status_code == 403
    assert client(settings.METRICS_TOKEN).get("/metrics", REMOTE_ADDR="8.8.8.8").status_code == 200
    settings.PRODUCTION = False
    settings.METRICS_TOKEN = ""
    assert client().get("/metrics", REMOTE_ADDR="8.8.8.8").status_code == 200


_CHILD = """
import django, os, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "hearts_service.settings"
django.setup()
from games.infra import metrics
if sys.argv[1] == "count":
    metrics.refused("probe_code")
else:
    from prometheus_client import generate_latest
    sys.stdout.write(generate_latest(metrics.registry()).decode())
"""


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
@pytest.mark.django_db(transaction=False)
def test_multiprocess_mode_adds_up_every_process(tmp_path: Path) -> None:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", _CHILD, "count"], env=env, cwd=ROOT, check=True)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, "show"], env=env, cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    samples = [s for f in text_string_to_metric_families(out) for s in f.samples]
    assert value(samples, "hearts_refusals_total", code="probe_code") == 2


def test_rate_limited_answers_are_counted(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    from games.infra import ratelimit

    settings.RATE_LIMITS_ENABLED = True

    def over(principal: Any) -> None:
        raise ratelimit.RateLimited("token", ratelimit.Rate.parse("1/minute"), 30)

    monkeypatch.setattr(ratelimit, "check_principal", over)
    _, key = app_create(name="limited")
    before = scrape()
    assert client(key).get("/api/v1/tables").status_code == 429
    assert client(key).post("/graphql/", {"query": "{ __typename }"}, format="json").status_code == 429
    after = scrape()
    for api in ("rest", "graphql"):
        labels = {"code": "rate_limited", "api": api}
        assert (
            value(after, "hearts_refusals_total", **labels) - value(before, "hearts_refusals_total", **labels)
            == 1
        )


def test_lines_logged_while_a_stream_is_produced_carry_the_request_ids(logs: Lines) -> None:
    """An event stream's body is produced after the middleware returned: each step runs in the
    request's context all the same (async and sync bodies), and closing the body closes the view's."""
    import asyncio

    from django.http import StreamingHttpResponse

    closed: list[str] = []
    log = logging.getLogger("games.api.streams")

    async def events() -> Any:
        try:
            for n in range(2):
                log.info("event %d", n)
                yield f"data: {n}\n\n"
                await asyncio.sleep(0)
        finally:
            log.info("closed")
            closed.append("async")

    def lines() -> Any:
        try:
            log.info("line")
            yield "x\n"
        finally:
            closed.append("sync")

    async def async_view(request: Any) -> StreamingHttpResponse:
        return StreamingHttpResponse(events())

    middleware = observability.RequestContextMiddleware(async_view)
    request = APIClient().get("/api/v1/tables/77/stream", HTTP_X_REQUEST_ID="stream-1").wsgi_request

    async def consume() -> list[bytes]:
        response = await middleware(request)
        assert observability.current() == {}  # the middleware restored the context ...
        return [chunk async for chunk in response]

    assert asyncio.run(consume()) == [b"data: 0\n\n", b"data: 1\n\n"]
    sync = observability.RequestContextMiddleware(lambda request: StreamingHttpResponse(lines()))
    response = sync(request)
    assert b"".join(response) == b"x\n" and closed == ["async", "sync"]
    streamed = [p for p in logs.parsed() if p["logger"] == "games.api.streams"]
    assert [p["message"] for p in streamed] == ["event 0", "event 1", "closed", "line"]
    assert all(p["request_id"] == "stream-1" and p["table_id"] == 77 for p in streamed)


def test_probes_and_scrapes_answer_whatever_host_they_are_sent_and_other_paths_do_not(settings: Any) -> None:
    """Prometheus calls a pod by its address (no Host header of its choosing); the API still
    refuses a host outside ALLOWED_HOSTS."""
    settings.ALLOWED_HOSTS = [".example.com"]
    pod = {"HTTP_HOST": "10.1.2.3:8000", "REMOTE_ADDR": "10.1.2.3"}
    for path in ("/healthz", "/readyz", "/metrics"):
        assert client().get(path, **pod).status_code == 200, path
    refused = client().get("/api/v1/rules", **pod)
    assert refused.status_code == 400 and refused.json()["code"] == "malformed_request"


def test_the_pools_reconnection_failures_are_logged_once_in_five_seconds_with_a_count(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the database is down each pool tries to reconnect every 0.05 s and logs every failure:
    the `repeats` filter on psycopg.pool passes one a 5 s, saying how many it held back."""
    from hearts_service import observability

    now = [1000.0]
    monkeypatch.setattr(observability.time, "monotonic", lambda: now[0])
    pool_log = logging.getLogger("psycopg.pool")
    assert any(isinstance(f, observability.Repeats) for f in pool_log.filters)  # settings.LOGGING
    with caplog.at_level(logging.WARNING, logger="psycopg.pool"):
        for _ in range(100):  # 5 s of attempts
            pool_log.warning("error connecting in %r: %s", "pool-1", "connection refused")
            now[0] += 0.05
        pool_log.warning("discarding closed connection: %s", "<conn>")  # another message: its own count
        now[0] += 0.01  # (past the 5 s, whatever the float sum says)
        pool_log.warning("error connecting in %r: %s", "pool-1", "connection refused")
    lines = [r.getMessage() for r in caplog.records if r.name == "psycopg.pool"]
    assert lines == [
        "error connecting in 'pool-1': connection refused",
        "discarding closed connection: <conn>",
        "error connecting in 'pool-1': connection refused (99 more like it in the last 5 s)",
    ]
