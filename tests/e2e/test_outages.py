"""A database that does not answer: every adapter answers 503 `service_unavailable`, never a 500."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.db import OperationalError
from rest_framework.test import APIClient

from games import reads

pytestmark = pytest.mark.django_db


def _down(*_: Any, **__: Any) -> Any:
    raise OperationalError("connection failed: server closed the connection unexpectedly")


def _guest() -> APIClient:
    token = APIClient().post("/api/v1/guests", {"name": "g"}, format="json").json()["token"]
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return c


def test_rest_answers_503_with_a_code_while_the_database_is_down(monkeypatch: pytest.MonkeyPatch) -> None:
    c = _guest()
    table = c.post("/api/v1/tables", {}, format="json").json()["id"]
    monkeypatch.setattr(reads, "table_for", _down)
    r = c.get(f"/api/v1/tables/{table}")
    assert r.status_code == 503 and r["Retry-After"] == "2"
    assert r.json()["code"] == "service_unavailable"
    assert "server closed" not in r.content.decode()  # the driver's message stays in the log


def test_graphql_answers_503_with_a_code_while_the_database_is_down(monkeypatch: pytest.MonkeyPatch) -> None:
    c = _guest()
    table = c.post("/api/v1/tables", {}, format="json").json()["id"]
    monkeypatch.setattr(reads, "table_for", _down)
    r = c.post("/graphql/", {"query": f"{{ table(id: {table}) {{ id version }} }}"}, format="json")
    assert r.status_code == 503 and r["Retry-After"] == "2"
    assert [e["extensions"]["code"] for e in r.json()["errors"]] == ["service_unavailable"]


def test_a_request_that_cannot_even_authenticate_gets_503(monkeypatch: pytest.MonkeyPatch) -> None:
    from games import accounts

    c = _guest()
    monkeypatch.setattr(accounts, "authenticate", _down)
    for path in ["/api/v1/tables", "/graphql/"]:
        r = c.post(path, {"query": "{ me { id } }"} if "graphql" in path else {}, format="json")
        assert r.status_code == 503, (path, r.content)
        body = r.json()
        code = body["errors"][0]["extensions"]["code"] if "errors" in body else body["code"]
        assert code == "service_unavailable"


@pytest.mark.needs_postgres
@pytest.mark.django_db(transaction=True)
def test_after_a_restart_the_first_failure_renews_every_broken_idle_connection_of_the_pool() -> None:
    """A database restart breaks every idle pooled connection; without a check each would fail one
    more request or task when handed out. The first failure tests them all (outages.renew_connections)."""
    import psycopg
    from django.db import connection

    from hearts_service import outages

    pool = connection.pool
    assert pool is not None  # the production settings: Django's psycopg pool
    pool.wait()
    held = [pool.getconn() for _ in range(3)]  # three connections, then back to the pool: idle
    pids = [c.info.backend_pid for c in held]
    for c in held:
        pool.putconn(c)
    # What a restart does to them, from a connection of its own (one of the pool's, such as Django's
    # own connection here, could be one of the three: it would terminate itself).
    dsn = connection.get_connection_params()
    params = {k: v for k, v in dsn.items() if k in ("dbname", "user", "host", "port", "password")}
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", [pids])
    outages._renewed[0] = 0.0  # no renewal lately in this process
    assert outages.renew_connections(OperationalError("terminating connection due to administrator command"))
    for _ in range(3):  # each connection handed out now works at once
        with pool.connection(timeout=5) as c:
            assert c.execute("SELECT 1").fetchone() == (1,)
    assert pool.get_stats().get("connections_lost", 0) >= 1
    assert not outages.renew_connections(OperationalError("again"))  # at most once per RENEW_EVERY
    assert not outages.renew_connections(ValueError("not the database"))


@pytest.mark.needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_sweep_waits_half_a_period_for_a_connection_not_the_pools_whole_timeout() -> None:
    """While the database is down the pool hands out no connection: the sweep (games.tasks) gives up
    after half a period instead of holding one of the clock lane's processes for DB_POOL_TIMEOUT.
    Here the pool has none to give because every one is held, which is the same wait."""
    from django.db import connection

    from hearts_service import outages

    connection.close()  # Django's own connection back to the pool
    connection.close_pool()  # a new pool, as a new worker process has it: not open until first used
    pool = connection.pool
    assert pool is not None and pool.closed
    assert outages.connection_within(0.2)  # opened; one comes at once, and goes back
    held = [pool.getconn() for _ in range(pool.max_size)]
    try:
        started = time.monotonic()
        assert not outages.connection_within(0.2)
        assert 0.15 <= time.monotonic() - started < 2.0  # not DB_POOL_TIMEOUT
    finally:
        for c in held:
            pool.putconn(c)
    assert outages.connection_within(0.2)


def test_the_pool_tries_to_reconnect_every_twentieth_of_a_second_not_after_a_doubling_wait() -> None:
    """psycopg_pool waits 1, 2, 4, 8 s ... between its attempts to replace a connection it could not
    make; here every RECONNECT_EVERY (0.05 s, its own 10% jitter), so that a pool that lost its
    connections in a restart has new ones within a twentieth of a second of the database's return."""
    from hearts_service import outages

    attempt = outages.reconnection_attempt()(timeout=60.0)
    delays = []
    for _ in range(8):
        attempt.update_delay(time.monotonic())
        delays.append(attempt.delay)
    assert outages.RECONNECT_EVERY == 0.05
    assert all(0.04 <= delay <= 0.06 for delay in delays), delays


@pytest.mark.needs_postgres
@pytest.mark.django_db(transaction=True)
def test_statements_prepared_before_a_migration_changed_a_column_answer_503_then_heal() -> None:
    """psycopg prepares the statements a connection runs again and again (settings'
    DB_PREPARED_STATEMENTS). A migration that changes the type of a column they read, run while the
    process serves, makes PostgreSQL refuse them (`cached plan must not change result type`): such a
    request is a 503 to retry, never a 500, and the connection prepares the statement anew."""
    import psycopg
    from django.db import connection

    c = _guest()
    table = c.post("/api/v1/tables", {}, format="json").json()["id"]
    for _ in range(15):  # every pooled connection the requests get runs the table's read 5+ times
        assert c.get(f"/api/v1/tables/{table}").status_code == 200
    dsn = connection.get_connection_params()
    column = 'ALTER TABLE games_table ALTER COLUMN "hand_number" TYPE {}'
    params = {k: v for k, v in dsn.items() if k in ("dbname", "user", "host", "port", "password")}
    try:
        with psycopg.connect(**params, autocommit=True) as other:  # the migration, elsewhere
            other.execute(column.format("bigint"))
        statuses = [c.get(f"/api/v1/tables/{table}").status_code for _ in range(15)]
        assert set(statuses) <= {200, 503}, statuses
        assert 503 in statuses and statuses[-5:] == [200] * 5, statuses
    finally:
        with psycopg.connect(**params, autocommit=True) as other:
            other.execute(column.format("integer"))
        connection.close_pool()  # the other tests' connections: none prepared against the bigint
