"""Hand reviews (games/services/review.py): who may ask when, what an answer holds, that it is seeded
and cached, and that each estimate is made from the seat's view at that decision only."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from django.core.cache import cache
from django.test import Client, override_settings
from hearts_client import HeartsClient, HeartsError, Retry

from bots import advice
from games.accounts import Scope, app_create, key_create, player_create
from games.engine import Options, State, action_from_dict, view
from games.engine.cards import names
from games.infra import ratelimit
from games.models import Table
from games.services import review
from tests.api.test_api import TOKEN, check_review_shows_its_seat_only, choose, client, own_cards
from tests.graphql.test_graphql import gql

pytestmark = pytest.mark.django_db

REVIEW_FIELDS = (
    "tableId hand seat level pass { cards botCards pointsLost } "
    "tricks { trick card botCard pointsLost } totalPointsLost"
)


class Game:
    """Four players of one app at a two-hand table, played over REST with random legal moves."""

    def __init__(self, hands: int = 2) -> None:
        self.app, self.key = app_create(name="reviews")
        self.tokens = [player_create(app=self.app, name=f"p{i}")[1] for i in range(4)]
        self.spectator = player_create(app=self.app, name="watcher")[1]
        r = client(self.tokens[0]).post("/api/v1/tables", {"options": {"hands": hands}}, format="json")
        assert r.status_code == 201, r.json()
        self.id = r.json()["id"]
        for token in self.tokens:
            assert client(token).post(f"/api/v1/tables/{self.id}/join", {}, format="json").status_code == 200
        self.seats = {client(t).get(f"/api/v1/tables/{self.id}").json()["your_seat"]: t for t in self.tokens}
        self.rng = random.Random(self.id)

    def table(self) -> dict[str, Any]:
        return dict(client(self.tokens[0]).get(f"/api/v1/tables/{self.id}").json())

    def play_until(self, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        body = self.table()
        while not done(body) and body["status"] != "finished":
            seat = self.rng.choice(body["game"]["to_act"])
            mine = client(self.seats[seat]).get(f"/api/v1/tables/{self.id}").json()
            r = client(self.seats[seat]).post(
                f"/api/v1/tables/{self.id}/actions", choose(mine["game"], self.rng), format="json"
            )
            assert r.status_code == 200, r.json()
            body = self.table()
        return body

    def review(self, token: str, hand: int, seat: int | None = None, level: str = "basic") -> Any:
        query = f"level={level}" + ("" if seat is None else f"&seat={seat}")
        return client(token).get(f"/api/v1/tables/{self.id}/hands/{hand}/review?{query}")

    def record(self, hand: int) -> dict[str, Any]:
        r = client(self.tokens[0]).get(f"/api/v1/tables/{self.id}/hands/{hand}")
        return dict(r.json()["record"])


def check_review(body: dict[str, Any], record: dict[str, Any], seat: int) -> None:
    """A review's shape and facts against the hand's public record: the seat's own cards only,
    one entry per trick with the card the seat played, points lost 0 or more (0 for the bot's card)."""
    check_review_shows_its_seat_only(body, record, seat)
    mine = own_cards(record, seat)
    n = len(record["dealt"])
    played = {k: t["cards"][(seat - t["leader"]) % n] for k, t in enumerate(record["tricks"], 1)}
    assert [t["trick"] for t in body["tricks"]] == list(range(1, len(record["tricks"]) + 1))
    for entry in body["tricks"]:
        assert entry["card"] == played[entry["trick"]]
        assert entry["bot_card"] in mine
        assert entry["points_lost"] is not None and entry["points_lost"] >= 0
        if entry["bot_card"] == entry["card"]:
            assert entry["points_lost"] == 0
    if record["passes"]:
        passed = body["pass"]
        assert sorted(passed["cards"]) == sorted(record["passes"][seat]["cards"])
        assert set(passed["bot_cards"]) <= set(record["dealt"][seat]) and len(passed["bot_cards"]) == 3
        assert passed["points_lost"] is not None and passed["points_lost"] >= 0  # its own pass is weighed too
        if sorted(passed["cards"]) == sorted(passed["bot_cards"]):
            assert passed["points_lost"] == 0
    else:
        assert body["pass"] is None
    losses = [t["points_lost"] for t in body["tricks"]] + [(body["pass"] or {}).get("points_lost")]
    assert body["total_points_lost"] == pytest.approx(sum(x for x in losses if x is not None), abs=0.011)


def refused(r: Any, reason: str) -> None:
    assert r.status_code == 422, r.json()
    assert r.json()["code"] == "review_not_allowed" and r.json()["reason"] == reason, r.json()


def test_a_seat_reviews_its_own_hand_once_it_is_over_and_only_its_own_while_the_game_goes_on() -> None:
    cache.clear()
    game = Game()
    game.play_until(lambda b: b["game"]["phase"] == "playing")
    refused(game.review(game.seats[0], 1), "hand_not_over")
    refused(game.review(game.key, 1, seat=0), "hand_not_over")
    game.play_until(lambda b: b["game"]["hand_number"] == 2)
    record = game.record(1)
    for seat, token in game.seats.items():
        r = game.review(token, 1)  # their own seat by default
        assert r.status_code == 200, r.json()
        body = r.json()
        assert {k: body[k] for k in ("table_id", "hand", "seat", "level")} == {
            "table_id": game.id,
            "hand": 1,
            "seat": seat,
            "level": "basic",
        }
        check_review(body, record, seat)
        assert game.review(token, 1, seat=seat).json() == body
        refused(game.review(token, 1, seat=(seat + 1) % 4), "not_your_seat")
    refused(game.review(game.spectator, 1, seat=0), "not_your_seat")
    refused(game.review(game.key, 1, seat=0), "not_your_seat")
    refused(game.review(game.seats[0], 2), "hand_not_over")
    # Refusals of the request itself.
    assert game.review(game.key, 1).json()["code"] == "invalid_seat"  # an app has no seat of its own
    assert game.review(game.seats[0], 1, seat=4).json()["code"] == "invalid_seat"
    assert game.review(game.seats[0], 1, level="random").json()["code"] == "invalid_bot_level"
    assert game.review(game.seats[0], 9).status_code == 404
    other_app_key = app_create(name="other")[1]
    assert game.review(other_app_key, 1, seat=0).status_code == 404


def test_after_the_game_every_reader_reviews_every_seat_over_rest_and_graphql() -> None:
    cache.clear()
    game = Game(hands=1)
    assert game.play_until(lambda b: False)["status"] == "finished"
    record = game.record(1)
    narrow = key_create(game.app, name="reader", scopes=[Scope.tables_read])[1]
    none = key_create(game.app, name="bots only", scopes=[Scope.bots_read])[1]
    query = (
        "query($id: Int!, $seat: Int) { table(id: $id) { hand(number: 1) { "
        f"review(seat: $seat, level: basic) {{ {REVIEW_FIELDS} }} }} }} }}"
    )
    for seat in range(4):
        answers = []
        for token in [*game.tokens, game.spectator, game.key, narrow]:
            r = game.review(token, 1, seat=seat)
            assert r.status_code == 200, r.json()
            answers.append(r.json())
            data = gql(query, token, id=game.id, seat=seat)
            assert "errors" not in data, data
            answered = data["data"]["table"]["hand"]["review"]
            assert answered["tricks"] == [
                {
                    "trick": t["trick"],
                    "card": t["card"],
                    "botCard": t["bot_card"],
                    "pointsLost": t["points_lost"],
                }
                for t in r.json()["tricks"]
            ]
            assert answered["totalPointsLost"] == r.json()["total_points_lost"]
        assert all(a == answers[0] for a in answers)
        check_review(answers[0], record, seat)
        r = game.review(none, 1, seat=seat)
        assert r.status_code == 403 and r.json()["code"] == "missing_scope"


def test_graphql_refuses_with_the_rest_codes() -> None:
    cache.clear()
    game = Game()
    game.play_until(lambda b: b["game"]["hand_number"] == 2)
    query = (
        "query($id: Int!, $seat: Int) { table(id: $id) { hand(number: 1) { review(seat: $seat) { seat } } } }"
    )
    body = gql(query, game.seats[0], id=game.id, seat=1)
    assert body["data"]["table"]["hand"]["review"] is None
    (error,) = body["errors"]
    assert (
        error["extensions"]["code"] == "review_not_allowed"
        and error["extensions"]["reason"] == "not_your_seat"
    )
    mine = gql(query, game.seats[0], id=game.id)["data"]["table"]["hand"]["review"]
    assert mine == {"seat": 0}


@override_settings(REVIEW_THINK_MS=0)
def test_the_same_review_answers_the_same_and_is_computed_once() -> None:
    cache.clear()
    game = Game()
    game.play_until(lambda b: b["game"]["hand_number"] == 2)
    first = game.review(game.seats[2], 1, level="strong").json()
    table = Table.objects.get(pk=game.id)
    assert review.compute(table, 1, 2, "strong", None) == first  # seeded: computed again, the same
    calls = []
    real = advice.estimates

    def counted(*args: Any, **kwargs: Any) -> advice.Advice:
        calls.append(1)
        return real(*args, **kwargs)

    advice.estimates = counted
    try:
        assert game.review(game.seats[2], 1, level="strong").json() == first
    finally:
        advice.estimates = real
    assert calls == []  # answered from the cache


def test_each_estimate_is_made_from_the_seats_view_at_that_decision_only() -> None:
    """The views the estimator is given are exactly the engine's view of the seat just before each
    of its actions (replayed independently here), and hold no card another seat held unseen."""
    cache.clear()
    game = Game()
    game.play_until(lambda b: b["game"]["hand_number"] == 2)
    table = Table.objects.get(pk=game.id)
    seen: list[dict[str, Any]] = []
    real = advice.estimates

    def recorded(v: dict[str, Any], *args: Any, **kwargs: Any) -> advice.Advice:
        seen.append(v)
        return real(v, *args, **kwargs)

    advice.estimates = recorded
    try:
        review.compute(table, 1, 3, "basic")
    finally:
        advice.estimates = real
    moves = client(game.tokens[0]).get(f"/api/v1/tables/{game.id}/moves").json()["moves"]
    state = State.new_game(Options.from_dict(table.options), table.seed, table=str(table.pk))
    expected = []
    for move in moves:
        if move["kind"] not in ("pass", "play", "moon"):
            continue
        if move["hand"] > 1:
            break
        if move["position"] == 3 and move["kind"] != "moon":  # (a moon choice is not reviewed)
            expected.append(view(state, 3))
            hidden = {c for s in range(4) if s != 3 for c in names(state.hands[s])}
            hidden -= set(names(state.passes[3])) if state.passes[3] else set()
            shown = {k: v for k, v in expected[-1].items() if k != "options"}
            assert not set(TOKEN.findall(json.dumps(shown))) & hidden
        state.push(move["position"], action_from_dict(move["payload"]))
    assert seen == expected and len(seen) == 14  # its pass and its thirteen cards


def test_computations_are_rate_limited_and_a_slow_lane_answers_service_unavailable(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.clear()
    game = Game(hands=1)
    game.play_until(lambda b: False)
    settings.RATE_LIMITS_ENABLED, settings.REVIEW_RATE = True, "2/minute"
    # the limit counts in fixed minutes: these requests in the middle of one (they straddled a
    # minute's end once, in a CI, and the fourth was counted afresh)
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: 1_800_000_030.0))
    assert game.review(game.seats[0], 1, seat=0).status_code == 200
    assert game.review(game.seats[0], 1, seat=1).status_code == 200
    assert game.review(game.seats[0], 1, seat=0).status_code == 200  # kept: not computed, not counted
    r = game.review(game.seats[0], 1, seat=2)
    assert r.status_code == 429 and r.json()["limit"] == "review" and int(r["Retry-After"]) >= 1
    assert game.review(game.seats[1], 1, seat=2).status_code == 200  # another caller's own count
    settings.RATE_LIMITS_ENABLED = False
    # The lane has not answered within REVIEW_WAIT_SECONDS: the caller is told to come back.
    settings.REVIEW_WAIT_SECONDS = 0.2
    monkeypatch.setattr(review.jobs, "review_hand", lambda *args, **kwargs: None)
    r = game.review(game.seats[0], 1, seat=3)
    assert r.status_code == 503 and r.json()["code"] == "service_unavailable" and r.json()["retry_after"] >= 1
    review.store(game.id, 1, 3, "basic")  # the lane's work, done later
    assert game.review(game.seats[0], 1, seat=3).status_code == 200


