"""Prometheus metrics of the service (names, labels and meaning: docs/operations.md), the hooks the
service calls to move them, and the /metrics view.

With PROMETHEUS_MULTIPROC_DIR set (before the process starts), prometheus_client keeps every value
in files in that directory, shared by all the processes of one machine (uvicorn workers, Celery
pool processes), and /metrics adds them up; without it each process exposes its own values."""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
    start_http_server,
)

from games import messages

log = logging.getLogger(__name__)

_FAST = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_QUEUE = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)

REQUEST_SECONDS = Histogram(
    "hearts_http_request_duration_seconds",
    "Time to answer an HTTP request (to the response object: a stream's headers), by URL pattern",
    ["route", "method", "status"],
    buckets=_FAST,
)
ACTIONS = Counter(
    "hearts_actions_applied",  # exposed as hearts_actions_applied_total
    "Game actions applied (committed), by kind (pass, play, moon) and actor (human, bot, timeout)",
    ["kind", "actor"],
)
REFUSALS = Counter(
    "hearts_refusals",
    "Requests refused with an error code, by code and API (rest, graphql)",
    ["code", "api"],
)
QUOTA_REFUSALS = Counter(
    "hearts_quota_refusals",  # exposed as hearts_quota_refusals_total
    "Requests refused with quota_exceeded, by quota (streams_per_token, open_tables...; games/quotas.py)",
    ["quota"],
)
TIMEOUTS = Counter(
    "hearts_turn_timeouts",
    "Turn clocks that ran out (a turn_timed_out event: the server acted for a late seat), by kind",
    ["kind"],
)
BROUGHT_BOT_MOVES = Counter(
    "hearts_brought_bot_moves",
    "Moves owed by bots apps brought (docs/bots-byo.md), by outcome: answered, or the reason the "
    "basic bot moved instead (timeout, failed, bad_answer, illegal, disabled)",
    ["outcome"],
)
PUSHES = Counter(
    "hearts_pushes",
    "Push notifications by provider (fcm, apns, webpush) and outcome: sent, retry, dead (the device "
    "was pruned), failed, cancelled (the seat acted or its player was watching), in_doubt",
    ["provider", "outcome"],
)
PUSH_LAG_SECONDS = Histogram(
    "hearts_push_lag_seconds",
    "Time from when a notification was due (its commit plus the grace) to its provider request, by provider",
    ["provider"],
    buckets=_QUEUE,
)
BOT_SECONDS = Histogram(
    "hearts_bot_decision_seconds",
    "Time a bot (or the basic bot acting for a late or away seat) took to choose a move, by level",
    ["level"],
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0),
)
TASK_QUEUE_SECONDS = Histogram(
    "hearts_task_queue_latency_seconds",
    "Time from a task's publication (or its ETA, when later) to its start in a worker, by task",
    ["task"],
    buckets=_QUEUE,
)
TASK_SECONDS = Histogram(
    "hearts_task_duration_seconds",
    "Time a Celery task ran, by task and final state (SUCCESS, FAILURE, RETRY, ...)",
    ["task", "state"],
    buckets=_FAST,
)
STREAM_READS = Counter(
    "hearts_stream_reads",  # exposed as hearts_stream_reads_total
    "Database reads by the event streams, by kind: shared (one table change read once for every "
    "viewer of the table in the process), poll (one safety check of every followed table at once), "
    "viewer (one stream's own read: opening, resuming from far back, finding a player's new table)",
    ["kind"],
)

SOCKETS = Counter(
    "hearts_graphql_sockets",  # exposed as hearts_graphql_sockets_total
    "GraphQL WebSockets by protocol and event (opened, closed): open now = opened - closed",
    ["protocol", "event"],
)
SUBSCRIPTIONS = Counter(
    "hearts_graphql_subscriptions",  # exposed as hearts_graphql_subscriptions_total
    "GraphQL subscriptions by event (opened, closed): open now = opened - closed",
    ["event"],
)

