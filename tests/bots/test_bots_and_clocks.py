"""Bots and turn clocks through the services and tasks (in process): bot-only games, one
transaction per run of bot moves, stale and duplicate tasks, timeouts, away and back, the sweep."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
from celery.exceptions import Retry
from django.db import OperationalError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from games import services, tasks
from games.engine import state_from_dict
from games.infra import notify
from games.models import Move, Player, Seat, Table
from games.services import record
from hearts_service.observability import PUBLISHED_HEADER

pytestmark = pytest.mark.django_db(transaction=True)  # on_commit hooks fire, as in production


def client(token: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return c


def guest() -> str:
    return APIClient().post("/api/v1/guests", {"name": "g"}, format="json").json()["token"]


@pytest.mark.parametrize(
    ("players", "variant", "level"), [(4, "classic", "basic"), (6, "cancellation", "random")]
)
def test_a_table_of_bots_created_through_the_api_plays_to_the_end(
    players: int, variant: str, level: str
) -> None:
    token = guest()
    r = client(token).post(
        "/api/v1/tables",
        {
            "options": {"players": players, "variant": variant, "target_score": 50},
            "bots": {str(s): level for s in range(players)},
        },
        format="json",
    )
    assert r.status_code == 201
    table = client(token).get(f"/api/v1/tables/{r.json()['id']}").json()
    assert table["status"] == "finished" and table["game"]["winners"]
    moves = Move.objects.filter(table_id=table["id"])
    assert list(moves.values_list("seq", flat=True)) == list(range(1, table["version"] + 1))


def _person_and_bots() -> tuple[int, str]:
    token = guest()
    r = client(token).post(
        "/api/v1/tables",
        {"options": {"players": 4}, "bots": {"1": "basic", "2": "basic", "3": "basic"}},
        format="json",
    )
    client(token).post(f"/api/v1/tables/{r.json()['id']}/join", {}, format="json")
    return r.json()["id"], token


def test_bots_pass_at_once_and_play_after_a_person_each_move_logged() -> None:
    table_id, token = _person_and_bots()
    body = client(token).get(f"/api/v1/tables/{table_id}").json()
    assert body["game"]["passed"] == [False, True, True, True]  # the bots passed when the game started
    cards = body["game"]["hand"][:3]
    body = (
        client(token)
        .post(f"/api/v1/tables/{table_id}/actions", {"type": "pass", "cards": cards}, format="json")
        .json()
    )
    after = client(token).get(f"/api/v1/tables/{table_id}").json()
    # The bots played until it was the person's turn again, each play its own move.
    assert after["game"]["to_act"] == [0]
    plays = Move.objects.filter(table_id=table_id, kind="play").order_by("seq")
    assert all(m.position != 0 for m in plays) and len(plays) == after["version"] - body["version"]


def test_consecutive_bot_moves_are_one_transaction_and_stale_or_duplicate_tasks_do_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table_id, token = _person_and_bots()
    body = client(token).get(f"/api/v1/tables/{table_id}").json()
    cards = body["game"]["hand"][:3]
    client(token).post(f"/api/v1/tables/{table_id}/actions", {"type": "pass", "cards": cards}, format="json")
    queued: list[tuple[Any, ...]] = []
    monkeypatch.setattr(record, "queue_tasks", lambda *task: queued.append(task))  # hold the tasks back
    table = Table.objects.get(pk=table_id)
    while not table.bot_turn:  # the person plays until bots owe moves
        card = state_from_dict(table.state).legal_actions(0)[0].to_dict()
        services.action_submit(table_id=table_id, position=0, action=card)
        table.refresh_from_db()
    assert queued[-1][:2] == (table_id, table.version)  # the task a worker would get
    version = table.version
    out = services.bots_play(table_id=table_id, version=version)
    assert out.table is not None and out.table.version > version  # several moves, one call
    again = services.bots_play(table_id=table_id, version=version)  # the same task delivered twice
    assert again.table is None
    stale = services.bots_play(table_id=table_id, version=version - 1)
    assert stale.table is None
    assert Table.objects.get(pk=table_id).version == out.table.version


def _overdue(table_id: int) -> None:
    Table.objects.filter(pk=table_id).update(deadline=timezone.now() - dt.timedelta(seconds=1))


def test_a_passed_deadline_acts_for_the_seat_then_marks_it_away_and_the_player_comes_back() -> None:
    table_id, token = _person_and_bots()
    _overdue(table_id)
    out = services.clock_expired(table_id=table_id)  # the pass timed out
    assert out.table is not None
    timed = Move.objects.get(table_id=table_id, position=0, kind="pass")
    assert timed.events[0][0] == "turn_timed_out" and timed.events[0][1]["seat"] == 0
    assert dt.datetime.fromisoformat(timed.events[0][1]["deadline"]) < timezone.now()
    assert Player.objects.get(seats__table_id=table_id).seats.get().timeouts == 1
    table = Table.objects.get(pk=table_id)
    while table.state["turn"] != 0 and table.status != "finished":
        table.refresh_from_db()
    _overdue(table_id)
    services.clock_expired(table_id=table_id)  # the second timeout in a row: the seat is away
    body = client(token).get(f"/api/v1/tables/{table_id}").json()
    assert body["seats"][0]["away"] is True
    row = Player.objects.get(seats__table_id=table_id).seats.get()
    assert (row.timeouts, row.away) == (2, True)  # the seat's row as the table's copy of it
    events = client(token).get(f"/api/v1/tables/{table_id}/events").json()["events"]
    assert [e for e in events if e["type"] == "seat_away"] == [
        {"seq": e["seq"], "hand": 1, "type": "seat_away", "seat": 0}
        for e in events
        if e["type"] == "seat_away"
    ]
    # While away, the bot plays the seat: the table does not wait for the person.
    assert 0 not in body["game"]["to_act"] or body["status"] == "finished"
    before = client(token).get(f"/api/v1/tables/{table_id}").json()["version"]
    back = client(token).post(f"/api/v1/tables/{table_id}/back", format="json")
    assert back.status_code == 200 and back.json()["seats"][0]["away"] is False
    row.refresh_from_db()
    assert (row.timeouts, row.away) == (0, False)
    assert "seat_back" in [
        e["type"]
        for e in client(token).get(f"/api/v1/tables/{table_id}/events?after={before}").json()["events"]
    ]


def test_the_sweep_acts_on_a_clock_whose_task_was_lost() -> None:
    table_id, _ = _person_and_bots()
    version = Table.objects.get(pk=table_id).version
    _overdue(table_id)
    assert tasks.sweep() == 1  # queued a clock task again (run at once here: tasks are eager in tests)
    assert Table.objects.get(pk=table_id).version > version
    assert tasks.sweep() == 0


def test_the_sweep_leaves_a_bot_task_that_may_still_be_waiting_in_its_queue(
    redis_url: str, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past capacity a table's task waits in the people queue for longer than BOT_GRACE: the sweep
    queues it again only once the oldest task still waiting there was published after the table's
    move came due (so its own task has left the queue: taken, or lost with a worker)."""
    url = urlunsplit(urlsplit(redis_url)._replace(path="/11"))  # a database no other test uses
    broker = redis.Redis.from_url(url)
    broker.flushdb()
    settings.REDIS_URL = url
    monkeypatch.setattr(notify, "_clients", {})
    table_id, _ = _person_and_bots()
    owed = timezone.now() - dt.timedelta(seconds=5)  # a bot move owed for 5 s, its task not yet run
    Table.objects.filter(pk=table_id).update(bot_turn=True, updated_at=owed, deadline=None)
    version = Table.objects.get(pk=table_id).version
    sent: list[tuple[Any, str]] = []
    monkeypatch.setattr(tasks.play_bots, "apply_async", lambda args, queue: sent.append((args, queue)))

    def oldest_waiting(seconds_ago: float) -> None:  # a task in the queue as kombu keeps it (a list)
        broker.delete("people")
        broker.lpush("people", json.dumps({"headers": {PUBLISHED_HEADER: time.time() - seconds_ago}}))

    oldest_waiting(10)  # published before the move came due: the table's task may be behind it
    assert tasks.sweep() == 0 and sent == []
    oldest_waiting(1)  # published 4 s after: the table's task has left the queue
    assert tasks.sweep() == 1 and sent == [((table_id, version), "people")]
    assert tasks.sweep() == 0  # once per version and REQUEUE_SECONDS
    broker.delete("people", f"hearts:requeued:{table_id}:{version}")
    assert tasks.sweep() == 1  # an empty queue holds no task: queued again
    broker.flushdb()