def test_the_python_sdk_reviews_a_hand_and_raises_the_refusals_code() -> None:
    """`tables.review` of clients/python, sync, through the service in this process."""
    cache.clear()
    game = Game()
    game.play_until(lambda b: b["game"]["hand_number"] == 2)

    def served(request: httpx.Request) -> httpx.Response:
        """The SDK's request answered by the service through Django's test client (in this process
        and this test's transaction)."""
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        answer = Client().generic(request.method, str(request.url), request.content, headers=headers)
        return httpx.Response(answer.status_code, headers=dict(answer.headers), content=answer.content)

    def sdk(token: str) -> HeartsClient:
        http = httpx.Client(transport=httpx.MockTransport(served))
        return HeartsClient("http://testserver", token, retry=Retry(attempts=1), http=http)

    mine = sdk(game.seats[1]).tables.review(game.id, 1, level="basic")
    assert mine == game.review(game.seats[1], 1).json()
    assert sdk(game.seats[1]).tables.review(game.id, 1, seat=1, level="basic") == mine
    with pytest.raises(HeartsError) as refused_by_sdk:
        sdk(game.seats[1]).tables.review(game.id, 1, seat=2)
    assert refused_by_sdk.value.code == "review_not_allowed" and refused_by_sdk.value.status == 422
