"""Protection: rate limits (429 with Retry-After naming the limit; never on a player's own turn),
request size limits, CORS, the admin, and every way one app or player could reach another's data."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from games.accounts import app_create
from games.infra import ratelimit
from games.models import Move, Table

pytestmark = pytest.mark.django_db


def client(token: str | None = None) -> APIClient:
    c = APIClient()
    if token:
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return c


def guest(name: str) -> str:
    r = client().post("/api/v1/guests", {"name": name}, format="json")
    assert r.status_code == 201, r.content
    return str(r.json()["token"])


@pytest.fixture
def limits(settings: Any) -> Iterator[dict[str, str]]:
    """Rate limits on, with counts starting from zero (in Redis when the run has it)."""
    settings.RATE_LIMITS_ENABLED = True
    settings.RATE_LIMITS = {"token": "1000/day", "app": "1000/day", "address": "1000/day"}
    ratelimit._memory.clear()
    if django_settings.REDIS_URL:
        r = redis.Redis.from_url(django_settings.REDIS_URL)
        for key in r.scan_iter("hearts:rl:*"):
            r.delete(key)
    yield settings.RATE_LIMITS


def _limited(response: Any, limit: str, rate: str) -> None:
    assert response.status_code == 429, response.content
    body = response.json()
    assert body["code"] == "rate_limited" and body["limit"] == limit and body["rate"] == rate
    assert 1 <= int(response["Retry-After"]) <= 86400 and body["retry_after"] == int(response["Retry-After"])


def test_a_token_over_its_limit_gets_429_naming_the_limit_and_others_are_unaffected(
    limits: dict[str, str],
) -> None:
    token, other = guest("busy"), guest("calm")
    limits["token"] = "5/day"
    for _ in range(5):
        assert client(token).get("/api/v1/tables").status_code == 200
    _limited(client(token).get("/api/v1/tables"), "token", "5/day")
    _limited(client(token).post("/api/v1/tables", {}, format="json"), "token", "5/day")
    assert client(other).get("/api/v1/tables").status_code == 200
    assert Table.objects.count() == 0  # the refused create changed nothing


def _fields(response: Any) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """The RateLimit-Policy (quota, window) and RateLimit (remaining, reset) members, by limit."""

    def members(value: str, a: str, b: str) -> dict[str, tuple[int, int]]:
        out = {}
        for member in value.split(","):
            name, *params = member.strip().split(";")
            values = dict(p.split("=") for p in params)
            assert set(values) == {a, b}, value
            out[json.loads(name)] = (int(values[a]), int(values[b]))
        return out

    return (
        members(response["RateLimit-Policy"], "q", "w"),
        members(response["RateLimit"], "r", "t"),
    )


def test_every_counted_answer_says_where_the_caller_stands_in_ratelimit_fields(
    limits: dict[str, str],
) -> None:
    limits["address"] = "3/minute"
    first = client().post("/api/v1/guests", {"name": "counted"}, format="json")
    policy, left = _fields(first)
    assert policy == {"address": (3, 60)} and left["address"][0] == 2 and 1 <= left["address"][1] <= 60
    token = first.json()["token"]
    limits["token"] = "4/hour"
    for remaining in (3, 2, 1, 0):
        ok = client(token).get("/api/v1/tables")
        assert ok.status_code == 200
        policy, left = _fields(ok)
        assert policy == {"token": (4, 3600)}  # a guest has no app: one limit
        assert left["token"][0] == remaining and 1 <= left["token"][1] <= 3600
    refused = client(token).get("/api/v1/tables")
    _limited(refused, "token", "4/hour")
    policy, left = _fields(refused)
    assert left["token"] == (0, int(refused["Retry-After"]))
    # An app's player counts against both limits, and both are listed.
    _, key = app_create(name="listed")
    player = client(key).post("/api/v1/players", {"name": "p"}, format="json")
    policy, left = _fields(player)
    assert policy == {"token": (4, 3600), "app": (1000, 86400)} and left["app"][0] == 999
    # A request no limit counts (a probe) carries no fields; streams: tests/streams/test_stream_tickets.py.
    assert "RateLimit" not in Client().get("/healthz")


def test_no_ratelimit_fields_while_limits_are_off(limits: dict[str, str], settings: Any) -> None:
    settings.RATE_LIMITS_ENABLED = False
    token = guest("unlimited")
    ok = client(token).get("/api/v1/tables")
    assert ok.status_code == 200 and "RateLimit" not in ok and "RateLimit-Policy" not in ok


def test_an_apps_tokens_share_the_app_limit(limits: dict[str, str]) -> None:
    _, key = app_create(name="farm")
    tokens = [
        client(key).post("/api/v1/players", {"name": f"p{i}"}, format="json").json()["token"]
        for i in range(3)
    ]
    limits["app"] = "8/day"  # the three creates above counted 3
    for i in range(5):
        assert client(tokens[i % 3]).get("/api/v1/tables").status_code == 200
    _limited(client(tokens[0]).get("/api/v1/tables"), "app", "8/day")
    _limited(client(key).get("/api/v1/tables"), "app", "8/day")


def test_guest_creation_is_limited_per_address(limits: dict[str, str]) -> None:
    limits["address"] = "3/day"
    for i in range(3):
        guest(f"g{i}")
    _limited(client().post("/api/v1/guests", {"name": "one too many"}, format="json"), "address", "3/day")
    other = APIClient(REMOTE_ADDR="10.0.0.9")
    assert other.post("/api/v1/guests", {"name": "elsewhere"}, format="json").status_code == 201
    graphql = client().post(
        "/graphql/", {"query": 'mutation { createGuest(name: "g") { token } }'}, format="json"
    )
    assert graphql.status_code == 429
    assert graphql.json()["errors"][0]["extensions"]["code"] == "rate_limited"


@pytest.mark.django_db(transaction=True)  # the bots move after each commit
def test_an_action_on_your_own_turn_is_never_limited_but_out_of_turn_it_is(limits: dict[str, str]) -> None:
    a, b = guest("a"), guest("b")
    body = {"bots": {"2": "basic", "3": "basic"}, "clocks": {"pass": None, "play": None}}
    table = client(a).post("/api/v1/tables", body, format="json").json()["id"]
    for token in (a, b):
        assert client(token).post(f"/api/v1/tables/{table}/join", {}, format="json").status_code == 200
    tokens = {client(t).get(f"/api/v1/tables/{table}").json()["your_seat"]: t for t in (a, b)}
    limits["token"] = "1/day"
    for token in tokens.values():  # over the limit now
        _limited(client(token).get(f"/api/v1/tables/{table}"), "token", "1/day")
    state = Table.objects.get(pk=table).state
    for seat, token in tokens.items():  # both pass: both are on turn while passing
        cards = _hand(table, seat)[:3]
        r = client(token).post(
            f"/api/v1/tables/{table}/actions", {"type": "pass", "cards": cards}, format="json"
        )
        assert r.status_code == 200, r.content
    plays = 0
    while plays < 8:  # the humans play on, far over the token limit, whenever it is their turn
        state = Table.objects.get(pk=table).state
        if state["phase"] != "playing":
            break
        turn = state["turn"]
        assert turn in tokens, "bots move by themselves"
        waiting = next(t for s, t in tokens.items() if s != turn)
        card = _legal(table, turn)[0]
        # The other human, out of turn, is limited (and nothing changes) ...
        _limited(
            client(waiting).post(
                f"/api/v1/tables/{table}/actions", {"type": "play", "card": card}, format="json"
            ),
            "token",
            "1/day",
        )
        # ... the one on turn never is.
        r = client(tokens[turn]).post(
            f"/api/v1/tables/{table}/actions", {"type": "play", "card": card}, format="json"
        )
        assert r.status_code == 200, r.content
        plays += 1
    assert plays == 8
    # GraphQL: a playCard on your turn goes through over the limit too.
    state = Table.objects.get(pk=table).state
    turn = state["turn"]
    query = "mutation($t: Int!, $c: String!) { playCard(tableId: $t, card: $c) { errors { code } } }"
    variables = {"t": table, "c": _legal(table, turn)[0]}
    r = client(tokens[turn]).post("/graphql/", {"query": query, "variables": variables}, format="json")
    assert r.status_code == 200 and r.json()["data"]["playCard"]["errors"] == []
    _limited_gql = client(tokens[turn]).post("/graphql/", {"query": "{ me { name } }"}, format="json")
    assert _limited_gql.status_code == 429 and _limited_gql["Retry-After"]


def _hand(table: int, seat: int) -> list[str]:
    from games.engine import state_from_dict, view

    return list(view(state_from_dict(Table.objects.get(pk=table).state), seat)["hand"])


def _legal(table: int, seat: int) -> list[str]:
    from games.engine import state_from_dict, view

    return list(view(state_from_dict(Table.objects.get(pk=table).state), seat)["legal_actions"]["cards"])


def test_limits_are_not_enforced_while_redis_is_unreachable(limits: dict[str, str], settings: Any) -> None:
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    limits["token"] = "1/day"
    token = guest("during an outage")
    for _ in range(3):
        assert client(token).get("/api/v1/tables").status_code == 200


def test_oversized_bodies_are_413_before_any_view_reads_them() -> None:
    big = json.dumps({"name": "x" * (django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)})
    for path in ("/api/v1/guests", "/graphql/"):
        r = Client().post(path, big, content_type="application/json")
        assert r.status_code == 413 and r.json()["code"] == "request_too_large", (path, r.content)
    assert not User.objects.exists() and Table.objects.count() == 0


def test_cors_allows_only_the_configured_origins(settings: Any) -> None:
    settings.CORS_ALLOWED_ORIGINS = ["https://game.example.com"]
    preflight = {
        "HTTP_ORIGIN": "https://game.example.com",
        "HTTP_ACCESS_CONTROL_REQUEST_METHOD": "POST",
        "HTTP_ACCESS_CONTROL_REQUEST_HEADERS": "authorization, idempotency-key, if-match",
    }
    r = Client().options("/api/v1/tables", **preflight)
    assert r["Access-Control-Allow-Origin"] == "https://game.example.com"
    assert "idempotency-key" in r["Access-Control-Allow-Headers"]
    assert "Access-Control-Allow-Credentials" not in r
    evil = Client().options("/api/v1/tables", **{**preflight, "HTTP_ORIGIN": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in evil
    got = Client().get("/api/v1/tables", HTTP_ORIGIN="https://game.example.com")
    assert "Retry-After" in got["Access-Control-Expose-Headers"]


def test_the_admin_is_for_staff_only(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # the test, not the hash
    assert Client().get("/admin/").status_code == 302  # to the login page
    User.objects.create_user("player", password="pw-not-staff-123")
    c = Client()
    c.login(username="player", password="pw-not-staff-123")
    assert c.get("/admin/").status_code == 302
    assert c.get("/admin/games/table/").status_code == 302
    User.objects.create_user("operator", password="pw-staff-123", is_staff=True, is_superuser=True)
    c.login(username="operator", password="pw-staff-123")
    assert c.get("/admin/games/table/").status_code == 200


# -- another app's or player's data -------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_no_endpoint_lets_another_app_or_its_players_reach_a_table() -> None:
    _, key_a = app_create(name="a")
    _, key_b = app_create(name="b")
    alice = client(key_a).post("/api/v1/players", {"name": "alice"}, format="json").json()["token"]
    bob = client(key_b).post("/api/v1/players", {"name": "bob"}, format="json").json()["token"]
    stranger = guest("guest of no app")
    body = {"bots": {"1": "basic", "2": "basic", "3": "basic"}, "clocks": {"pass": None}}
    table = client(key_a).post("/api/v1/tables", body, format="json").json()["id"]
    assert client(alice).post(f"/api/v1/tables/{table}/join", {}, format="json").status_code == 200
    before = Table.objects.get(pk=table)
    moves = Move.objects.filter(table=table).count()
    t = f"/api/v1/tables/{table}"
    reads = [t, f"{t}/scoresheet", f"{t}/moves", f"{t}/events", f"{t}/hands", f"{t}/hands/1"]
    writes: list[tuple[str, dict[str, Any]]] = [
        (f"{t}/join", {}),
        (f"{t}/leave", {}),
        (f"{t}/bots", {"level": "basic"}),
        (f"{t}/start", {}),
        (f"{t}/abandon", {}),
        (f"{t}/back", {}),
        (f"{t}/actions", {"type": "pass", "cards": ["2C", "3C", "4C"]}),
    ]
    for intruder in (key_b, bob, stranger):
        for path in reads:
            r = client(intruder).get(path)
            assert (r.status_code, r.json()["code"]) == (404, "not_found"), (path, r.content)
        for path, data in writes:
            r = client(intruder).post(path, data, format="json")
            assert r.status_code in (404, 422), (path, r.content)  # 422: app_key/player_token_required
            assert "not_found" in r.json()["code"] or r.json()["code"].endswith("_required"), r.content
        assert table not in [x["id"] for x in client(intruder).get("/api/v1/tables").json()["results"]]
        for query in (
            "query($id: Int!) { table(id: $id) { id version game { hand } } }",
            "mutation($id: Int!) { joinTable(tableId: $id) { errors { code } } }",
            'mutation($id: Int!) { passCards(tableId: $id, cards: ["2C", "3C", "4C"]) { errors { code } } }',
            "mutation($id: Int!) { abandonTable(tableId: $id) { errors { code } } }",
        ):
            r = client(intruder).post(
                "/graphql/", {"query": query, "variables": {"id": table}}, format="json"
            )
            data = r.json().get("data") or {}
            field = next(iter(data.values()), None)
            code = None if field is None else field["errors"][0]["code"]
            assert code is None or code == "not_found" or code.endswith("_required"), r.content
    after = Table.objects.get(pk=table)
    assert (after.version, after.status) == (before.version, before.status)
    assert Move.objects.filter(table=table).count() == moves


def _gql(body: dict[str, Any], token: str | None = None) -> Any:
    return client(token).post("/graphql/", body, format="json")


def test_no_single_request_does_more_than_the_remaining_allowance(limits: dict[str, str]) -> None:
    """GraphQL aliases run an operation many times in one request: each root field executed
    counts once, so a request can never do more than the caller has left (REST: one request, one
    operation). Nothing beyond the allowance is done: no guest is created past it."""
    from games.models import Player

    limits["address"] = "5/day"
    guest("first")  # REST: one request, one operation (4 left)
    aliases = " ".join(f'g{i}: createGuest(name: "g{i}") {{ token }}' for i in range(20))
    r = _gql({"query": f"mutation {{ {aliases} }}"})
    assert r.status_code == 200, r.content
    created = [v for v in r.json()["data"].values() if v is not None]
    refused = [e for e in r.json()["errors"] if e["extensions"]["code"] == "rate_limited"]
    assert len(created) == 4 and len(refused) == 16
    assert Player.objects.count() == 5
    # Over the limit, every transport refuses at once, and nothing more is created.
    r = _gql({"query": 'mutation { createGuest(name: "late") { token } }'})
    assert r.status_code == 429 and r["Retry-After"]
    assert r.json()["errors"][0]["extensions"]["code"] == "rate_limited"
    _limited(client().post("/api/v1/guests", {"name": "late"}, format="json"), "address", "5/day")
    assert Player.objects.count() == 5

    # A token: three reads left of five, ten aliased reads in one request do three of them.
    limits["address"] = "1000/day"
    token = guest("reader")
    limits["token"] = "5/day"
    for _ in range(2):
        assert client(token).get("/api/v1/tables").status_code == 200
    reads = " ".join(f"t{i}: table(id: 1) {{ id }}" for i in range(10))
    r = _gql({"query": f"{{ {reads} }}"}, token)
    assert r.status_code == 200  # some ran
    limited = {e["path"][0] for e in r.json()["errors"] if e["extensions"]["code"] == "rate_limited"}
    assert len(limited) == 7 and len(r.json()["errors"]) == 7
    # An invalid request counts too (as a REST request does) and, over the limit, is a 429.
    r = _gql({"query": "{ nothing }"}, token)
    assert r.status_code == 429


def test_aliases_are_capped(limits: dict[str, str]) -> None:
    aliases = " ".join(f'g{i}: createGuest(name: "g{i}") {{ token }}' for i in range(31))
    r = _gql({"query": f"mutation {{ {aliases} }}"})
    assert r.status_code == 400
    assert r.json()["errors"][0]["extensions"] == {"code": "too_many_aliases", "limit": 30, "aliases": 31}


def test_graphql_answers_carry_the_ratelimit_fields_too(limits: dict[str, str]) -> None:
    token = guest("graphql")
    limits["token"] = "3/hour"
    seen = []
    for _ in range(3):
        answer = Client().post(
            "/graphql/",
            {"query": "query { me { kind } }"},
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        assert answer.status_code == 200 and "errors" not in answer.json()
        policy, left = _fields(answer)
        assert policy == {"token": (3, 3600)}
        seen.append(left["token"][0])
    assert seen == [2, 1, 0]
    refused = Client().post(
        "/graphql/",
        {"query": "query { me { kind } }"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert refused.status_code == 429
    assert _fields(refused)[1]["token"] == (0, int(refused["Retry-After"]))
