"""Hints (games/services/hints.py): the table option and its refusals, who may ask when, the answer
over REST and GraphQL, that it runs on the hints lane from the seat's view alone, the rate limit,
the count and the mark in the export and transcript."""

from __future__ import annotations

import json
import random
from typing import Any

import kombu.exceptions
import pytest
from django.core.cache import cache

from bots import advice
from games.accounts import app_create, key_create, player_create
from games.engine import view
from games.models import HintCount, Table
from games.records import log as records
from games.services import hints
from tests.api.test_api import choose, client
from tests.graphql.test_graphql import gql

pytestmark = pytest.mark.django_db

HINT_FIELDS = (
    "tableId version hand seat level phase choice { type card cards choice } "
    "options { action { type card cards } points } thinkMs"
)


class Game:
    """Four players of one app at a one-hand table created with `hints`, played over REST."""

    def __init__(self, **create: Any) -> None:
        self.app, self.key = app_create(name="hints")
        self.tokens = [player_create(app=self.app, name=f"p{i}")[1] for i in range(4)]
        self.watcher = player_create(app=self.app, name="watcher")[1]
        body = {"options": {"hands": 1}, "hints": True, **create}
        r = client(self.tokens[0]).post("/api/v1/tables", body, format="json")
        assert r.status_code == 201, r.json()
        self.id = r.json()["id"]
        for token in self.tokens:
            assert client(token).post(f"/api/v1/tables/{self.id}/join", {}, format="json").status_code == 200
        self.seats = {client(t).get(f"/api/v1/tables/{self.id}").json()["your_seat"]: t for t in self.tokens}
        self.rng = random.Random(self.id)

    def table(self, token: str | None = None) -> dict[str, Any]:
        return dict(client(token or self.tokens[0]).get(f"/api/v1/tables/{self.id}").json())

    def to_act(self) -> int:
        return int(self.table()["game"]["to_act"][0])

    def hint(self, token: str, level: str | None = None) -> Any:
        query = "" if level is None else f"?level={level}"
        return client(token).get(f"/api/v1/tables/{self.id}/hint{query}")

    def act(self, seat: int) -> None:
        mine = self.table(self.seats[seat])
        r = client(self.seats[seat]).post(
            f"/api/v1/tables/{self.id}/actions", choose(mine["game"], self.rng), format="json"
        )
        assert r.status_code == 200, r.json()

    def finish(self) -> None:
        while (body := self.table())["status"] != "finished":
            self.act(body["game"]["to_act"][0])


def test_the_option_is_shown_to_everyone_and_refused_with_rated() -> None:
    game = Game()
    assert game.table()["hints"] is True and game.table(game.watcher)["hints"] is True
    shown = gql("query($id: Int!) { table(id: $id) { hints rated } }", game.watcher, id=game.id)
    assert shown["data"]["table"] == {"hints": True, "rated": False}
    r = client(game.tokens[0]).post("/api/v1/tables", {"hints": True, "rated": True}, format="json")
    assert r.status_code == 422 and r.json()["code"] == "hints_not_allowed" and r.json()["reason"] == "rated"
    r = client(game.tokens[0]).post("/api/v1/tables", {"hints": "yes"}, format="json")
    assert r.status_code == 400
    plain = client(game.tokens[0]).post("/api/v1/tables", {}, format="json").json()
    assert plain["hints"] is False  # off by default


def test_the_seat_to_act_gets_the_bots_move_and_every_legal_actions_estimate() -> None:
    cache.clear()
    game = Game()
    seat = game.to_act()
    r = game.hint(game.seats[seat])
    assert r.status_code == 200, r.json()
    body = r.json()
    legal = game.table(game.seats[seat])["game"]["legal_actions"]
    assert body["table_id"] == game.id and body["seat"] == seat and body["level"] == "strong"
    assert body["hand"] == 1 and body["phase"] == "passing" and body["version"] == game.table()["version"]
    assert body["choice"]["type"] == "pass" and body["choice"] in [o["action"] for o in body["options"]]
    assert all(set(o["action"]["cards"]) <= set(legal["from"]) for o in body["options"])
    # The lane's answer is the estimator's on the seat's own view, with the public seed.
    state = records.state(Table.objects.get(pk=game.id))
    assert state is not None
    expected = advice.estimates(
        view(state, seat, history=False),
        "strong",
        random.Random(hints.seed_of(game.id, body["version"], seat, "strong")),
    )
    assert body["choice"] == expected.choice
    assert [(o["action"], o["points"]) for o in body["options"]] == expected.options
    # Played: a card hint names every legal card, the same over GraphQL.
    while game.table()["game"]["phase"] != "playing":
        game.act(game.to_act())
    seat = game.to_act()
    legal = game.table(game.seats[seat])["game"]["legal_actions"]
    rest = game.hint(game.seats[seat], "basic").json()
    assert sorted(o["action"]["card"] for o in rest["options"]) == sorted(legal["cards"])
    q = f"query($id: Int!) {{ table(id: $id) {{ hint(level: basic) {{ {HINT_FIELDS} }} }} }}"
    got = gql(q, game.seats[seat], id=game.id)["data"]["table"]["hint"]
    assert got["choice"]["card"] == rest["choice"]["card"] and got["level"] == "basic"
    assert [o["points"] for o in got["options"]] == [o["points"] for o in rest["options"]]