BOT_LANE_YIELDS = Counter(
    "hearts_bot_lane_yields",  # exposed as hearts_bot_lane_yields_total
    "Bot-lane tasks that waited before playing because people's work was queueing (back pressure)",
)
BOT_LANE_YIELD_SECONDS = Counter(
    "hearts_bot_lane_yield_seconds",  # exposed as hearts_bot_lane_yield_seconds_total
    "Seconds bot-lane tasks waited for people's work (back pressure)",
)
WEB_QUEUED = Counter(
    "hearts_web_requests_queued",  # exposed as hearts_web_requests_queued_total
    "Requests that waited for one of the web process's slots (WEB_MAX_CONCURRENT_REQUESTS) before running",
)
LOOP_LAG_SECONDS = Histogram(
    "hearts_web_loop_lag_seconds",
    "How late a web process's event loop (streams, sockets, every request's start and answer) woke "
    "a timer, sampled every LOOP_SAMPLE_SECONDS: a busy or starved loop delays everything it serves",
    buckets=_FAST,
)
CLOCK_LAG_SECONDS = Histogram(
    "hearts_clock_lag_seconds",
    "Time from a turn clock's deadline to the server acting for the late seats (the clock lane, the "
    "sweep, or a reader finding the clock run out)",
    buckets=_QUEUE,
)
WEBHOOK_ATTEMPTS = Counter(
    "hearts_webhook_attempts",  # exposed as hearts_webhook_attempts_total
    "Webhook delivery attempts by outcome: succeeded, retry (failed, tried again later), failed (failed "
    "for good: no attempt left), disabled (not sent: the app disabled the endpoint)",
    ["outcome"],
)
STREAMS_OPEN = Gauge(
    "hearts_streams_open",
    "Event streams open now (SSE, NDJSON and GraphQL subscriptions), by kind (table, player)",
    ["kind"],
    multiprocess_mode="livesum",  # the processes alive now, added up
)

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


# -- hooks --------------------------------------------------------------------------------


def request_done(route: str, method: str, status: int, seconds: float) -> None:
    method = method if method in _METHODS else "OTHER"  # labels stay a bounded set
    REQUEST_SECONDS.labels(route, method, str(status)).observe(seconds)


def action_applied(kind: str, actor: str) -> None:
    """One action appended to a table's log; counted when its transaction commits."""
    transaction.on_commit(ACTIONS.labels(str(kind), actor).inc)


def timeout(kind: str) -> None:
    """A seat's clock ran out and the server acted for it; counted when the move commits."""
    transaction.on_commit(TIMEOUTS.labels(str(kind)).inc)


def pushed(provider: str, outcome: str) -> None:
    PUSHES.labels(provider, outcome).inc()


def push_lag(provider: str, seconds: float) -> None:
    PUSH_LAG_SECONDS.labels(provider).observe(max(0.0, seconds))


def brought_bot_move(outcome: str) -> None:
    """A brought bot's move: answered, or fallen back for a reason; counted when the move commits."""
    transaction.on_commit(BROUGHT_BOT_MOVES.labels(outcome).inc)


def bot_lane_yielded(seconds: float) -> None:
    BOT_LANE_YIELDS.inc()
    BOT_LANE_YIELD_SECONDS.inc(seconds)


def web_request_queued() -> None:
    WEB_QUEUED.inc()


LOOP_SAMPLE_SECONDS = 0.25


async def watch_loop() -> None:
    """Run in a web process's event loop: how late each LOOP_SAMPLE_SECONDS sleep wakes, for ever."""
    import asyncio

    loop = asyncio.get_running_loop()
    while True:
        slept = loop.time()
        await asyncio.sleep(LOOP_SAMPLE_SECONDS)
        LOOP_LAG_SECONDS.observe(max(0.0, loop.time() - slept - LOOP_SAMPLE_SECONDS))


