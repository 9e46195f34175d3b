"""Spectators: a table's spectator delay (tricks or seconds) on every read of an unseated player,
live for seated players and the app, and the number of open spectator streams."""

from __future__ import annotations

import contextlib
import datetime as dt
import random
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from django.utils import timezone

from games import reads, services
from games.accounts import app_create, player_create
from games.engine import state_from_dict
from games.errors import ServiceError
from games.models import Move, Player, Table
from tests.api.test_api import client, guest
from tests.graphql.test_graphql import gql, ok
from tests.streams.test_streams import _action, _guest, _lines

pytestmark = pytest.mark.django_db
TRICKS = 13  # per hand, four players


def _public_events(table: Table, upto: int) -> list[dict[str, Any]]:
    moves = list(Move.objects.filter(table=table, seq__lte=upto).order_by("seq"))
    return reads.events_for(moves, None)


def _expected_cut(table: Table, tricks: int) -> tuple[int, int]:
    """From the live log alone: (the cut, completed tricks): the move completing the trick
    `tricks` before the last completed one, or the last move before the first card."""
    plays = list(Move.objects.filter(table=table, kind="play").order_by("seq").values_list("seq", flat=True))
    done = len(plays) // 4
    if done - tricks >= 1:
        return plays[(done - tricks) * 4 - 1], done
    return (plays[0] - 1 if plays else table.version), done