def test_refusals_off_rated_tournament_not_your_turn_not_seated_and_app_keys() -> None:
    game = Game()
    passed = game.to_act()
    game.act(passed)  # its pass made: the others still pass, it has nothing to do
    r = game.hint(game.seats[passed])
    assert r.status_code == 422 and r.json()["code"] == "not_your_turn"
    assert game.hint(game.watcher).json()["code"] == "not_seated"
    key = key_create(game.app, name="reader", scopes=["tables:read"])[1]
    r = game.hint(key)
    assert r.status_code == 422 and r.json()["code"] == "player_token_required"
    assert game.hint(game.seats[game.to_act()], "grandmaster").json()["code"] == "invalid_bot_level"
    off = Game(hints=False)
    r = off.hint(off.seats[off.to_act()])
    assert r.status_code == 422
    assert (r.json()["code"], r.json()["reason"]) == ("hints_not_allowed", "off")
    q = "query($id: Int!) { table(id: $id) { hint { choice { type } } } }"
    refused = gql(q, off.seats[off.to_act()], id=off.id)
    assert refused["errors"][0]["extensions"]["code"] == "hints_not_allowed"
    Table.objects.filter(pk=off.id).update(rated=True)
    assert off.hint(off.seats[off.to_act()]).json()["reason"] == "rated"
    assert hints.refusal(Table(hints=True, tournament_id=1)) == "tournament"
    assert hints.refusal(Table(hints=True)) is None


def test_hints_run_on_the_hints_lane_from_the_view_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.conf import settings

    from games.infra import jobs

    cache.clear()
    assert settings.CELERY_TASK_ROUTES["games.compute_hint"] == {"queue": "hints"}
    assert jobs.HINTS_QUEUE in jobs.LANES
    sent: list[tuple[str, tuple[Any, ...], str]] = []
    expiry: list[float | None] = []
    real = jobs.send

    def spy(
        name: str, args: tuple[Any, ...], *, queue: str, delay: float = 0.0, expires: float | None = None
    ) -> None:
        sent.append((name, args, queue))
        expiry.append(expires)
        real(name, args, queue=queue, delay=delay, expires=expires)

    monkeypatch.setattr(jobs, "send", spy)
    game = Game()
    seat = game.to_act()
    answer = game.hint(game.seats[seat])
    assert answer.status_code == 200
    (_, args, queue), *_ = [s for s in sent if s[0] == jobs.COMPUTE_HINT]
    assert queue == "hints"
    assert expiry[-1] == settings.HINT_THINK_MS / 1000  # not started by then: dropped, the retry asks again
    _, sent_view, level, seed = args
    seat_view = json.loads(sent_view)
    state = records.state(Table.objects.get(pk=game.id))
    assert state is not None and seat_view == view(state, seat, history=False)  # only the seat's view
    assert level == "strong" and seed == hints.seed_of(game.id, answer.json()["version"], seat, level)


def test_rate_limited_and_a_slow_lane_answers_service_unavailable(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.clear()
    game = Game()
    token = game.seats[game.to_act()]
    settings.RATE_LIMITS_ENABLED, settings.HINT_RATE = True, "2/minute"
    assert game.hint(token, "basic").status_code == 200
    assert game.hint(token, "basic").status_code == 200  # kept: not computed, not counted
    assert game.hint(token, "strong").status_code == 200
    r = game.hint(token, "expert")
    assert r.status_code == 429 and r.json()["limit"] == "hint" and int(r["Retry-After"]) >= 1
    settings.RATE_LIMITS_ENABLED = False
    settings.HINT_THINK_MS = 60
    monkeypatch.setattr(hints.jobs, "compute_hint", lambda *args, **kwargs: None)
    r = game.hint(token, "expert")
    assert r.status_code == 503 and r.json()["code"] == "service_unavailable" and r.json()["retry_after"] >= 1

    def broker_down(*args: Any, **kwargs: Any) -> None:
        raise kombu.exceptions.OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(hints.jobs, "compute_hint", broker_down)  # Redis restarting: a 503, not a 500
    r = game.hint(token, "expert")
    assert r.status_code == 503 and r.json()["code"] == "service_unavailable" and r.json()["retry_after"] >= 1


def test_hints_are_counted_and_marked_in_the_export_and_transcript() -> None:
    cache.clear()
    game = Game()
    seat = game.to_act()
    for _ in range(2):
        assert game.hint(game.seats[seat], "basic").status_code == 200
    assert HintCount.objects.get(table_id=game.id, seat=seat).count == 2
    game.finish()
    document = client(game.tokens[0]).get(f"/api/v1/tables/{game.id}/export").json()
    assert document["hints"] == {"allowed": True, "given": {str(seat): 2}}
    text = client(game.tokens[0]).get(f"/api/v1/tables/{game.id}/transcript").content.decode()
    assert "Hints were allowed at this table; hints given: p" in text and " 2" in text
    plain = Game(hints=False)
    plain.finish()
    assert client(plain.tokens[0]).get(f"/api/v1/tables/{plain.id}/export").json()["hints"] == {
        "allowed": False,
        "given": {},
    }


def test_the_embedded_run_computes_a_hint_on_its_hints_lane_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without Redis (make run) the hint goes to the embedded worker's `hints` lane thread: the
    request thread only waits for it."""
    import threading

    from games import embedded
    from games.infra import jobs

    cache.clear()
    game = Game()
    threads: list[str] = []
    real = hints.compute

    def spy(seat_view: dict[str, Any], level: str, seed: int) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        return real(seat_view, level, seed)

    monkeypatch.setattr(hints, "compute", spy)
    jobs.run_here(embedded.hand)
    try:
        r = game.hint(game.seats[game.to_act()], "basic")
    finally:
        jobs.run_here(None)
    assert r.status_code == 200, r.json()
    assert threads == ["hearts-lane-hints-0"] and jobs.HINTS_QUEUE in embedded.LANES
