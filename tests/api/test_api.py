"""The REST API end to end: whole games over HTTP, hidden information, access, versions, errors."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
import random
import re
from typing import Any

import pytest
from rest_framework.test import APIClient

from games.accounts import app_create
from games.engine import Options, deal, state_from_dict
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
            for log in ("moves", "events"):  # entries of finished hands are public
                if log in scrubbed:
                    scrubbed[log] = [m for m in scrubbed[log] if m["hand"] >= self.hand_number]
            if isinstance(scrubbed.get("record"), dict):
                scrubbed.pop("record")  # a finished hand's record (checked to be finished below)
        leaked = set(TOKEN.findall(json.dumps(scrubbed))) & self.by_seat[seat]
        assert not leaked, f"seat {seat} was shown {leaked}"


def own_cards(record: dict[str, Any], seat: int) -> set[str]:
    """The cards `seat` held at some time in a finished hand (its record): dealt, and received."""
    received = {c for p in record["passes"] if p["to"] == seat for c in p["cards"]}
    return set(record["dealt"][seat]) | received


def check_review_shows_its_seat_only(body: dict[str, Any], record: dict[str, Any], seat: int) -> None:
    """A hand review names only cards its seat held in that hand: its own pass and plays, and the
    bot's choices among its own cards (games/services/review.py)."""
    assert body["seat"] == seat and body["hand"] == record["hand"]
    named = set(TOKEN.findall(json.dumps(body)))
    assert named <= own_cards(record, seat), f"review of seat {seat} names {named - own_cards(record, seat)}"
    assert len(body["tricks"]) == len(record["tricks"])


