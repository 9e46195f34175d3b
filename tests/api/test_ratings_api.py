"""Ratings over REST and GraphQL: a rated game played over HTTP shows in the ratings, the history,
the leaderboard and the events; pages, scopes and bad input answer with their codes."""

from __future__ import annotations

import random
from typing import Any

import pytest

from games.accounts import app_create
from games.engine import state_from_dict
from games.models import App, Player, Table
from games.services import action_submit, seat_join, table_create
from tests.api.test_api import choose, client
from tests.graphql.test_graphql import gql, ok

pytestmark = pytest.mark.django_db


def _players(key: str, n: int) -> list[tuple[int, str]]:
    out = []
    for i in range(n):
        body = client(key).post("/api/v1/players", {"name": f"u{i}"}, format="json").json()
        out.append((body["player"]["id"], body["token"]))
    return out


def _play_over_rest(table_id: int, tokens: list[str], rng: random.Random) -> None:
    """Each player polls the table and acts when the game waits for them, until the game is over."""
    while True:
        acted = False
        for token in tokens:
            body = client(token).get(f"/api/v1/tables/{table_id}").json()
            if body["status"] == "finished":
                return
            legal = body["game"]["legal_actions"]
            if legal is not None:
                r = client(token).post(
                    f"/api/v1/tables/{table_id}/actions", choose(body["game"], rng), format="json"
                )
                assert r.status_code == 200, r.json()
                acted = True
        assert acted


def _finish_with_services(app: App, players: list[Player], rng: random.Random) -> None:
    """A rated game of four of the app's players, played through the services (fast)."""
    table = table_create(options={"players": 4, "target_score": 50}, app=app, rated=True).table
    assert table is not None
    for p in players:
        seat_join(table_id=table.pk, player=p)
    while True:
        table.refresh_from_db()
        if table.status == Table.Status.FINISHED:
            return
        state = state_from_dict(table.state)
        seat = rng.choice(state.to_act())
        action_submit(
            table_id=table.pk, position=seat, action=rng.choice(state.legal_actions(seat)).to_dict()
        )


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
def test_a_rated_game_over_rest_shows_in_ratings_history_leaderboard_and_events() -> None:
    _, key = app_create(name="rated")
    people = _players(key, 4)
    r = client(key).post(
        "/api/v1/tables", {"options": {"players": 4, "target_score": 50}, "rated": True}, format="json"
    )
    assert r.status_code == 201 and r.json()["rated"] is True
    table_id = r.json()["id"]
    for _, token in people:
        assert client(token).post(f"/api/v1/tables/{table_id}/join", {}, format="json").status_code == 200
    _play_over_rest(table_id, [t for _, t in people], random.Random(7))

    events = client(key).get(f"/api/v1/tables/{table_id}/events?after=0").json()["events"]
    while (more := client(key).get(f"/api/v1/tables/{table_id}/events?after={events[-1]['seq']}").json())[
        "events"
    ]:
        events += more["events"]
    types = [e["type"] for e in events]
    assert types[-3:] == ["game_over", "ratings_changed", "table_finished"]
    changed = events[-2]
    assert changed["family"] == "classic-4" and len(changed["changes"]) == 4

    ada_id, ada_token = people[0]
    mine = client(ada_token).get(f"/api/v1/players/{ada_id}/ratings").json()
    (rating,) = mine["ratings"]
    assert rating["family"] == "classic-4" and rating["games"] == 1
    assert rating["score"] == pytest.approx(rating["mu"] - 3 * rating["sigma"])
    seat = client(ada_token).get(f"/api/v1/tables/{table_id}").json()["your_seat"]
    shown = next(c for c in changed["changes"] if c["seat"] == seat)
    assert (shown["mu"], shown["sigma"]) == (rating["mu"], rating["sigma"])
    history = client(key).get(f"/api/v1/players/{ada_id}/rating-history").json()
    (change,) = history["results"]
    assert change["table"] == table_id and change["place"] == shown["place"] and history["next"] is None
    assert change["before"] == {"mu": 25.0, "sigma": 25.0 / 3} and change["after"]["mu"] == rating["mu"]
    board = client(ada_token).get("/api/v1/leaderboard?family=classic-4").json()
    assert sorted(r["player"] for r in board["results"]) == sorted(p for p, _ in people)
    scores = [r["score"] for r in board["results"]]
    assert scores == sorted(scores, reverse=True)
    system = client(key).get("/api/v1/ratings").json()
    assert system["model"] == "PlackettLuce"
    assert {b["level"]: b["mu"] for b in system["bots"]} == {
        "random": -13.0,
        "basic": 25.0,
        "strong": 42.0,
        "expert": 47.0,
    }
    assert "classic-4" in [f["name"] for f in system["families"]]

    # GraphQL answers the same, from the same reads.
    data = ok(
        "query($p: Int!) { ratingSystem { model bots { level mu } } "
        'leaderboard(family: "classic-4") { ratings { player score } next } '
        "playerRatings(playerId: $p) { ratings { family mu sigma games } } "
        "ratingHistory(playerId: $p) { changes { table place before { mu sigma } after { mu } } next } }",
        ada_token,
        p=ada_id,
    )
    assert data["ratingSystem"]["model"] == "PlackettLuce"
    assert [r["player"] for r in data["leaderboard"]["ratings"]] == [r["player"] for r in board["results"]]
    assert data["playerRatings"]["ratings"] == [
        {"family": "classic-4", "mu": rating["mu"], "sigma": rating["sigma"], "games": 1}
    ]
    assert data["ratingHistory"]["changes"][0]["table"] == table_id
    table = ok(
        "query($t: Int!) { table(id: $t) { rated events(after: 0, first: 100) { events { type "
        "... on RatingsChangedEvent { family changes { seat place mu sigma } } } } } }",
        ada_token,
        t=table_id,
    )["table"]
    assert table["rated"] is True
    found = [e for e in table["events"]["events"] if e["type"] == "ratings_changed"]
    if found:  # in the first page of events only when the game was short
        assert found[0]["changes"] == changed["changes"]