def test_reading_a_table_whose_clock_ran_out_acts_first() -> None:
    table_id, token = _person_and_bots()
    _overdue(table_id)
    body = client(token).get(f"/api/v1/tables/{table_id}").json()
    assert body["game"]["phase"] == "playing"  # the person's pass was made for them, then the bots went on
    assert Move.objects.filter(table_id=table_id, position=0, kind="pass").exists()


def test_a_clock_task_for_an_old_version_does_nothing() -> None:
    table_id, _ = _person_and_bots()
    table = Table.objects.get(pk=table_id)
    _overdue(table_id)
    assert services.clock_expired(table_id=table_id, version=table.version - 1).table is None
    assert tasks.enforce_clock(table_id, table.version) >= 1


def test_a_clock_task_retries_every_tenth_of_a_second_through_an_outage_longer_than_other_tasks_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While the database is down a clock's task is retried at a steady 0.1 s, not with the others'
    doubling backoff (1, 2, 4, 8 s ... with jitter, 8 times at most): a deadline that passed during
    a restart is acted on soon after the database's return, and its 20th retry (and its 299th, 30 s
    into an outage) is still asked for where every other task's 9th is refused."""
    table_id, _ = _person_and_bots()
    table = Table.objects.get(pk=table_id)
    _overdue(table_id)

    def down(**_: Any) -> Any:
        raise OperationalError("connection refused")

    with monkeypatch.context() as patched:
        patched.setattr(services, "clock_expired", down)
        patched.setattr(services, "bots_play", down)
        for retries in (0, 20, 299):  # (eager runs propagate: the retry is raised)
            with pytest.raises(Retry) as asked:
                tasks.enforce_clock.apply((table_id, table.version), retries=retries)
            assert asked.value.when == tasks.CLOCK_RETRY_SECONDS == 0.1
        with pytest.raises(Retry) as asked:
            tasks.play_bots.apply((table_id, table.version), retries=0)
        assert isinstance(asked.value.when, int | float) and asked.value.when <= 1  # 1 s at most, doubling
        with pytest.raises(OperationalError):  # out of retries
            tasks.play_bots.apply((table_id, table.version), retries=8)
    assert tasks.enforce_clock.apply((table_id, table.version)).get() == 1  # the database is back
    assert Move.objects.filter(table_id=table_id, position=0, kind="pass").exists()


