"""Quick play: matching tables, one queue per player, leaving, the deadline (bots or expiry), races."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from games import services, tasks
from games.errors import ServiceError
from games.models import Move, Player, QuickPlay, Table

pytestmark = pytest.mark.django_db


def _players(n: int) -> list[Player]:
    return [Player.objects.create(name=f"q{i}") for i in range(n)]


def _events(table: Table) -> list[str]:
    return [e[0] for m in Move.objects.filter(table=table).order_by("seq") for e in m.events]


def test_matching_requests_share_a_table_that_starts_when_full() -> None:
    people = _players(5)
    tables = [services.quick_play(player=p, app=None, options={"players": 4}).table for p in people[:3]]
    assert tables[0] is not None and {t.pk for t in tables if t} == {tables[0].pk}
    other = services.quick_play(player=people[3], app=None, options={"players": 4, "target_score": 50}).table
    assert other is not None and other.pk != tables[0].pk  # other criteria: another table
    assert services.waiting_of(people[0]) == tables[0]

    full = services.quick_play(player=people[4], app=None, options={"players": 4}).table
    assert full is not None and full.pk == tables[0].pk
    assert full.status == Table.Status.PASSING and full.deadline is not None  # the pass clock now
    assert [s["player"] for s in full.seating] == [p.pk for p in (*people[:3], people[4])]
    events = _events(full)
    assert events.index("match_found") == events.index("game_started") - 1
    assert not QuickPlay.objects.filter(table=full).exists()
    assert services.waiting_of(people[0]) is None


def test_one_queue_per_player_and_leaving_is_one_call() -> None:
    ana, bo = _players(2)
    table = services.quick_play(player=ana, app=None).table
    with pytest.raises(ServiceError) as twice:
        services.quick_play(player=ana, app=None, options={"players": 5})
    assert twice.value.code == "already_waiting" and twice.value.details["table"] == table.pk
    services.quick_play(player=bo, app=None)
    services.quick_play_leave(player=ana)
    assert services.waiting_of(ana) is None
    assert Table.objects.get(pk=table.pk).status == Table.Status.OPEN  # bo still waits there
    services.quick_play_leave(player=bo)
    assert Table.objects.get(pk=table.pk).status == Table.Status.ABANDONED  # nobody left: closed
    with pytest.raises(ServiceError) as gone:
        services.quick_play_leave(player=bo)
    assert gone.value.code == "not_waiting"
    again = services.quick_play(player=ana, app=None).table
    assert again is not None and again.pk != table.pk  # a closed table matches no one


def test_bad_criteria_are_refused_and_change_nothing() -> None:
    (ana,) = _players(1)
    for kwargs, code in [
        ({"options": {"players": 11}}, "invalid_option"),
        ({"clocks": {"play": 1}}, "invalid_clock"),
        ({"bot_level": "genius"}, "invalid_bot_level"),
        ({"wait_seconds": 301}, "invalid_wait"),
        ({"wait_seconds": True}, "invalid_wait"),
    ]:
        with pytest.raises(ServiceError) as refused:
            services.quick_play(player=ana, app=None, **kwargs)
        assert refused.value.code == code
    assert not Table.objects.exists() and not QuickPlay.objects.exists()


def test_at_the_deadline_bots_fill_the_open_seats_and_the_game_starts() -> None:
    ana, bo = _players(2)
    table = services.quick_play(player=ana, app=None, bot_level="strong", wait_seconds=5).table
    services.quick_play(player=bo, app=None, bot_level="strong", wait_seconds=5)
    assert services.clock_expired(table_id=table.pk).table is None  # not due yet
    later = timezone.now() + dt.timedelta(seconds=6)
    started = services.clock_expired(table_id=table.pk, now=later).table
    assert started is not None and started.status == Table.Status.PASSING
    assert [s["bot"] for s in started.seating] == [None, None, "strong", "strong"]
    found = next(e for m in Move.objects.filter(table=table) for e in m.events if e[0] == "match_found")
    assert found[1] == {"bots": [2, 3]}
    assert not QuickPlay.objects.exists()


def test_without_a_bot_level_the_wait_expires_and_the_sweep_finds_it() -> None:
    (ana,) = _players(1)
    table = services.quick_play(player=ana, app=None, bot_level=None, wait_seconds=0).table
    Table.objects.filter(pk=table.pk).update(deadline=timezone.now() - dt.timedelta(seconds=5))
    assert tasks.sweep(inline=True) == 1  # the embedded run's safety net acts on it
    closed = Table.objects.get(pk=table.pk)
    assert closed.status == Table.Status.ABANDONED and closed.deadline is None
    assert "quick_play_expired" in _events(closed) and "table_finished" in _events(closed)
    assert services.waiting_of(ana) is None


@pytest.mark.django_db(transaction=True)
def test_racing_requests_never_overfill_a_table() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("racing transactions need PostgreSQL's row locks (SQLite serialises the whole database)")
    people = _players(10)
    barrier = threading.Barrier(len(people))
    errors: list[BaseException] = []

    def ask(player: Player) -> None:
        try:
            barrier.wait()
            services.quick_play(player=player, app=None, options={"players": 3})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=ask, args=(p,)) for p in people]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    seated = [s["player"] for t in Table.objects.all() for s in t.seating if s["player"]]
    assert sorted(seated) == sorted(p.pk for p in people)  # everyone seated exactly once
    for table in Table.objects.all():
        assert len(table.seating) == 3
        taken = sum(s["player"] is not None for s in table.seating)
        assert table.status == (Table.Status.PASSING if taken == 3 else Table.Status.OPEN)
    assert Table.objects.filter(status=Table.Status.PASSING).count() >= 2
    assert (
        QuickPlay.objects.count()
        == len(people) - 3 * Table.objects.filter(status=Table.Status.PASSING).count()
    )


def test_quick_play_over_rest_and_graphql() -> None:
    from rest_framework.test import APIClient

    from games import accounts
    from tests.graphql.test_graphql import gql

    tokens = [accounts.player_create(app=None, name=f"r{i}")[1] for i in range(3)]
    clients = []
    for token in tokens:
        c = APIClient()
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        clients.append(c)

    first = clients[0].post(
        "/api/v1/quick-play", {"options": {"players": 3}, "bot_level": None}, format="json"
    )
    assert first.status_code == 200, first.json()
    table = first.json()
    assert table["status"] == "open" and table["your_seat"] == 0 and table["deadline"] is not None
    assert clients[0].get("/api/v1/quick-play").json()["id"] == table["id"]
    again = clients[0].post("/api/v1/quick-play", {}, format="json")
    assert again.status_code == 409 and again.json() | {"detail": ""} == {
        "code": "already_waiting",
        "detail": "",
        "table": table["id"],
    }
    bad = clients[1].post("/api/v1/quick-play", {"wait_seconds": 9999}, format="json")
    assert bad.status_code == 400 and bad.json()["code"] in {"invalid_input", "invalid_wait"}

    query = """mutation { quickPlay(options: {players: 3}, botLevel: null) {
        errors { code } table { id status yourSeat } } }"""
    second = gql(query, tokens[1])["data"]["quickPlay"]
    assert second["errors"] == [] and second["table"] == {"id": table["id"], "status": "open", "yourSeat": 1}
    waiting = gql("query { quickPlay { id } }", tokens[1])["data"]["quickPlay"]
    assert waiting == {"id": table["id"]}

    left = clients[1].delete("/api/v1/quick-play")
    assert left.status_code == 200 and left.json()["seats"][1]["player"] is None
    assert clients[1].get("/api/v1/quick-play").json()["code"] == "not_waiting"
    assert gql("mutation { leaveQuickPlay { errors { code } } }", tokens[1])["data"]["leaveQuickPlay"][
        "errors"
    ] == [{"code": "not_waiting"}]

    gql(query, tokens[1])
    full = clients[2].post(
        "/api/v1/quick-play", {"options": {"players": 3}, "bot_level": None}, format="json"
    )
    assert full.json()["status"] == "passing"
    events = clients[2].get(f"/api/v1/tables/{table['id']}/events").json()["events"]
    kinds = [e["type"] for e in events]
    assert kinds.index("match_found") == kinds.index("game_started") - 1
    assert next(e for e in events if e["type"] == "match_found")["bots"] == []


def test_racing_http_clients_fill_tables_exactly_and_the_player_stream_says_match_found(web: Any) -> None:
    """Seven guests ask for three-seat quick play at the same moment over HTTP (a real uvicorn
    server): two tables start with three people each, one waits with one, nobody sits twice; a
    waiting player's own stream (`GET me/stream`, read with httpx-sse) reports `match_found`."""
    import json

    import httpx
    from httpx_sse import connect_sse

    base = web()
    tokens = [
        httpx.post(f"{base}/api/v1/guests", json={"name": f"race{i}"}).json()["token"] for i in range(7)
    ]
    auth = [{"Authorization": f"Bearer {t}"} for t in tokens]
    criteria = {"options": {"players": 3}, "bot_level": None, "wait_seconds": 300}
    # A first player waits, following their own stream, before the others race for the seats.
    first = httpx.post(f"{base}/api/v1/quick-play", json=criteria, headers=auth[0]).json()
    seen: list[dict[str, Any]] = []
    following = threading.Event()

    def follow() -> None:
        with (
            httpx.Client(timeout=30) as client,
            connect_sse(client, "GET", f"{base}/api/v1/me/stream", headers=auth[0]) as source,
        ):
            for sse in source.iter_sse():
                event = json.loads(sse.data)
                seen.append(event)
                following.set()  # the stream is open (its first event is the player's tables)
                if event.get("type") == "match_found":
                    return

    follower = threading.Thread(target=follow)
    follower.start()
    assert following.wait(30)
    barrier = threading.Barrier(6)
    answers: list[dict[str, Any]] = []

    def ask(headers: dict[str, str]) -> None:
        barrier.wait()
        answers.append(
            httpx.post(f"{base}/api/v1/quick-play", json=criteria, headers=headers, timeout=30).json()
        )

    racers = [threading.Thread(target=ask, args=(h,)) for h in auth[1:]]
    for t in racers:
        t.start()
    for t in racers:
        t.join()
    follower.join(timeout=30)

    assert all("id" in a for a in answers), answers
    tables = {}
    for token_headers in auth:
        for table in httpx.get(f"{base}/api/v1/me", headers=token_headers).json()["tables"]:
            tables.setdefault(table["id"], []).append(table["seat"])
    seats = sorted(len(s) for s in tables.values())
    assert seats == [1, 3, 3] and all(len(set(s)) == len(s) for s in tables.values()), tables
    started = [t for t, s in tables.items() if len(s) == 3]
    assert first["id"] in started
    found = [e for e in seen if e.get("type") == "match_found"]
    assert found and found[0]["table"] == first["id"] and found[0]["bots"] == []