def test_tables_are_unrated_unless_asked_and_rated_is_a_boolean() -> None:
    _, key = app_create(name="plain")
    r = client(key).post("/api/v1/tables", {}, format="json")
    assert r.status_code == 201 and r.json()["rated"] is False
    r = client(key).post("/api/v1/tables", {"rated": "yes"}, format="json")
    assert r.status_code == 400 and r.json()["code"] == "invalid_input"
    created = ok("mutation { createTable(rated: true) { table { rated } errors { code } } }", key)
    assert created["table"]["rated"] is True


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
def test_leaderboard_and_history_come_in_pages_and_bad_input_has_its_code() -> None:
    app, key = app_create(name="pages")
    players = [Player.objects.create(app=app, name=f"n{i}") for i in range(24)]
    rng = random.Random(9)
    for n in range(6):
        _finish_with_services(app, players[4 * n : 4 * n + 4], rng)
    _finish_with_services(app, players[:4], rng)  # the first four play twice

    first = client(key).get("/api/v1/leaderboard?family=classic-4").json()
    rest = client(key).get(first["next"]).json()
    assert len(first["results"]) == 20 and len(rest["results"]) == 4 and rest["next"] is None
    rows = first["results"] + rest["results"]
    assert sorted(r["player"] for r in rows) == sorted(p.pk for p in players)
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)

    seen: list[int] = []
    after = None
    while True:
        page: dict[str, Any] = ok(
            'query($a: String) { leaderboard(family: "classic-4", first: 7, after: $a) '
            "{ ratings { player } next } }",
            key,
            a=after,
        )["leaderboard"]
        seen += [r["player"] for r in page["ratings"]]
        if page["next"] is None:
            break
        after = page["next"]
    assert seen == [r["player"] for r in rows]

    one = ok(
        "query($p: Int!) { ratingHistory(playerId: $p, first: 1) { changes { id table } next } }",
        key,
        p=players[0].pk,
    )["ratingHistory"]
    older = ok(
        "query($p: Int!, $a: String) { ratingHistory(playerId: $p, first: 1, after: $a) "
        "{ changes { id } next } }",
        key,
        p=players[0].pk,
        a=one["next"],
    )["ratingHistory"]
    assert older["changes"][0]["id"] < one["changes"][0]["id"] and older["next"] is None
    rest_history = client(key).get(f"/api/v1/players/{players[0].pk}/rating-history?family=classic-4").json()
    assert [c["id"] for c in rest_history["results"]] == [one["changes"][0]["id"], older["changes"][0]["id"]]

    for path, status, code in [
        ("/api/v1/leaderboard", 400, "invalid_filter"),
        ("/api/v1/leaderboard?family=classic-11", 400, "invalid_filter"),
        ("/api/v1/leaderboard?family=classic-4&cursor=garbage", 400, "invalid_cursor"),
        (f"/api/v1/players/{players[0].pk}/rating-history?family=nope", 400, "invalid_filter"),
        ("/api/v1/players/999999999/ratings", 404, "not_found"),
    ]:
        r = client(key).get(path)
        assert (r.status_code, r.json()["code"]) == (status, code), path
    _, other_key = app_create(name="other")
    r = client(other_key).get(f"/api/v1/players/{players[0].pk}/ratings")
    assert r.status_code == 404 and r.json()["code"] == "not_found"  # another app's player
    assert client(other_key).get("/api/v1/leaderboard?family=classic-4").json()["results"] == []
    for query, code in [
        ('{ leaderboard(family: "classic-11") { next } }', "invalid_filter"),
        ('{ leaderboard(family: "classic-4", after: "garbage") { next } }', "invalid_cursor"),
        ('{ leaderboard(family: "classic-4", first: 0) { next } }', "invalid_filter"),
        ("{ playerRatings(playerId: 999999999) { player } }", "not_found"),
    ]:
        assert gql(query, key)["errors"][0]["extensions"]["code"] == code, query
