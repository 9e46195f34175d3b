"""A database that does not answer (down, restarting, pool exhausted): a 503 with a code, never a 500."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import InterfaceError, NotSupportedError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

from games import messages
from games.errors import Code

log = logging.getLogger(__name__)
RETRY_AFTER_SECONDS = 2
DETAIL = "the database is not answering; retry shortly (nothing was changed by this request)"
UNAVAILABLE = (OperationalError, InterfaceError)


def unavailable(exception: BaseException) -> bool:
    """Whether `exception` says the database cannot answer this now (a 503 and a retry, never a
    500): unreachable (UNAVAILABLE), or a statement psycopg prepared on this connection before a
    migration changed the type of a column it reads (`stale_plan`)."""
    return isinstance(exception, UNAVAILABLE) or stale_plan(exception)


def stale_plan(exception: BaseException) -> bool:
    """PostgreSQL's 0A000 `cached plan must not change result type`: a statement prepared on the
    connection (settings' DB_PREPARED_STATEMENTS) reads a column whose type a migration changed
    since. It fails on every run until the connection prepares it anew (`renew_connections`)."""
    cause = exception.__cause__
    return (
        isinstance(exception, NotSupportedError)
        and getattr(cause, "sqlstate", None) == "0A000"
        and "cached plan" in str(cause)
    )


def unavailable_body(graphql: bool) -> dict[str, object]:
    code = Code.service_unavailable.value
    detail = messages.detail(code, DETAIL)
    if graphql:
        return {"data": None, "errors": [{"message": detail, "extensions": {"code": code}}]}
    return {"code": code, "detail": detail}


# After a database restart every idle connection of a process's pool is broken, and each would fail
# one request or task when handed out (the pool does not test a connection on checkout: that would
# cost a round trip on every request). So the first failure makes the pool test its idle ones at
# once (psycopg_pool's `check`: each broken one is replaced), at most once per RENEW_EVERY seconds per
# process: the clock task retried after a restart then gets a working connection on its next try
# instead of failing again on the next broken one (bench/load.py's timeout lag at the restart).
RENEW_EVERY = 0.5
# psycopg_pool tries again to make a connection it could not make after 1 s, then 2, 4, 8 ... (its
# AttemptWithBackoff, which has no setting): after a 5-s PostgreSQL restart a process's pool could
# wait seconds more for its next attempt, and every request and task of the process with it (the
# load run's clocks due during the restart were acted on 1 to 2.7 s after the database was back,
# bench/README.md). It tries every RECONNECT_EVERY seconds instead (with the pool's own 10% jitter):
# a refused connection costs next to nothing, and the pool still gives up after its reconnect_timeout.
# Every 0.25 s until stop 56: a clock due during the restart then waited up to that for the pool's
# next attempt after the database was back, most of its lag counted from the return (295 to 416 ms
# at p99 in the load run); a request or task waiting for a connection gets the new one at once.
RECONNECT_EVERY = 0.05
_renewed = [0.0]
_renew_lock = threading.Lock()


def renew_connections(exception: BaseException) -> bool:
    """After `exception`: when it says the database is unreachable, test the pool's idle connections
    (replacing the broken ones); after a `stale_plan`, drop this connection's prepared statements
    (the other connections drop theirs at their own first failure); whether it did. Never raises."""
    if stale_plan(exception):
        return _forget_prepared()
    if not isinstance(exception, UNAVAILABLE):
        return False
    now = time.monotonic()
    with _renew_lock:
        if now - _renewed[0] < RENEW_EVERY:
            return False
        _renewed[0] = now
    from django.db import connection

    try:
        pool = getattr(connection, "pool", None)  # PostgreSQL's backend with Django's psycopg pool only
        if pool is None:
            return False
        pool.check()
    except Exception as exc:  # the database is down: the pool reconnects on its own
        log.info("pool check after %s: %s", type(exception).__name__, exc)
    return True


def broken_connection(exception: BaseException) -> bool:
    """Whether `exception` is a connection that broke (the server restarted, or cut it) rather than
    the database being out of reach (psycopg_pool's PoolTimeout: no connection could be had within
    DB_POOL_TIMEOUT): trying again at once, on another connection, may then succeed."""
    from psycopg_pool import PoolTimeout

    cause = exception.__cause__
    return isinstance(exception, UNAVAILABLE) and not isinstance(cause, PoolTimeout)


def connection_within(seconds: float) -> bool:
    """Whether this process's pool hands out a database connection within `seconds` (it may still
    be a broken one, found at its first query); True without a pool or with a connection held. For
    work that had better wait for its next turn than hold a worker for DB_POOL_TIMEOUT while the
    database is down (the sweep: games.tasks)."""
    from django.db import connection

    if connection.connection is not None:
        return True
    pool = getattr(connection, "pool", None)  # PostgreSQL's backend with Django's psycopg pool only
    if pool is None:
        return True
    from psycopg_pool import PoolTimeout

    try:
        pool.open()  # as Django's backend does before its first getconn (a no-op once open)
        held = pool.getconn(timeout=seconds)
    except PoolTimeout:
        return False
    pool.putconn(held)
    return True


def reconnection_attempt() -> Any:
    """psycopg_pool's class for a repeated connection attempt (AttemptWithBackoff; ConnectionAttempt
    before psycopg_pool 3.3)."""
    from psycopg_pool import base

    return getattr(base, "AttemptWithBackoff", None) or getattr(base, "ConnectionAttempt")  # noqa: B009


def pace_pool_reconnection() -> None:
    """Called once per process (games.apps): the pool's attempts come every RECONNECT_EVERY seconds."""
    attempt = reconnection_attempt()
    attempt.INITIAL_DELAY = RECONNECT_EVERY
    attempt.DELAY_BACKOFF = 1.0


def _forget_prepared() -> bool:
    """`DEALLOCATE ALL` on this thread's connection: psycopg forgets its prepared statements with
    the server's, and prepares them again from their next runs. In a transaction the failure
    aborted, the rollback already made psycopg forget them (and the statement is refused here)."""
    from django.db import connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("DEALLOCATE ALL")
    except Exception as exc:
        log.info("prepared statements not dropped: %s", exc)
        return False
    return True


class DatabaseUnavailable:
    """The innermost middleware: a view (REST, GraphQL, a stream opening) that fails because the
    database cannot be reached answers 503 with `service_unavailable` and Retry-After. A write
    that failed this way was rolled back (it ran in one transaction), so a retry with the same
    Idempotency-Key is safe."""

    # Sync only, like every middleware of the chain: under ASGI, Django then crosses from the event
    # loop to a thread once per request, at the top of the chain. One middleware able to run async
    # at the bottom made every one above it down to the first sync-only one run async, and Django
    # runs each of those (its own MiddlewareMixin ones: sessions, CSRF, auth, messages...) as a hop
    # to a thread and back for each of their methods: a dozen hops a request (issue 37).
    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[..., object]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> object:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not unavailable(exception):
            return None
        log.warning("database unavailable: %s %s: %s", request.method, request.path, exception)
        renew_connections(exception)
        graphql = request.path.rstrip("/") == "/graphql"
        response = JsonResponse(unavailable_body(graphql), status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
