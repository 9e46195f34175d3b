"""The REST API end to end: whole games over HTTP, hidden information, access, versions, errors."""

from __future__ import annotations

import itertools
import json
import random
import re
from typing import Any

import pytest
from rest_framework.test import APIClient

from games.accounts import app_create
from games.engine import state_from_dict
from games.engine.cards import card_name, names
from games.models import Table

pytestmark = pytest.mark.django_db
TOKEN = re.compile(r"\b(?:10|[2-9TJQKA])[CDSH]\b")


def client(token: str | None = None) -> APIClient:
    c = APIClient()
    if token:
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return c


def guest(name: str) -> tuple[int, str]:
    r = client().post("/api/v1/guests", {"name": name}, format="json")
    assert r.status_code == 201
    return r.json()["player"]["id"], r.json()["token"]


class Secrets:
    """For each seat, the card tokens it may not see right now: cards still held by other seats
    (less the ones it passed them) and, while passing, other seats' passes. Built from the stored
    state once per change, then checked against every response body a player receives."""

    def __init__(self, table_id: int) -> None:
        table = Table.objects.get(pk=table_id)
        self.hand_number = table.hand_number
        self.by_seat: dict[int, set[str]] = {}
        if table.state is None:
            return
        state = state_from_dict(table.state)
        n = state.options.players
        played = {card_name(c) for _, cards, _ in state.tricks for c in cards} | {
            card_name(c) for c in state.trick
        }
        for seat in range(n):
            own = set(names(state.hands[seat]))
            known = set(names(state.passes[seat])) if state.passes[seat] else set()
            secret = {c for s in range(n) if s != seat for c in names(state.hands[s])} - known
            if state.options.two_packs:  # a twin of a played or own card may show: compare the rest
                secret -= played | own
            if state.phase == "passing":
                secret |= {c for s in range(n) if s != seat for c in names(state.passes[s])} - own
            self.by_seat[seat] = secret

    def check(self, body: Any, seat: int) -> None:
        """No secret of `seat` in `body`; finished hands' records and moves are public, and the
        Omnibus option names a card ("JD") without revealing who holds it."""
        if seat not in self.by_seat:
            return
        scrubbed = json.loads(json.dumps(body))
        if isinstance(scrubbed, dict):
            scrubbed.pop("options", None)
            if isinstance(scrubbed.get("game"), dict):
                scrubbed["game"].pop("previous_hands", None)
                scrubbed["game"].pop("options", None)
            if "moves" in scrubbed:
                scrubbed["moves"] = [m for m in scrubbed["moves"] if m["hand"] >= self.hand_number]
        leaked = set(TOKEN.findall(json.dumps(scrubbed))) & self.by_seat[seat]
        assert not leaked, f"seat {seat} was shown {leaked}"