def test_a_clock_whose_connection_broke_is_tried_again_at_once_on_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a PostgreSQL restart each idle pooled connection fails the first query given to it: the
    clock's task gives it back and tries again at once (a retry through the queue waited its turn in
    the lane); a database out of reach (the pool's timeout) is left to Celery's steady retry."""
    from psycopg_pool import PoolTimeout

    table_id, _ = _person_and_bots()
    table = Table.objects.get(pk=table_id)
    _overdue(table_id)
    real, calls = services.clock_expired, []

    def broke_once(**kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("terminating connection due to administrator command")
        return real(**kwargs)

    def unreachable(**_: Any) -> Any:
        calls.append(1)
        try:
            raise PoolTimeout("couldn't get a connection after 5.00 sec")
        except PoolTimeout as exc:
            raise OperationalError(str(exc)) from exc

    with monkeypatch.context() as patched:
        patched.setattr(services, "clock_expired", unreachable)
        with pytest.raises(Retry):
            tasks.enforce_clock.apply((table_id, table.version), retries=0)
        assert len(calls) == 1  # no attempt at once: the next waits CLOCK_RETRY_SECONDS
        calls.clear()
        patched.setattr(services, "clock_expired", broke_once)
        assert tasks.enforce_clock.apply((table_id, table.version)).get() == 1
        assert len(calls) == 2
    assert Move.objects.filter(table_id=table_id, position=0, kind="pass").exists()


def test_the_first_clock_through_after_an_outage_acts_on_the_others_that_came_due_meanwhile(
    redis_url: str, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clock task that was retried (the database away), found its connection broken or waited for
    one acts, once through, on every other overdue clock too, earliest first, instead of leaving
    each to its own retry's turn in the lane; a table another task claimed is left to it, and a
    clock not yet due is never touched."""
    url = urlunsplit(urlsplit(redis_url)._replace(path="/12"))  # a database no other test uses
    broker = redis.Redis.from_url(url)
    broker.flushdb()
    settings.REDIS_URL = url
    monkeypatch.setattr(notify, "_clients", {})
    first, second, third, later = (_person_and_bots()[0] for _ in range(4))
    for table_id in (first, second, third):
        _overdue(table_id)
    Table.objects.filter(pk=later).update(deadline=timezone.now() + dt.timedelta(minutes=5))
    versions = dict(Table.objects.values_list("pk", "version"))

    def passed(table_id: int) -> bool:
        return Move.objects.filter(table_id=table_id, position=0, kind="pass").exists()

    assert tasks.enforce_clock.apply((first, versions[first])).get() == 1  # no outage: this clock alone
    assert passed(first) and not passed(second) and not passed(third)
    claimed = tasks.CAUGHT_UP.format(table=third, version=versions[third])
    broker.set(claimed, "1", px=5000)  # another task is acting on the third
    assert tasks.enforce_clock.apply((second, versions[second]), retries=3).get() == 1
    assert passed(second) and not passed(third)
    broker.delete(claimed)
    _overdue(second)  # the person's next clock too, come due meanwhile
    versions = dict(Table.objects.values_list("pk", "version"))
    assert tasks.enforce_clock.apply((first, versions[first] - 1), retries=3).get() == 0  # moved on, yet
    assert passed(third) and Table.objects.get(pk=second).version > versions[second]  # it caught up
    assert not passed(later)
    assert tasks.enforce_clock.apply((third, versions[third]), retries=1).get() == 0  # done already
    _overdue(first)  # a clock whose task waited for its connection (the pool, the database away)
    _overdue(third)
    real = services.clock_expired
    versions = dict(Table.objects.values_list("pk", "version"))

    def held_up(**kwargs: Any) -> Any:
        if kwargs["table_id"] == first:
            time.sleep(tasks.CLOCK_GRACE.total_seconds() + 0.1)
        return real(**kwargs)

    monkeypatch.setattr(services, "clock_expired", held_up)
    assert tasks.enforce_clock.apply((first, versions[first])).get() == 1  # first attempt, no retry
    assert Table.objects.get(pk=third).version > versions[third]  # it caught up too
    broker.flushdb()


@contextlib.contextmanager
def _held(table_id: int) -> Iterator[None]:
    """The table's row locked by another transaction (a thread's) while the block runs."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                list(Table.objects.select_for_update().filter(pk=table_id))
                holding.set()
                release.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        yield
    finally:
        release.set()
        holder.join()


@pytest.mark.needs_postgres  # SQLite has no row lock to skip: its writers take turns
def test_the_catch_up_leaves_a_table_another_transaction_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """After an outage the first clock through acts on the other clocks that came due, but not on
    a table another transaction holds (its own clock task, a reader acting for the late seat, the
    person's move): waiting on that row would hold up every clock behind it, for a clock the holder
    is acting on and the table's own task still comes for (bench/README.md, stop 60)."""
    monkeypatch.setattr(tasks, "_claimed", lambda due: due)  # the claims are tested above
    busy, free = (_person_and_bots()[0] for _ in range(2))
    _overdue(busy)
    _overdue(free)
    with _held(busy):
        started = time.monotonic()
        assert tasks.catch_up(done=0) == 1  # the free table only
        assert time.monotonic() - started < 5  # it never waited for the held row
        timed_out = Move.objects.filter(position=0, kind="pass")
        assert list(timed_out.values_list("table_id", flat=True)) == [free]
    version = Table.objects.get(pk=busy).version
    assert services.clock_expired(table_id=busy, version=version - 1, wait=False).table is None  # moved on
    assert services.clock_expired(table_id=busy, version=version, wait=False).table is not None  # acted on
    assert timed_out.filter(table_id=busy).exists()


@pytest.mark.needs_postgres  # SQLite has no row lock to skip: its writers take turns
def test_the_catch_up_acts_on_its_tables_in_one_transaction_and_one_lock_statement() -> None:
    """services.clocks_expired, the catch-up's step: the overdue tables still at their version that
    no other transaction holds are locked in one statement and acted on in one transaction (each
    with one write statement, its late seats' rows in it); a table that moved on, one held by
    another transaction and one whose deadline is not past are left as they are."""
    tables = [_person_and_bots()[0] for _ in range(5)]
    acted, moved_on, held, not_due, second = tables
    for table_id in (acted, moved_on, held, second):
        _overdue(table_id)
    Table.objects.filter(pk=not_due).update(deadline=timezone.now() + dt.timedelta(minutes=5))
    versions = dict(Table.objects.values_list("pk", "version"))
    due = [(t, versions[t]) for t in tables]
    due[1] = (moved_on, versions[moved_on] - 1)
    with _held(held), CaptureQueriesContext(connection) as queries:
        assert services.clocks_expired(due) == 2
    statements = [q["sql"] for q in queries.captured_queries]
    statements = statements[: statements.index("COMMIT") + 1]  # (then the bots' tasks, eager here)
    assert statements[0] == "BEGIN" and statements.count("COMMIT") == 1
    assert sum("FOR UPDATE" in s for s in statements) == 1
    assert sum(s.startswith("WITH moved AS") and "seated AS" in s for s in statements) == 2
    assert not any(s.startswith(("UPDATE", "SAVEPOINT")) for s in statements)  # the seats in the writes
    after = dict(Table.objects.values_list("pk", "version"))
    assert [t for t in tables if after[t] != versions[t]] == [acted, second]
    for table_id in tables:
        row = Seat.objects.get(table_id=table_id, position=0)
        assert row.timeouts == (1 if table_id in (acted, second) else 0)
        assert row.timeouts == int(Table.objects.get(pk=table_id).seating[0].get("timeouts") or 0)
    assert services.clocks_expired([]) == 0


def test_only_timeouts_in_a_row_mark_a_seat_away() -> None:
    table_id, token = _person_and_bots()
    _overdue(table_id)
    services.clock_expired(table_id=table_id)  # one timeout (the pass)
    body = client(token).get(f"/api/v1/tables/{table_id}").json()
    assert body["seats"][0]["timeouts"] == 1 and body["game"]["to_act"] == [0]
    card = body["game"]["legal_actions"]["cards"][0]
    body = (
        client(token)
        .post(f"/api/v1/tables/{table_id}/actions", {"type": "play", "card": card}, format="json")
        .json()
    )
    assert body["seats"][0]["timeouts"] == 0  # the player acted: the count starts again
    assert Seat.objects.get(table_id=table_id, position=0).timeouts == 0  # the row too, in the play's write
    while client(token).get(f"/api/v1/tables/{table_id}").json()["game"]["to_act"] != [0]:
        pass
    _overdue(table_id)
    services.clock_expired(table_id=table_id)
    seat = client(token).get(f"/api/v1/tables/{table_id}").json()["seats"][0]
    assert (seat["timeouts"], seat["away"]) == (1, False)


def test_a_graphql_read_of_a_table_whose_clock_ran_out_acts_first() -> None:
    from django.test import Client

    table_id, token = _person_and_bots()
    _overdue(table_id)
    r = Client().post(
        "/graphql/",
        {
            "query": "query($t: Int!) { table(id: $t) { game { phase } seats { timeouts } } }",
            "variables": {"t": table_id},
        },
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert r.json()["data"]["table"] == {
        "game": {"phase": "playing"},
        "seats": r.json()["data"]["table"]["seats"],
    }
    assert r.json()["data"]["table"]["seats"][0]["timeouts"] == 1


def test_a_clock_runs_only_while_a_person_is_to_act(monkeypatch: pytest.MonkeyPatch) -> None:
    token = guest()
    bots_only = client(token).post(
        "/api/v1/tables",
        {"bots": {str(s): "basic" for s in range(4)}, "clocks": {"pass": 30, "play": 30}},
        format="json",
    )
    assert Table.objects.get(pk=bots_only.json()["id"]).deadline is None  # nobody to wait for
    table_id, token = _person_and_bots()
    assert Table.objects.get(pk=table_id).deadline is not None  # the person's pass
    monkeypatch.setattr(record, "queue_tasks", lambda *task: None)  # the bots' moves wait
    cards = client(token).get(f"/api/v1/tables/{table_id}").json()["game"]["hand"][:3]
    services.action_submit(table_id=table_id, position=0, action={"type": "pass", "cards": cards})
    table = Table.objects.get(pk=table_id)
    while not table.bot_turn:
        card = state_from_dict(table.state).legal_actions(0)[0].to_dict()
        services.action_submit(table_id=table_id, position=0, action=card)
        table.refresh_from_db()
    assert table.deadline is None  # a bot's turn: the bot lane plays it, no clock
    services.bots_play(table_id=table_id, version=table.version)
    table.refresh_from_db()
    if table.status != "finished" and table.state["turn"] == 0:
        assert table.deadline is not None  # the person's turn again: their clock runs


def test_a_person_taking_back_their_seat_on_their_turn_gets_a_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    table_id, token = _person_and_bots()
    monkeypatch.setattr(record, "queue_tasks", lambda *task: None)  # the bot does not play the seat
    seating = Table.objects.get(pk=table_id).seating
    Table.objects.filter(pk=table_id).update(
        seating=[dict(s, away=True) if s["position"] == 0 else s for s in seating],
        deadline=None,
        bot_turn=True,
    )
    back = client(token).post(f"/api/v1/tables/{table_id}/back", format="json")
    assert back.status_code == 200
    table = Table.objects.get(pk=table_id)
    assert not table.bot_turn and table.deadline is not None