def _trick_of(table: Table) -> dict[int, int]:
    """Each play move's trick, counted from 1 across hands."""
    plays = Move.objects.filter(table=table, kind="play").order_by("seq").values_list("seq", flat=True)
    return {seq: i // 4 + 1 for i, seq in enumerate(plays)}


def test_a_two_trick_delay_never_shows_a_card_before_it_is_two_tricks_old() -> None:
    """A whole game: after every move, every read a spectator can make (the table, its events,
    moves, hands, each hand's replay, the scoresheet, GraphQL) is checked against the live log."""
    people = [Player.objects.create(name=f"s{i}") for i in range(4)]
    table = services.table_create(options={"target_score": 50}, spectator_delay={"tricks": 2}).table
    assert table is not None and table.spectator_delay == {"tricks": 2}
    _, watcher = guest("watcher")
    for p in people:
        services.seat_join(table_id=table.pk, player=p, scope=None)
    rng = random.Random(11)
    polled: list[dict[str, Any]] = []
    after, etag, steps = 0, None, 0
    settled: set[int] = set()
    while True:
        table.refresh_from_db()
        over = table.status == Table.Status.FINISHED
        cut, done = _expected_cut(table, 2)
        if over:
            cut = table.version
        trick_of = _trick_of(table)
        body = client(watcher).get(f"/api/v1/tables/{table.pk}").json()
        assert body["version"] == cut and body["delayed"] is (not over)
        assert body["spectator_delay"] == {"tricks": 2} and body["your_seat"] is None
        game = body["game"]
        if game is not None and not over:
            shown = (game["hand_number"] - 1) * TRICKS + len(game["tricks"])
            assert shown == max(done - 2, 0) and game["trick"] == [] and "hand" not in game
            assert body["deadline"] is None
        page = client(watcher).get(f"/api/v1/tables/{table.pk}/events?after={after}").json()
        assert page["version"] == cut
        for event in page["events"]:
            if event["type"] == "card_played" and not over:
                assert trick_of[event["seq"]] <= done - 2, (event, done)
        polled += page["events"]
        after = page["version"]
        moves = client(watcher).get(f"/api/v1/tables/{table.pk}/moves").json()
        assert moves["version"] == cut and all(m["seq"] <= cut for m in moves["moves"])
        hands = client(watcher).get(f"/api/v1/tables/{table.pk}/hands").json()["hands"]
        # A hand seen finished cannot change: each is replayed until then (and once finished), not
        # at every later move (on PostgreSQL that was two minutes of the same answers).
        for hand in [h for h in hands if h["number"] not in settled]:
            if hand["finished"]:
                settled.add(hand["number"])
            replay = client(watcher).get(f"/api/v1/tables/{table.pk}/hands/{hand['number']}").json()
            assert all(m["seq"] <= cut for m in replay["moves"])
            assert (replay["record"] is not None) == hand["finished"]
            if not hand["finished"]:  # nobody's pass shows before its hand is over
                assert all(m["payload"] == {"type": "pass"} for m in replay["moves"] if m["kind"] == "pass")
        sheet = client(watcher).get(f"/api/v1/tables/{table.pk}/scoresheet").json()
        if not over:
            assert len(sheet["hands"]) * TRICKS <= max(done - 2, 0)
            assert [h["number"] for h in hands if h["finished"]] == [r["hand"] for r in sheet["hands"]]
        graph = ok(f"{{ table(id: {table.pk}) {{ version delayed spectators }} }}", watcher)["table"]
        assert graph == {"version": cut, "delayed": not over, "spectators": 0}
        if etag is not None:  # the tag follows the cut: unchanged cut, 304
            again = client(watcher).get(f"/api/v1/tables/{table.pk}", HTTP_IF_NONE_MATCH=etag)
            assert (again.status_code == 304) == (etag == f'W/"{cut}"')
        etag = f'W/"{cut}"'
        if over:
            break
        state = state_from_dict(table.state)
        seat = state.to_act()[0]
        action = rng.choice(state.legal_actions(seat)).to_dict()
        services.action_submit(table_id=table.pk, position=seat, action=action)
        steps += 1
    assert steps > 100
    # Polled to the end: exactly the live log's public events, nothing missed or repeated.
    assert polled == _public_events(table, table.version)


def test_seated_players_and_the_app_see_live_and_an_app_player_spectates_delayed() -> None:
    app, key = app_create(name="a")
    players = [player_create(app=app, name=f"p{i}") for i in range(5)]
    made = (
        client(key)
        .post("/api/v1/tables", {"spectator_delay": {"tricks": 1}, "bots": {"1": "basic"}}, format="json")
        .json()
    )
    assert made["spectator_delay"] == {"tricks": 1} and made["delayed"] is False
    table_id = made["id"]
    for _, token in (players[0], players[2], players[3]):
        client(token).post(f"/api/v1/tables/{table_id}/join")
    table = Table.objects.get(pk=table_id)
    rng = random.Random(5)
    for _ in range(40):  # through the pass and a few tricks
        state = state_from_dict(table.state)
        seat = state.to_act()[0]
        services.action_submit(
            table_id=table_id, position=seat, action=rng.choice(state.legal_actions(seat)).to_dict()
        )
        table.refresh_from_db()
    cut, done = _expected_cut(table, 1)
    assert done >= 2 and cut < table.version
    live = client(key).get(f"/api/v1/tables/{table_id}").json()
    assert (live["version"], live["delayed"]) == (table.version, False)
    seated = client(players[0][1]).get(f"/api/v1/tables/{table_id}").json()
    assert (seated["version"], seated["delayed"], seated["your_seat"]) == (table.version, False, 0)
    assert client(players[0][1]).get(f"/api/v1/tables/{table_id}/events").json()["version"] == table.version
    spectator = client(players[4][1]).get(f"/api/v1/tables/{table_id}").json()
    assert (spectator["version"], spectator["delayed"]) == (cut, True)
    r = client(players[4][1]).get(f"/api/v1/tables/{table_id}/events?after={cut + 1}")
    assert (r.status_code, r.json()["code"], r.json()["version"]) == (400, "invalid_after", cut)


def test_a_delay_in_seconds_shows_the_moves_made_at_least_that_long_ago() -> None:
    people = [Player.objects.create(name=f"t{i}") for i in range(4)]
    table = services.table_create(spectator_delay={"seconds": 30}).table
    assert table is not None
    for p in people:
        services.seat_join(table_id=table.pk, player=p, scope=None)
    _, watcher = guest("w")
    table.refresh_from_db()
    old = timezone.now() - dt.timedelta(seconds=60)
    Move.objects.filter(table=table, seq__lte=3).update(created_at=old)  # three joins, long ago
    body = client(watcher).get(f"/api/v1/tables/{table.pk}").json()
    assert (body["version"], body["status"], body["game"], body["delayed"]) == (3, "open", None, True)
    cut, due = reads.spectator_cut(table)
    assert cut == 3 and due is not None and due > timezone.now() + dt.timedelta(seconds=25)
    Move.objects.filter(table=table).update(created_at=old)  # everything is old enough now
    body = client(watcher).get(f"/api/v1/tables/{table.pk}").json()
    assert body["version"] == table.version and body["game"]["phase"] == "passing"
    assert "hand" not in body["game"] and body["status"] == "passing"


def test_bad_delays_are_refused_and_create_nothing() -> None:
    _, token = guest("g")
    for bad in (
        {"seconds": 601},
        {"tricks": 14},
        {"minutes": 1},
        {"seconds": 1, "tricks": 1},
        {"tricks": -1},
    ):
        r = client(token).post("/api/v1/tables", {"spectator_delay": bad}, format="json")
        assert (r.status_code, r.json()["code"]) == (400, "invalid_input"), bad
    r = client(token).post("/api/v1/tables", {"spectator_delay": {"tricks": "2"}}, format="json")
    assert r.status_code == 400
    with pytest.raises(ServiceError) as refused:
        services.table_create(spectator_delay={"seconds": True})
    assert refused.value.details["field"] == "spectator_delay"
    assert Table.objects.count() == 0
    made = ok(
        "mutation { createTable(spectatorDelay: {seconds: 0}) "
        "{ table { spectatorDelay { seconds } } errors { code } } }",
        token,
    )
    assert made["table"]["spectatorDelay"] is None  # zero: live
    both = gql(
        "mutation { createTable(spectatorDelay: {seconds: 5, tricks: 1}) "
        "{ table { id } errors { code field } } }",
        token,
    )["data"]["createTable"]
    assert both == {"table": None, "errors": [{"code": "invalid_input", "field": "spectatorDelay"}]}


def _watch(
    base: str, table_id: int, auth: dict[str, str], out: list[tuple[float, dict[str, Any]]], every: int
) -> None:
    """A spectator following a table's stream to its end, reconnecting with Last-Event-ID after
    every `every` events; each event with the moment it arrived."""
    last: str | None = None
    while True:
        count, ended = 0, True
        out.append((time.time(), {"type": "connected"}))
        for event in _lines(base, f"/api/v1/tables/{table_id}/stream", auth, last):
            out.append((time.time(), event))
            last, count = event["id"], count + 1
            if count >= every:
                ended = False
                break
        if ended:
            return


def _spectators(base: str, table_id: int, auth: dict[str, str], wanted: int) -> int:
    """The table body's spectator count once it is `wanted` (or whatever it is after 10 s)."""
    found = -1
    for _ in range(100):
        found = httpx.get(f"{base}/api/v1/tables/{table_id}", headers=auth).json()["spectators"]
        if found == wanted:
            break
        time.sleep(0.1)
    return found


@pytest.mark.slow
@pytest.mark.needs_postgres
@pytest.mark.needs_redis
@pytest.mark.django_db(transaction=True)
def test_spectator_streams_are_delayed_counted_and_resume_while_seated_streams_stay_live(
    web: Callable[..., str], workers: Callable[..., object]
) -> None:
    workers()
    base = web()
    me, watcher, other = _guest(base, "me"), _guest(base, "watcher"), _guest(base, "other")
    body = {
        "options": {"target_score": 50},
        "bots": {str(s): "basic" for s in (1, 2, 3)},
        "clocks": {"pass": None, "play": None, "moon": None},
        "spectator_delay": {"tricks": 2},
    }
    table_id = httpx.post(f"{base}/api/v1/tables", json=body, headers=me).json()["id"]
    assert httpx.post(f"{base}/api/v1/tables/{table_id}/join", json={}, headers=me).status_code == 200

    # The count: open spectator streams of this table, in every process; seated streams are not.
    path = f"{base}/api/v1/tables/{table_id}/stream?format=ndjson"
    with contextlib.ExitStack() as streams:
        reading = []  # each stream's lines, kept: a line iterator dropped would close its stream
        for auth in (me, watcher, other):
            response = streams.enter_context(httpx.stream("GET", path, headers=auth, timeout=30))
            reading.append(response.iter_lines())
            assert next(reading[-1])  # the state: the stream is open
        assert _spectators(base, table_id, me, 2) == 2
        second = web()  # another process counts its own spectators into the same total
        with httpx.stream("GET", path.replace(base, second), headers=other, timeout=30) as response:
            lines = response.iter_lines()
            assert next(lines)
            assert _spectators(base, table_id, watcher, 3) == 3
        assert _spectators(second, table_id, watcher, 2) == 2
    assert _spectators(base, table_id, me, 0) == 0

    # The game: a spectator follows it (reconnecting every 70 events) while the seated player plays
    # it from their own stream's your_turn, which a delay would stall.
    seen: list[tuple[float, dict[str, Any]]] = []
    spectator = threading.Thread(target=_watch, args=(base, table_id, watcher, seen, 70))
    spectator.start()
    rng, mine = random.Random(3), []
    for event in _lines(base, f"/api/v1/tables/{table_id}/stream", me, None):
        mine.append(event)
        if event["type"] == "your_turn":
            action = {**_action(event["legal_actions"], rng), "expected_version": event["version"]}
            r = httpx.post(f"{base}/api/v1/tables/{table_id}/actions", json=action, headers=me)
            assert r.status_code == 200, r.text
    spectator.join(timeout=120)
    assert not spectator.is_alive() and mine[-1]["type"] == "table_finished"
    assert {"cards_dealt", "cards_received"} <= {e["type"] for e in mine}

    table = Table.objects.get(pk=table_id)
    plays = list(Move.objects.filter(table=table, kind="play").order_by("seq"))
    trick_of = {m.seq: i // 4 + 1 for i, m in enumerate(plays)}
    completed = {i // 4 + 1: m.created_at.timestamp() for i, m in enumerate(plays) if i % 4 == 3}
    last_move = Move.objects.filter(table=table).order_by("-seq").first()
    assert last_move is not None
    early = []
    for arrived, event in seen:
        assert event["type"] not in {"cards_dealt", "cards_passed", "cards_received", "your_turn"}
        if event["type"] == "state" and event["state"]["delayed"]:
            assert event["state"]["game"] is None or event["state"]["game"]["trick"] == []
        if event["type"] == "card_played":
            # two more tricks were complete (or the game over) before the card reached the spectator
            old_enough = completed.get(trick_of[event["seq"]] + 2, last_move.created_at.timestamp())
            if old_enough > arrived:
                early.append(event)
    assert early == []
    # Across its reconnections the spectator got every public event once, in order.
    logged = [e for _, e in seen if e["type"] not in ("state", "connected")]
    start = int(next(e for _, e in seen if e["type"] == "state")["id"])
    expected = [{**e, "table": table_id} for e in _public_events(table, table.version) if e["seq"] > start]
    assert [{k: v for k, v in e.items() if k != "id"} for e in logged] == expected
    connections = sum(e["type"] == "connected" for _, e in seen)
    assert connections >= 3  # it did reconnect
    # The delayed stream was served from the process's shared reads (one per change, with the
    # cut), not from reads of its own: those are one per opening or resumption (and a few more
    # while a feed has no cut yet).
    metrics = httpx.get(f"{base}/metrics").text
    count = {
        k: float(re.search(rf'hearts_stream_reads_total{{kind="{k}"}} (\S+)', metrics)[1])
        for k in ("shared", "viewer")
    }
    assert count["shared"] > 30 and count["viewer"] <= 2 * connections + 10, count


@pytest.mark.slow
@pytest.mark.needs_postgres
@pytest.mark.needs_redis
@pytest.mark.django_db(transaction=True)
def test_a_delay_in_seconds_reaches_stream_spectators_as_moves_come_of_age(
    web: Callable[..., str], workers: Callable[..., object]
) -> None:
    workers()
    base = web()
    me, watcher = _guest(base, "me"), _guest(base, "watcher")
    body = {
        "options": {"target_score": 50},
        "bots": {str(s): "basic" for s in (1, 2, 3)},
        "clocks": {"pass": None, "play": None, "moon": None},
        "spectator_delay": {"seconds": 2},
    }
    table_id = httpx.post(f"{base}/api/v1/tables", json=body, headers=me).json()["id"]
    assert httpx.post(f"{base}/api/v1/tables/{table_id}/join", json={}, headers=me).status_code == 200
    seen: list[tuple[float, dict[str, Any]]] = []
    spectator = threading.Thread(target=_watch, args=(base, table_id, watcher, seen, 10**6))
    spectator.start()
    rng, turns, caught_up = random.Random(4), 0, False
    for event in _lines(base, f"/api/v1/tables/{table_id}/stream", me, None):
        if event["type"] == "your_turn":
            turns += 1
            time.sleep(0.05)  # a game of a few seconds, so that the delay shows mid-game
            if turns == 20:  # the table waits for me: time alone brings the spectator up to it
                time.sleep(3)
                logged = [int(e["id"].split(":")[0]) for _, e in list(seen) if ":" in e.get("id", "")]
                caught_up = max(logged) == event["version"]
            action = {**_action(event["legal_actions"], rng), "expected_version": event["version"]}
            assert (
                httpx.post(f"{base}/api/v1/tables/{table_id}/actions", json=action, headers=me).status_code
                == 200
            )
    spectator.join(timeout=60)
    assert not spectator.is_alive()
    made = {m.seq: m.created_at.timestamp() for m in Move.objects.filter(table_id=table_id)}
    ended = max(made.values())
    events = [(arrived, e) for arrived, e in seen if e["type"] not in ("state", "connected")]
    assert events and events[-1][1]["type"] == "table_finished"
    for arrived, event in events:  # two seconds old, unless the game was over
        assert arrived >= min(made[event["seq"]] + 2, ended), event
    # ... and they came while the game went on
    assert sum(arrived < ended for arrived, _ in events) > 10 and caught_up
    # from the shared reads: the spectator's own reads are its opening's, and the seated stream's
    metrics = httpx.get(f"{base}/metrics").text
    viewer = float(re.search(r'hearts_stream_reads_total{kind="viewer"} (\S+)', metrics)[1])
    assert viewer <= 6, viewer
