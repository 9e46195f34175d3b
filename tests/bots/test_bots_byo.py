"""Bots that apps bring (docs/bots-byo.md): a live external bot (a real HTTP server in a thread)
that answers slowly, wrongly and sometimes not at all plays whole games; the tables finish, every
fallback is counted on the endpoint and announced on the table's log and stream without a card,
every request verifies with the standardwebhooks library and holds exactly the seat's own view;
registration refuses private addresses, bad timeouts, duplicate names and unknown `ext:` levels."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient
from standardwebhooks import Webhook

from games import extbots, reads, services
from games.accounts import app_create, player_create
from games.contracts.bot_turn_schema import turn_schema
from games.contracts.openapi import openapi_document
from games.engine import view
from games.errors import ServiceError
from games.models import BotEndpoint, Move, Table

TIMEOUT_MS = 300
ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "docs" / "schemas" / "bot-turn.schema.json"
TURN_SCHEMA = Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))


class ExternalBot:
    """A bot server: verifies each request's signature, records it, and answers by `behave(n,
    body)`: ("ok", None) a legal move, ("slow", None) a legal move too late, ("illegal", None),
    ("error", None) a 500, ("garbage", None) not JSON, ("silent", None) no answer at all (the
    connection is closed)."""

    def __init__(self, behave: Callable[[int, dict[str, Any]], str]) -> None:
        self.secret = ""
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.verified: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                with owner.lock:
                    owner.received.append((headers, raw))
                    n = len(owner.received)
                body = Webhook(owner.secret).verify(raw, headers)  # raises if the signature is wrong
                with owner.lock:
                    owner.verified.append(body)
                how = behave(n, body)
                if how == "silent":
                    self.close_connection = True
                    return
                if how == "slow":
                    time.sleep(TIMEOUT_MS / 1000 + 0.3)
                if how == "error":
                    self.send_response(500)
                    self.end_headers()
                    return
                answer = (
                    b"not json {"
                    if how == "garbage"
                    else json.dumps(_answer(body, how == "illegal")).encode()
                )
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/turn"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _answer(body: dict[str, Any], illegal: bool) -> dict[str, Any]:
    legal = body["legal_actions"]
    hand = body["view"]["hand"]
    if legal["type"] == "pass":
        cards = legal["from"][: legal["count"]]
        return {"type": "pass", "cards": cards[:-1] if illegal else cards}  # too few: refused
    if legal["type"] == "moon":
        return {"type": "moon", "choice": "subtract"}  # no illegal moon choice is a legal action
    wrong = [c for c in hand if c not in legal["cards"]] or [c for c in ("2C", "AS") if c not in hand]
    return {"type": "play", "card": wrong[0] if illegal else legal["cards"][0]}


@pytest.fixture
def external_bot() -> Iterator[Callable[..., ExternalBot]]:
    made: list[ExternalBot] = []

    def make(behave: Callable[[int, dict[str, Any]], str]) -> ExternalBot:
        made.append(ExternalBot(behave))
        return made[-1]

    yield make
    for bot in made:
        bot.close()


def unruly(n: int, body: dict[str, Any]) -> str:
    """Slow, wrong and sometimes silent, in turn; legal otherwise."""
    return {1: "slow", 3: "illegal", 5: "error", 7: "garbage", 9: "silent"}.get(n % 11, "ok")


def api(key: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return c


def register(
    key: str, bot: ExternalBot, name: str = "unruly", timeout_ms: int = TIMEOUT_MS
) -> dict[str, Any]:
    r = api(key).post("/api/v1/bots", {"name": name, "url": bot.url, "timeout_ms": timeout_ms}, format="json")
    assert r.status_code == 201, r.json()
    body: dict[str, Any] = r.json()
    bot.secret = body["secret"]
    return body


def scrape() -> list[Any]:
    r = APIClient().get("/metrics")
    assert r.status_code == 200, r.content
    return [s for family in text_string_to_metric_families(r.content.decode()) for s in family.samples]


def value(samples: list[Any], outcome: str) -> float:
    name = "hearts_brought_bot_moves_total"
    return sum(s.value for s in samples if s.name == name and s.labels.get("outcome") == outcome)


def check_requests(bot: ExternalBot, table: Table) -> None:
    """Each request the bot got is the documented body, and its view is exactly what its seat may
    see at that version: the engine's view for that seat, rebuilt from the log."""
    assert len(bot.verified) == len(bot.received)
    for body in bot.verified:
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in TURN_SCHEMA.iter_errors(body)]
        assert not errors, errors  # the documented schema, docs/schemas/bot-turn.schema.json
        assert body["type"] == "bot.turn" and body["table"] == table.pk
        state = reads.state_at(table, body["version"])
        assert state is not None
        assert body["view"] == json.loads(json.dumps(view(state, body["seat"], history=False)))
        assert body["legal_actions"] == body["view"]["legal_actions"] is not None
        assert body["seat"] in state.to_act()


@pytest.mark.django_db(transaction=True)
def test_a_whole_game_against_a_slow_wrong_and_silent_external_bot(
    external_bot: Callable[..., ExternalBot],
) -> None:
    app, key = app_create(name="a")
    bot = external_bot(unruly)
    registered = register(key, bot)
    before = scrape()
    out = services.table_create(
        options={"target_score": 50},
        bots={0: "ext:unruly", 1: "basic", 2: "ext:unruly", 3: "basic"},
        clocks={"play": None},
        app=app,
    )
    assert out.table is not None
    table = Table.objects.get(pk=out.table.pk)
    assert table.status == Table.Status.FINISHED  # eager tasks: the whole game ran

    endpoint = BotEndpoint.objects.get(pk=registered["id"])
    fallbacks = extbots.fallbacks_of(endpoint)
    assert endpoint.calls == len(bot.received) > 40
    assert endpoint.answered + sum(fallbacks.values()) == endpoint.calls
    assert fallbacks["timeout"] > 0 and fallbacks["failed"] > 0 and fallbacks["bad_answer"] > 0
    assert fallbacks["illegal"] > 0 and fallbacks["disabled"] == 0

    # Each fallback is announced in the move it caused, with the seat and the reason, no card.
    announced = [
        (m.position, data)
        for m in Move.objects.filter(table=table)
        for kind, data, to, _ in m.events
        if kind == "bot_fallback"
    ]
    assert len(announced) == sum(fallbacks.values())
    assert all(set(data) == {"seat", "reason"} and data["seat"] == seat for seat, data in announced)
    assert {data["reason"] for _, data in announced} == {"timeout", "failed", "bad_answer", "illegal"}

    shown = api(key).get(f"/api/v1/bots/{registered['id']}").json()
    assert shown["calls"] == endpoint.calls and shown["fallbacks"] == fallbacks
    assert "secret" not in shown

    events = api(key).get(f"/api/v1/tables/{table.pk}/events").json()["events"]
    assert any(e["type"] == "bot_fallback" for e in events)
    check_requests(bot, table)

    after = scrape()  # the operators' view: hearts_brought_bot_moves_total by outcome
    moved = {o: value(after, o) - value(before, o) for o in ("answered", *extbots.REASONS)}
    assert moved == {"answered": endpoint.answered, **fallbacks}


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
@pytest.mark.django_db(transaction=True)
def test_a_person_plays_with_an_external_bot_that_answers_well(
    external_bot: Callable[..., ExternalBot],
) -> None:
    """A person's table: the person's turns wait for them, the bot's are asked, nothing falls back."""
    app, key = app_create(name="a")
    bot = external_bot(lambda n, body: "ok")
    # the longest deadline allowed: a loaded CI machine once took more than 300 ms for one of 97 calls
    registered = register(key, bot, name="good", timeout_ms=3000)
    ana = player_create(name="Ana", app=app)[0]
    out = services.table_create(
        options={"target_score": 50}, bots={1: "ext:good"}, clocks={"play": None}, app=app
    )
    assert out.table is not None
    table_id = out.table.pk
    services.seat_join(table_id=table_id, player=ana, scope=app)
    services.table_start(table_id=table_id, fill_with="basic", player=ana, scope=app)
    for _ in range(2000):
        table = Table.objects.get(pk=table_id)
        if table.status == Table.Status.FINISHED:
            break
        legal = reads.table_body(table, _principal(ana))["game"]["legal_actions"]
        assert legal is not None  # only the person can be waited on: the bots have moved
        move = _answer({"legal_actions": legal, "view": {"hand": []}}, illegal=False)
        services.action_submit(table_id=table_id, action=move, player=ana, expected_version=table.version)
    assert Table.objects.get(pk=table_id).status == Table.Status.FINISHED
    endpoint = BotEndpoint.objects.get(pk=registered["id"])
    assert endpoint.calls == endpoint.answered == len(bot.received) > 10
    assert not any(k == "bot_fallback" for m in Move.objects.filter(table_id=table_id) for k, *_ in m.events)
    check_requests(bot, Table.objects.get(pk=table_id))


def _principal(player: Any) -> Any:
    from games.accounts import Principal

    return Principal(player=player, app=player.app)


# -- registration -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_registration_refuses_bad_input_with_clear_codes(settings: Any) -> None:
    app, key = app_create(name="a")
    c = api(key)

    def refused(body: dict[str, Any]) -> tuple[int, str, Any]:
        r = c.post("/api/v1/bots", body, format="json")
        answer = r.json()
        return r.status_code, answer["code"], answer.get("reason") or answer.get("field")

    good = {"name": "b1", "url": "https://bots.example.com/turn", "timeout_ms": 500}
    first = c.post("/api/v1/bots", good, format="json")
    assert first.status_code == 201 and first.json()["secret"].startswith("whsec_")
    assert refused(good) == (409, "bot_name_taken", None)
    assert refused({**good, "name": "b2", "timeout_ms": 99}) == (400, "invalid_input", "timeout_ms")
    assert refused({**good, "name": "b2", "timeout_ms": 3001}) == (400, "invalid_input", "timeout_ms")
    assert refused({**good, "name": "no spaces"}) == (400, "invalid_input", "name")
    assert refused({**good, "name": "b2", "url": "ftp://x.example.com/"}) == (400, "invalid_url", "scheme")
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = False
    for url in ("http://127.0.0.1:9/t", "http://10.1.2.3/t", "http://169.254.169.254/x", "http://[::1]/t"):
        assert refused({**good, "name": "b2", "url": url}) == (400, "invalid_url", "private"), url
    assert BotEndpoint.objects.count() == 1  # nothing refused was kept

    # ext: levels must name one of the app's enabled bots, wherever a level is taken.
    t = c.post("/api/v1/tables", {"bots": {"1": "ext:nobody"}}, format="json")
    assert (t.status_code, t.json()["code"]) == (400, "invalid_bot_level")
    table = c.post("/api/v1/tables", {}, format="json").json()
    r = c.post(f"/api/v1/tables/{table['id']}/bots", {"level": "ext:nobody"}, format="json")
    assert (r.status_code, r.json()["code"]) == (400, "invalid_bot_level")
    r = c.post(f"/api/v1/tables/{table['id']}/bots", {"level": "ext:b1", "position": 1}, format="json")
    assert r.status_code == 200 and r.json()["seats"][1]["bot"] == "ext:b1"
    _other, other_key = app_create(name="other")
    r = api(other_key).post("/api/v1/tables", {"bots": {"1": "ext:b1"}}, format="json")
    assert (r.status_code, r.json()["code"]) == (400, "invalid_bot_level")  # another app's bot
    with pytest.raises(ServiceError) as guest:
        services.table_create(bots={1: "ext:b1"}, app=None)
    assert guest.value.code == "invalid_bot_level"
    # Quick play takes the level its bots fill the open seats with: an ext: one too.
    ana = player_create(name="Ana", app=app)[0]
    with pytest.raises(ServiceError) as unknown:
        services.quick_play(player=ana, app=app, bot_level="ext:nobody")
    assert unknown.value.code == "invalid_bot_level"
    waiting = services.quick_play(player=ana, app=app, bot_level="ext:b1").table
    assert waiting is not None and waiting.fill_with == "ext:b1"


@pytest.mark.django_db
def test_the_bot_endpoints_are_managed_and_rotated_by_their_app_only() -> None:
    _app, key = app_create(name="a")
    _, other_key = app_create(name="b")
    c = api(key)
    made = c.post("/api/v1/bots", {"name": "b1", "url": "https://bots.example.com/t"}, format="json").json()
    assert made["timeout_ms"] == extbots.TIMEOUT_DEFAULT and made["enabled"] is True
    assert made["calls"] == 0 and made["fallbacks"] == dict.fromkeys(extbots.REASONS, 0)
    listed = c.get("/api/v1/bots").json()["results"]
    assert [b["name"] for b in listed] == ["b1"] and "secret" not in listed[0]
    assert api(other_key).get(f"/api/v1/bots/{made['id']}").status_code == 404
    assert api(other_key).get("/api/v1/bots").json()["results"] == []
    changed = c.patch(f"/api/v1/bots/{made['id']}", {"timeout_ms": 2000, "enabled": False}, format="json")
    assert changed.status_code == 200 and changed.json()["timeout_ms"] == 2000
    assert changed.json()["enabled"] is False
    rotated = c.post(f"/api/v1/bots/{made['id']}/secret", {}, format="json").json()
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != made["secret"]
    assert c.delete(f"/api/v1/bots/{made['id']}").status_code == 204
    assert c.get(f"/api/v1/bots/{made['id']}").status_code == 404
    guest = player_create(name="g", app=None)[1]
    assert api(guest).get("/api/v1/bots").json()["code"] == "app_key_required"


@pytest.mark.django_db(transaction=True)
def test_a_disabled_bot_is_not_called_and_its_moves_fall_back(
    external_bot: Callable[..., ExternalBot],
) -> None:
    _app, key = app_create(name="a")
    bot = external_bot(lambda n, body: "ok")
    registered = register(key, bot, name="off")
    table = api(key).post("/api/v1/tables", {"options": {"target_score": 50}}, format="json").json()
    api(key).post(f"/api/v1/tables/{table['id']}/bots", {"level": "ext:off", "position": 0}, format="json")
    api(key).patch(f"/api/v1/bots/{registered['id']}", {"enabled": False}, format="json")
    started = api(key).post(f"/api/v1/tables/{table['id']}/start", {}, format="json")
    assert started.status_code == 200, started.json()
    assert Table.objects.get(pk=table["id"]).status == Table.Status.FINISHED
    assert not bot.received
    endpoint = BotEndpoint.objects.get(pk=registered["id"])
    assert endpoint.calls == 0 and endpoint.fallback_disabled > 10


@pytest.mark.needs_postgres
@pytest.mark.needs_redis
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_plays_a_game_against_an_unruly_external_bot(
    workers: Callable[..., subprocess.Popen[bytes]],
    external_bot: Callable[..., ExternalBot],
) -> None:
    """The bot lanes with a real Celery worker: each task asks the bot once, outside any lock."""
    app, key = app_create(name="a")
    bot = external_bot(unruly)
    registered = register(key, bot)
    workers(beat=True, WEBHOOK_ALLOW_PRIVATE_HOSTS="1")
    out = services.table_create(
        options={"target_score": 50},
        bots={0: "ext:unruly", 1: "basic", 2: "basic", 3: "basic"},
        clocks={"play": None},
        app=app,
    )
    assert out.table is not None
    deadline = time.monotonic() + 240
    while Table.objects.get(pk=out.table.pk).status != Table.Status.FINISHED:
        assert time.monotonic() < deadline, f"not finished: {len(bot.received)} calls"
        time.sleep(0.3)
    endpoint = BotEndpoint.objects.get(pk=registered["id"])
    fallbacks = extbots.fallbacks_of(endpoint)
    assert endpoint.answered > 0 and fallbacks["timeout"] > 0 and fallbacks["illegal"] > 0
    assert endpoint.answered + sum(fallbacks.values()) == endpoint.calls <= len(bot.received)
    check_requests(bot, Table.objects.get(pk=out.table.pk))


# -- GraphQL ------------------------------------------------------------------------------------

BOT_FIELDS = (
    "id name level url timeoutMs enabled calls answered lastError "
    "fallbacks { timeout failed badAnswer illegal disabled }"
)


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
@pytest.mark.django_db(transaction=True)
def test_graphql_registers_lists_changes_and_deletes_bots_and_shows_their_seats(
    external_bot: Callable[..., ExternalBot],
) -> None:
    from tests.graphql.test_graphql import gql, ok

    _, key = app_create(name="a")
    _, other_key = app_create(name="b")
    bot = external_bot(unruly)
    made = ok(
        f'mutation($u: String!) {{ registerBot(name: "gq", url: $u, timeoutMs: {TIMEOUT_MS}) '
        f"{{ secret bot {{ {BOT_FIELDS} }} errors {{ code field }} }} }}",
        key,
        u=bot.url,
    )
    bot.secret = made["secret"]
    assert made["bot"]["level"] == "ext:gq" and made["bot"]["fallbacks"]["badAnswer"] == 0
    again = gql(
        'mutation($u: String!) { registerBot(name: "gq", url: $u, timeoutMs: 50) { errors { code field } } }',
        key,
        u=bot.url,
    )["data"]["registerBot"]["errors"]
    assert again == [{"code": "invalid_input", "field": "timeoutMs"}]
    taken = gql(
        'mutation($u: String!) { registerBot(name: "gq", url: $u) { errors { code } } }', key, u=bot.url
    )["data"]["registerBot"]["errors"]
    assert taken == [{"code": "bot_name_taken"}]

    created = ok(
        "mutation { createTable(options: {targetScore: 50}, clocks: {play: null}, "
        'bots: [{position: 0, level: "ext:gq"}, {position: 1, level: "basic"}, '
        '{position: 2, level: "basic"}, {position: 3, level: "basic"}]) { table { id } errors { code } } }',
        key,
    )
    query = "query($id: Int!) { table(id: $id) { id status seats { bot } } }"
    table = ok(query, key, id=created["table"]["id"])["table"]  # the tasks ran after the answer
    assert table["status"] == "finished" and table["seats"][0]["bot"] == "ext:gq"
    events: list[dict[str, Any]] = []
    after, more = 0, True
    while more:
        page = ok(
            "query($id: Int!, $after: Int!) { table(id: $id) { events(after: $after) { version more "
            "events { type ... on BotAddedEvent { seat level } "
            "... on BotFallbackEvent { seat reason } } } } }",
            key,
            id=table["id"],
            after=after,
        )["table"]["events"]
        events += page["events"]
        after, more = page["version"], page["more"]
    assert {"type": "bot_added", "seat": 0, "level": "ext:gq"} in events
    fallbacks = [e for e in events if e["type"] == "bot_fallback"]
    assert fallbacks and all(set(e) == {"type", "seat", "reason"} and e["seat"] == 0 for e in fallbacks)

    listed = ok(f"{{ bots {{ {BOT_FIELDS} }} }}", key)["bots"]
    assert [b["name"] for b in listed] == ["gq"] and listed[0]["calls"] == len(bot.received) > 0
    shown = listed[0]
    assert shown["answered"] + sum(shown["fallbacks"].values()) == shown["calls"]
    assert ok(f"{{ bots {{ id }} bot(id: {shown['id']}) {{ id }} }}", other_key) == {"bots": [], "bot": None}
    changed = ok(
        f"mutation {{ updateBot(id: {shown['id']}, enabled: false, timeoutMs: 900) "
        "{ bot { enabled timeoutMs } errors { code } } }",
        key,
    )
    assert changed["bot"] == {"enabled": False, "timeoutMs": 900}
    rotated = ok(f"mutation {{ rotateBotSecret(id: {shown['id']}) {{ secret errors {{ code }} }} }}", key)
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != made["secret"]
    assert ok(f"mutation {{ deleteBot(id: {shown['id']}) {{ deleted errors {{ code }} }} }}", key)["deleted"]
    gone = gql(f"mutation {{ deleteBot(id: {shown['id']}) {{ deleted errors {{ code }} }} }}", key)
    assert gone["data"]["deleteBot"] == {"deleted": False, "errors": [{"code": "not_found"}]}


# -- the Python SDK: its calls and its bot server -------------------------------------------------


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
@pytest.mark.django_db(transaction=True)
def test_the_python_sdk_manages_bots_and_its_bot_server_plays_a_whole_game() -> None:
    """The SDK's calls (in process, through the WSGI app) and `BotServer` serving the SDK's `Bot`:
    every turn verified by standardwebhooks, every answer legal and in time, so nothing falls back."""
    import httpx
    from hearts_client import Bot, HeartsClient
    from hearts_client.botserver import BotServer
    from hearts_client.errors import BadRequest, Conflict, NotFound

    from hearts_service.wsgi import application

    _, key = app_create(name="a")
    http = httpx.Client(transport=httpx.WSGITransport(app=application))
    client = HeartsClient("http://localhost", key, http=http)
    made = client.bots.register("sdk", "http://127.0.0.1:9/", timeout_ms=2000)  # the URL comes next
    server, url = BotServer(Bot(), secret=made["secret"]).start()
    try:
        shown = client.bots.update(made["id"], url=url)
        assert shown["level"] == "ext:sdk" and shown["timeout_ms"] == 2000 and shown["url"] == url
        with pytest.raises(Conflict) as taken:
            client.bots.register("sdk", url)
        assert taken.value.code == "bot_name_taken"
        with pytest.raises(BadRequest) as bad:
            client.bots.register("other", url, timeout_ms=10)
        assert bad.value.code == "invalid_input"
        table = client.tables.create(
            options={"target_score": 50}, bots={0: "ext:sdk", 1: "basic", 2: "basic", 3: "strong"}
        )
        assert client.tables.get(table["id"])["status"] == "finished"
        shown = client.bots.get(made["id"])
        assert shown["calls"] == shown["answered"] > 10 and sum(shown["fallbacks"].values()) == 0
        assert [b["id"] for b in client.bots.list()] == [made["id"]]
        rotated = client.bots.rotate_secret(made["id"])
        assert rotated["secret"].startswith("whsec_") and rotated["secret"] != made["secret"]
        client.bots.delete(made["id"])
        with pytest.raises(NotFound):
            client.bots.get(made["id"])
    finally:
        server.shutdown()
        server.server_close()
        client.close()
        http.close()


def test_the_bot_server_refuses_a_turn_it_cannot_verify() -> None:
    from hearts_client import Bot
    from hearts_client.botserver import BotServer

    from games.webhooks import sign

    secret = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    served = BotServer(Bot(), secret)
    turn = {
        "type": "bot.turn",
        "view": {"hand": ["2C", "3C"]},
        "legal_actions": {"type": "play", "cards": ["2C"]},
    }
    body = json.dumps(turn)
    headers = sign(secret, "call_1", body)
    assert served.answer(body.encode(), headers) == (200, b'{"type": "play", "card": "2C"}')
    assert served.answer(body.replace("2C", "3C").encode(), headers)[0] == 401  # tampered
    assert served.answer(body.encode(), sign("whsec_" + "B" * 43 + "=", "call_1", body))[0] == 401


def test_the_committed_turn_schema_is_the_generated_one() -> None:
    """Regenerate with: python -m games.contracts.bot_turn_schema > docs/schemas/bot-turn.schema.json"""
    assert json.loads(SCHEMA_FILE.read_text()) == turn_schema(openapi_document(), extbots.BODY_TYPE)