def clock_late(seconds: float) -> None:
    """The server acted for a seat whose clock ran out `seconds` ago; observed when the move commits."""
    transaction.on_commit(lambda: CLOCK_LAG_SECONDS.observe(max(0.0, seconds)))


def webhook_attempted(outcome: str) -> None:
    WEBHOOK_ATTEMPTS.labels(outcome).inc()


def stream_opened(kind: str) -> None:
    STREAMS_OPEN.labels(kind).inc()


def stream_closed(kind: str) -> None:
    STREAMS_OPEN.labels(kind).dec()


def refused(code: str, api: str = "rest") -> None:
    REFUSALS.labels(code, api).inc()


def quota_refused(quota: str) -> None:
    QUOTA_REFUSALS.labels(quota).inc()


@contextmanager
def bot_decision(level: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        BOT_SECONDS.labels(level).observe(time.perf_counter() - started)


def stream_read(kind: str) -> None:
    """An event stream read the database (kind: shared, poll or viewer), or took a change from its
    wake-up instead of a shared read (kind: carried)."""
    STREAM_READS.labels(kind).inc()


def socket_opened(protocol: str) -> None:
    SOCKETS.labels(protocol, "opened").inc()


def socket_closed(protocol: str) -> None:
    SOCKETS.labels(protocol, "closed").inc()


def subscription_opened() -> None:
    SUBSCRIPTIONS.labels("opened").inc()


def subscription_closed() -> None:
    SUBSCRIPTIONS.labels("closed").inc()


def task_queued_for(task: str, seconds: float) -> None:
    TASK_QUEUE_SECONDS.labels(task).observe(max(seconds, 0.0))  # clocks of two hosts may disagree


def task_ran(task: str, state: str, seconds: float) -> None:
    TASK_SECONDS.labels(task, state or "UNKNOWN").observe(seconds)


# -- exposition ---------------------------------------------------------------------------


def multiprocess_dir() -> str:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")


def registry() -> CollectorRegistry:
    """What to expose: every process's values from the shared directory in multiprocess mode,
    else this process's."""
    if multiprocess_dir():
        collected = CollectorRegistry()
        multiprocess.MultiProcessCollector(collected)  # type: ignore[no-untyped-call]
        return collected
    return REGISTRY


def _allowed(request: HttpRequest) -> bool:
    """Open in development. In production, with METRICS_TOKEN set, only `Authorization: Bearer <it>`;
    without it, only direct requests from a private or loopback address (none that came through
    a proxy, which would make every client look private)."""
    if not settings.PRODUCTION:
        return True
    token = getattr(settings, "METRICS_TOKEN", "")
    if token:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())
    if "X-Forwarded-For" in request.headers or "Forwarded" in request.headers:
        return False
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR") or "")
    except ValueError:
        return False
    return address.is_private or address.is_loopback


def metrics_view(request: HttpRequest, scraped: CollectorRegistry | None = None) -> HttpResponse:
    """GET /metrics in the Prometheus text format (see `_allowed` for who may read it), followed by
    `scraped`: collectors that look at the service's dependencies at each scrape (the URLconf
    passes hearts_service.health's: the database, Redis and the lanes' queues)."""
    if not _allowed(request):
        refused("metrics_forbidden", "metrics")
        return JsonResponse(
            messages.body("metrics_forbidden", "metrics need the metrics token or a private address"),
            status=403,
        )
    body = generate_latest(registry())
    if scraped is not None:
        body += generate_latest(scraped)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)


def start_exporter(port: int) -> None:
    """An HTTP exporter inside a Celery worker (CELERY_METRICS_PORT). With the prefork pool the
    tasks run in child processes: set PROMETHEUS_MULTIPROC_DIR so this one exporter sees them."""
    start_http_server(port, registry=registry())
    log.info("metrics exporter on port %d%s", port, " (multiprocess)" if multiprocess_dir() else "")