def choose(game: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    legal = game["legal_actions"]
    if legal["type"] == "pass":
        return {"type": "pass", "cards": rng.sample(legal["from"], legal["count"])}
    if legal["type"] == "moon":
        return {"type": "moon", "choice": rng.choice(legal["choices"])}
    return {"type": "play", "card": rng.choice(legal["cards"])}


@pytest.mark.parametrize(
    ("players", "variant"),
    [(3, "classic"), (4, "classic"), (5, "omnibus"), (6, "cancellation"), (7, "classic")],
)
def test_whole_game_over_http_never_shows_a_player_another_seats_cards(players: int, variant: str) -> None:
    rng = random.Random(players)
    people = [guest(f"p{i}") for i in range(players)]
    first = client(people[0][1])
    r = first.post(
        "/api/v1/tables",
        {"options": {"players": players, "variant": variant, "target_score": 50}, "hints": True},
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
    events: dict[int, list[dict[str, Any]]] = {seat: [] for seat in seats}

    def poll(seat: int, secrets: Secrets, replay: bool = False) -> dict[str, Any]:
        """One client's poll: its view of the table, then alternately the moves or the events
        since it last looked, and (when a phase ended) the current hand's replay; every answer
        crawled."""
        token = seats[seat]
        r = client(token).get(f"/api/v1/tables/{table_id}")
        assert r.status_code == 200
        secrets.check(r.json(), seat)
        hint(seat, secrets, r.json())
        turns = client(token).get("/api/v1/me/turns")  # the player's turns (correspondence lists)
        assert turns.status_code == 200
        secrets.check(turns.json(), seat)
        log = "events" if (seat + len(events[seat])) % 2 else "moves"
        page = client(token).get(f"/api/v1/tables/{table_id}/{log}?after={last_seen[seat]}").json()
        secrets.check(page, seat)
        if log == "events":
            events[seat] += page["events"]
        last_seen[seat] = page["version"]
        if replay:
            hand = r.json()["game"]["hand_number"]
            record = client(token).get(f"/api/v1/tables/{table_id}/hands/{hand}").json()
            assert (record["record"] is None) == (not record["finished"])
            secrets.check(record, seat)
            reviews(seat, secrets, r.json())
        return r.json()

    def hint(seat: int, secrets: Secrets, body: dict[str, Any]) -> None:
        """A hint (games/services/hints.py, the table allows them): the seat to act gets one naming
        its own cards only, the others `not_your_turn`; each answer and refusal crawled."""
        r = client(seats[seat]).get(f"/api/v1/tables/{table_id}/hint?level=basic")
        game = body["game"]
        if game is not None and game["legal_actions"] is not None:
            assert r.status_code == 200, r.json()
            named = {
                c
                for o in r.json()["options"]
                for c in [o["action"].get("card"), *o["action"].get("cards", [])]
            }
            assert named - {None} <= set(game["hand"]), "a hint named a card the seat does not hold"
        else:
            assert r.status_code == 422, r.json()
        secrets.check(r.json(), seat)

    def reviews(seat: int, secrets: Secrets, body: dict[str, Any]) -> None:
        """Hand reviews (games/services/review.py): the hand in play is refused, the last finished
        one shows its own seat only while the game goes on, and every seat after it; each answer
        and refusal crawled."""
        token, hand, over = seats[seat], body["game"]["hand_number"], body["status"] == "finished"
        url = f"/api/v1/tables/{table_id}/hands/%d/review?level=basic&seat=%d"
        if not over:
            r = client(token).get(url % (hand, seat))
            assert r.status_code == 422 and r.json()["reason"] == "hand_not_over", r.json()
            secrets.check(r.json(), seat)
        done = hand if over else hand - 1
        if done < 1:
            return
        record = client(token).get(f"/api/v1/tables/{table_id}/hands/{done}").json()["record"]
        for target in range(players) if over else (seat, (seat + 1) % players):
            r = client(token).get(url % (done, target))
            if over or target == seat:
                assert r.status_code == 200, r.json()
                check_review_shows_its_seat_only(r.json(), record, target)
            else:
                assert r.status_code == 422 and r.json()["reason"] == "not_your_seat", r.json()
                secrets.check(r.json(), seat)

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
        phase_ended = game["phase"] != mine["game"]["phase"] or r.json()["status"] == "finished"
        if not game["trick"] or phase_ended:
            views = {s: poll(s, after, replay=phase_ended) for s in seats}
        else:
            views = {s: {"status": r.json()["status"], "game": game} for s in seats}
    sheet = client(seats[0]).get(f"/api/v1/tables/{table_id}/scoresheet").json()["hands"]
    assert sheet[-1]["totals"] == any_view["game"]["scores"]
    assert any_view["game"]["winners"]
    # Every hand's seed is revealed and matches the commitment published when it was dealt, and
    # the seed re-deals exactly the recorded deal.
    hands = client(seats[0]).get(f"/api/v1/tables/{table_id}/hands").json()["hands"]
    assert len(hands) == len(sheet) and all(h["finished"] for h in hands)
    opts = Options.from_dict(any_view["options"])
    for h in hands:
        assert hashlib.sha256(f"{table_id}:{h['seed']}".encode()).hexdigest() == h["deal_commitment"]
        record = client(seats[0]).get(f"/api/v1/tables/{table_id}/hands/{h['number']}").json()["record"]
        dealt, _ = deal(opts, h["seed"])
        assert record["dealt"] == [names(m) for m in dealt]


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
def test_events_after_a_sequence_number_page_through_a_whole_game_once() -> None:
    """Polling /events with after = the previous answer's version sees each event exactly once:
    a seat's own deals and passes, everyone's plays, and the end of the game."""
    players = [guest(f"e{i}") for i in range(4)]
    table = (
        client(players[0][1])
        .post("/api/v1/tables", {"options": {"target_score": 50}, "bots": {}}, format="json")
        .json()["id"]
    )
    for _, token in players:
        client(token).post(f"/api/v1/tables/{table}/join", {}, format="json")
    seats = {client(t).get(f"/api/v1/tables/{table}").json()["your_seat"]: t for _, t in players}
    rng = random.Random(5)
    seen: list[dict[str, Any]] = []
    after = 0
    while True:
        body = client(seats[0]).get(f"/api/v1/tables/{table}").json()
        if body["status"] == "finished":
            break
        seat = rng.choice(body["game"]["to_act"])
        mine = client(seats[seat]).get(f"/api/v1/tables/{table}").json()
        client(seats[seat]).post(f"/api/v1/tables/{table}/actions", choose(mine["game"], rng), format="json")
        if rng.random() < 0.2:
            page = client(seats[0]).get(f"/api/v1/tables/{table}/events?after={after}").json()
            seen += page["events"]
            after = page["version"]
    page = client(seats[0]).get(f"/api/v1/tables/{table}/events?after={after}").json()
    seen += page["events"]
    everything = client(seats[0]).get(f"/api/v1/tables/{table}/events").json()["events"]
    assert seen == everything
    seqs = [e["seq"] for e in seen]
    assert seqs == sorted(seqs)
    kinds = [e["type"] for e in seen]
    hands = kinds.count("hand_started")
    assert kinds.count("cards_dealt") == hands  # only seat 0's own deal
    assert all(e["seat"] == 0 for e in seen if e["type"] in ("cards_dealt", "cards_passed", "cards_received"))
    assert kinds.count("card_played") == 52 * hands and kinds.count("hand_scored") == hands
    assert kinds[-2:] == ["game_over", "table_finished"] and kinds[0] == "seat_taken"


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


def _full_table(n: int = 4, app_key: str | None = None) -> tuple[int, dict[int, str]]:
    """A started table of guests (or of an app's players); its seats' tokens by position."""
    if app_key:
        tokens = [
            client(app_key).post("/api/v1/players", {"name": f"u{i}"}, format="json").json()["token"]
            for i in range(n)
        ]
    else:
        tokens = [guest(f"p{i}")[1] for i in range(n)]
    creator = client(app_key or tokens[0])
    table = creator.post("/api/v1/tables", {"options": {"players": n}}, format="json").json()["id"]
    for token in tokens:
        assert client(token).post(f"/api/v1/tables/{table}/join", {}, format="json").status_code == 200
    return table, {client(t).get(f"/api/v1/tables/{table}").json()["your_seat"]: t for t in tokens}


def test_stale_version_and_idempotent_retry_over_http() -> None:
    table, seats = _full_table()
    me = client(seats[0])
    view = me.get(f"/api/v1/tables/{table}").json()
    cards = view["game"]["hand"][:3]
    url = f"/api/v1/tables/{table}/actions"
    r = me.post(url, {"type": "pass", "cards": cards}, format="json", HTTP_IF_MATCH="1")
    assert r.status_code == 409 and r.json()["code"] == "stale_version"
    assert r.json()["version"] == view["version"]
    first = me.post(url, {"type": "pass", "cards": cards}, format="json", HTTP_IDEMPOTENCY_KEY="abc")
    # Another seat passes in between: the retry still answers exactly what the first request did.
    other_seat = client(seats[1]).get(f"/api/v1/tables/{table}").json()["game"]["hand"][:3]
    client(seats[1]).post(url, {"type": "pass", "cards": other_seat}, format="json")
    again = me.post(url, {"type": "pass", "cards": cards}, format="json", HTTP_IDEMPOTENCY_KEY="abc")
    assert first.status_code == again.status_code == 200
    assert first.content == again.content
    assert (first["Idempotent-Replayed"], again["Idempotent-Replayed"]) == ("false", "true")
    assert me.get(f"/api/v1/tables/{table}").json()["version"] == view["version"] + 2
    other = view["game"]["hand"][3:6]
    r = me.post(url, {"type": "pass", "cards": other}, format="json", HTTP_IDEMPOTENCY_KEY="abc")
    assert r.status_code == 409 and r.json()["code"] == "idempotency_key_reused"
    r = me.post(url, {"type": "pass", "cards": other}, format="json", HTTP_IDEMPOTENCY_KEY="x" * 129)
    assert r.status_code == 400 and r.json()["code"] == "invalid_idempotency_key"


def test_a_retried_create_makes_one_table_and_answers_the_same_bytes() -> None:
    _, token = guest("g")
    body = {"options": {"players": 4}, "bots": {"1": "basic"}}
    first = client(token).post("/api/v1/tables", body, format="json", HTTP_IDEMPOTENCY_KEY="t1")
    again = client(token).post("/api/v1/tables", body, format="json", HTTP_IDEMPOTENCY_KEY="t1")
    assert first.status_code == again.status_code == 201 and first.content == again.content
    assert Table.objects.count() == 1
    r = client(token).post("/api/v1/tables", {"options": {}}, format="json", HTTP_IDEMPOTENCY_KEY="t1")
    assert r.status_code == 409 and r.json()["code"] == "idempotency_key_reused"


def test_a_player_acts_only_for_their_own_seat_and_sees_only_their_own_hand() -> None:
    _, key = app_create(name="app")
    table, seats = _full_table(4, app_key=key)
    views = {s: client(t).get(f"/api/v1/tables/{table}").json() for s, t in seats.items()}
    secrets = Secrets(table)
    for s, v in views.items():
        assert v["your_seat"] == s and len(v["game"]["hand"]) == 13
        secrets.check(v, s)
    # Seat 1 cannot pass seat 0's cards: the action is for the caller's own seat only.
    r = client(seats[1]).post(
        f"/api/v1/tables/{table}/actions",
        {"type": "pass", "cards": views[0]["game"]["hand"][:3]},
        format="json",
    )
    assert r.status_code == 422 and r.json()["code"] == "bad_pass"
    # A player of the same app who is not seated may look (as a spectator) but not act.
    outsider = client(key).post("/api/v1/players", {"name": "o"}, format="json").json()["token"]
    watch = client(outsider).get(f"/api/v1/tables/{table}").json()
    assert watch["your_seat"] is None and "hand" not in watch["game"]
    r = client(outsider).post(
        f"/api/v1/tables/{table}/actions", {"type": "play", "card": "2C"}, format="json"
    )
    assert r.status_code == 422 and r.json()["code"] == "not_seated"
    # The app itself sees the table as a spectator and cannot act for a seat.
    app_view = client(key).get(f"/api/v1/tables/{table}").json()
    assert app_view["your_seat"] is None and "hand" not in app_view["game"]
    r = client(key).post(f"/api/v1/tables/{table}/actions", {"type": "play", "card": "2C"}, format="json")
    assert r.status_code == 422 and r.json()["code"] == "player_token_required"
    # A guest is not a player of this app: the table does not exist for them.
    _, stranger = guest("s")
    for path in ("", "/moves", "/events", "/hands", "/hands/1", "/scoresheet"):
        r = client(stranger).get(f"/api/v1/tables/{table}{path}")
        assert r.status_code == 404 and r.json()["code"] == "not_found", path


def test_start_fills_open_seats_with_bots_and_clocks_set_a_deadline() -> None:
    _, token = guest("solo")
    created = (
        client(token)
        .post(
            "/api/v1/tables", {"options": {"players": 4}, "clocks": {"pass": 90, "play": None}}, format="json"
        )
        .json()
    )
    assert created["clocks"] == {"pass": 90, "play": None, "moon": 30, "away_after": 2}
    assert created["deadline"] is None
    table = created["id"]
    r = client(token).post(f"/api/v1/tables/{table}/start", {}, format="json")
    assert r.status_code == 422 and r.json()["code"] == "not_seated"
    client(token).post(f"/api/v1/tables/{table}/join", {"position": 2}, format="json")
    r = client(token).post(f"/api/v1/tables/{table}/start", {"fill_with": "strong"}, format="json")
    assert r.status_code == 200, r.json()
    body = r.json()
    assert body["status"] == "passing" and body["your_seat"] == 2
    assert [s["bot"] for s in body["seats"]] == ["strong", "strong", None, "strong"]
    deadline = dt.datetime.fromisoformat(body["deadline"])
    assert 85 < (deadline - dt.datetime.now(dt.UTC)).total_seconds() <= 90
    r = client(token).post(f"/api/v1/tables/{table}/start", {}, format="json")
    assert r.status_code == 422 and r.json()["code"] == "table_not_open"
    r = client(token).post("/api/v1/tables", {"clocks": {"play": 1}}, format="json")
    assert r.status_code == 400 and (r.json()["code"], r.json()["clock"]) == ("invalid_clock", "play")
    r = client(token).post("/api/v1/tables", {"bots": {"0": "grandmaster"}}, format="json")
    assert r.status_code == 400 and r.json()["code"] == "invalid_bot_level"


def test_an_app_can_abandon_its_table_and_nothing_more_can_be_played() -> None:
    _, key = app_create(name="ops")
    table, seats = _full_table(4, app_key=key)
    r = client(seats[0]).post(f"/api/v1/tables/{table}/abandon", format="json")
    assert r.status_code == 422 and r.json()["code"] == "app_key_required"
    r = client(key).post(f"/api/v1/tables/{table}/abandon", format="json")
    assert r.status_code == 200 and r.json()["status"] == "abandoned" and r.json()["deadline"] is None
    hand = client(seats[0]).get(f"/api/v1/tables/{table}").json()["game"]["hand"]
    r = client(seats[0]).post(
        f"/api/v1/tables/{table}/actions", {"type": "pass", "cards": hand[:3]}, format="json"
    )
    assert r.status_code == 422 and r.json()["code"] == "table_closed"
    r = client(key).post(f"/api/v1/tables/{table}/abandon", format="json")
    assert r.status_code == 422 and r.json()["code"] == "table_closed"


def test_table_list_filters_and_pages() -> None:
    _, key = app_create(name="lister")
    alice = client(key).post("/api/v1/players", {"name": "alice"}, format="json").json()["token"]
    ids = [client(key).post("/api/v1/tables", {}, format="json").json()["id"] for _ in range(25)]
    client(alice).post(f"/api/v1/tables/{ids[3]}/join", {}, format="json")
    client(key).post(f"/api/v1/tables/{ids[4]}/start", {}, format="json")
    page = client(key).get("/api/v1/tables").json()
    rest = client(key).get(page["next"]).json()
    assert sorted(t["id"] for t in page["results"] + rest["results"]) == ids
    assert rest["next"] is None and len(page["results"]) == 20
    mine = client(alice).get("/api/v1/tables?mine=true").json()["results"]
    assert [t["id"] for t in mine] == [ids[3]]
    playing = client(key).get("/api/v1/tables?status=passing").json()["results"]
    assert [t["id"] for t in playing] == [ids[4]]
    first = client(key).get("/api/v1/tables?open_seats=true").json()
    following = client(key).get(first["next"]).json()
    open_ids = {t["id"] for t in first["results"] + following["results"]}
    assert len(open_ids) == 24
    assert ids[4] not in open_ids and ids[3] in open_ids
    for query, code in [("status=bogus", "invalid_filter"), ("mine=maybe", "invalid_filter")]:
        r = client(key).get(f"/api/v1/tables?{query}")
        assert r.status_code == 400 and r.json()["code"] == code
    r = client(key).get("/api/v1/tables?mine=true")
    assert r.status_code == 422 and r.json()["code"] == "player_token_required"


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