def choose(game: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    legal = game["legal_actions"]
    if legal["type"] == "pass":
        return {"type": "pass", "cards": rng.sample(legal["from"], legal["count"])}
    if legal["type"] == "moon":
        return {"type": "moon", "choice": rng.choice(legal["choices"])}
    return {"type": "play", "card": rng.choice(legal["cards"])}


@pytest.mark.parametrize(
    ("players", "variant"), [(3, "classic"), (4, "classic"), (5, "omnibus"), (6, "cancellation")]
)
def test_whole_game_over_http_never_shows_a_player_another_seats_cards(players: int, variant: str) -> None:
    rng = random.Random(players)
    people = [guest(f"p{i}") for i in range(players)]
    first = client(people[0][1])
    r = first.post(
        "/api/v1/tables",
        {"options": {"players": players, "variant": variant, "target_score": 50}},
        format="json",
    )
    assert r.status_code == 201, r.json()
    table_id = r.json()["id"]
    for _, token in people:
        r = client(token).post(f"/api/v1/tables/{table_id}/join", {}, format="json")
        assert r.status_code == 200, r.json()
    seats = {}
    for _, token in people:
        body = client(token).get(f"/api/v1/tables/{table_id}").json()
        seats[body["your_seat"]] = token
    assert sorted(seats) == list(range(players))
    last_seen = dict.fromkeys(seats, 0)

    def poll(seat: int, secrets: Secrets) -> dict[str, Any]:
        """One client's poll: its view of the table and the moves since it last looked, crawled."""
        token = seats[seat]
        r = client(token).get(f"/api/v1/tables/{table_id}")
        assert r.status_code == 200
        secrets.check(r.json(), seat)
        moves = client(token).get(f"/api/v1/tables/{table_id}/moves?after={last_seen[seat]}").json()
        secrets.check(moves, seat)
        last_seen[seat] = moves["version"]
        return r.json()

    # Every seat polls whenever a trick or a phase ends; between, the seat to act polls before
    # acting. Every response any of them receives is crawled.
    views = {seat: poll(seat, Secrets(table_id)) for seat in seats}
    for _ in itertools.count():
        any_view = views[0]
        if any_view["status"] == "finished":
            break
        seat = rng.choice(any_view["game"]["to_act"])
        secrets = Secrets(table_id)
        mine = poll(seat, secrets)
        action = choose(mine["game"], rng)
        r = client(seats[seat]).post(
            f"/api/v1/tables/{table_id}/actions", action, format="json", HTTP_IF_MATCH=str(mine["version"])
        )
        assert r.status_code == 200, r.json()
        after = Secrets(table_id)
        after.check(r.json(), seat)
        game = r.json()["game"]
        if not game["trick"] or game["phase"] != mine["game"]["phase"] or r.json()["status"] == "finished":
            views = {s: poll(s, after) for s in seats}
        else:
            views = {s: {"status": r.json()["status"], "game": game} for s in seats}
    sheet = client(seats[0]).get(f"/api/v1/tables/{table_id}/scoresheet").json()["hands"]
    assert sheet[-1]["totals"] == any_view["game"]["scores"]
    assert any_view["game"]["winners"]


def test_credentials_are_required_and_checked() -> None:
    assert client().get("/api/v1/tables").status_code == 401
    r = client("hk_player_nonsense").get("/api/v1/tables")
    assert r.status_code == 401 and r.json()["code"] == "authentication_failed"
    _, token = guest("g")
    assert client(token).post("/api/v1/tokens/revoke").status_code == 204
    assert client(token).get("/api/v1/tables").status_code == 401


def test_an_app_sees_only_its_own_tables_and_players() -> None:
    _, key_a = app_create(name="a")
    _, key_b = app_create(name="b")
    r = client(key_a).post("/api/v1/players", {"name": "alice", "external_id": "u1"}, format="json")
    assert r.status_code == 201
    alice = r.json()["token"]
    table = client(key_a).post("/api/v1/tables", {"options": {"players": 4}}, format="json").json()["id"]
    assert client(key_b).get(f"/api/v1/tables/{table}").status_code == 404  # never 403
    assert client(key_b).get(f"/api/v1/tables/{table + 10_000}").status_code == 404
    assert table not in [t["id"] for t in client(key_b).get("/api/v1/tables").json()["results"]]
    assert client(alice).get(f"/api/v1/tables/{table}").status_code == 200
    _, stranger = guest("stranger")
    assert client(stranger).post(f"/api/v1/tables/{table}/join", {}, format="json").status_code == 404


def test_stale_version_and_idempotent_retry_over_http() -> None:
    people = [guest(f"p{i}") for i in range(4)]
    table = client(people[0][1]).post("/api/v1/tables", {"options": {}}, format="json").json()["id"]
    for _, token in people:
        client(token).post(f"/api/v1/tables/{table}/join", {}, format="json")
    me = client(people[0][1])
    view = me.get(f"/api/v1/tables/{table}").json()
    cards = view["game"]["hand"][:3]
    r = me.post(
        f"/api/v1/tables/{table}/actions", {"type": "pass", "cards": cards}, format="json", HTTP_IF_MATCH="1"
    )
    assert (
        r.status_code == 409
        and r.json()["code"] == "stale_version"
        and r.json()["version"] == view["version"]
    )
    first = me.post(
        f"/api/v1/tables/{table}/actions",
        {"type": "pass", "cards": cards},
        format="json",
        HTTP_IDEMPOTENCY_KEY="abc",
    )
    again = me.post(
        f"/api/v1/tables/{table}/actions",
        {"type": "pass", "cards": cards},
        format="json",
        HTTP_IDEMPOTENCY_KEY="abc",
    )
    assert first.status_code == again.status_code == 200
    assert (first.json()["replayed"], again.json()["replayed"]) == (False, True)
    assert again.json()["version"] == first.json()["version"]
    other = view["game"]["hand"][3:6]
    r = me.post(
        f"/api/v1/tables/{table}/actions",
        {"type": "pass", "cards": other},
        format="json",
        HTTP_IDEMPOTENCY_KEY="abc",
    )
    assert r.status_code == 409 and r.json()["code"] == "idempotency_key_reused"


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"type": "play", "card": "ZZ"}, 400, "invalid_card"),
        ({"type": "dance"}, 400, "invalid_action"),
        ({"type": "pass", "cards": ["2C"]}, 422, "bad_pass"),
        ({"type": "play", "card": "2C"}, 422, "wrong_phase"),
        ([1, 2, 3], 400, "invalid_action"),
    ],
)
def test_errors_have_one_shape_and_the_engine_codes(body: Any, status: int, code: str) -> None:
    people = [guest(f"p{i}") for i in range(4)]
    table = client(people[0][1]).post("/api/v1/tables", {"options": {}}, format="json").json()["id"]
    for _, token in people:
        client(token).post(f"/api/v1/tables/{table}/join", {}, format="json")
    r = client(people[0][1]).post(f"/api/v1/tables/{table}/actions", body, format="json")
    assert r.status_code == status and r.json()["code"] == code and r.json()["detail"]


def test_malformed_json_and_bad_options_are_400_with_a_code() -> None:
    _, token = guest("g")
    r = client(token).post("/api/v1/tables", "{not json", content_type="application/json")
    assert r.status_code == 400 and r.json()["code"] == "malformed_request"
    r = client(token).post("/api/v1/tables", {"options": {"players": 2}}, format="json")
    assert r.status_code == 400 and r.json()["code"] == "invalid_option" and r.json()["option"] == "players"
