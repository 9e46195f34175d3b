"""Correspondence tables (docs/bots-and-clocks.md#correspondence-tables): clocks up to 14 days, a
reminder a quarter of the clock (at most a day) before the deadline, recorded once by the sweep as a
signed `turn_reminder` webhook, then the clock acting; bots that move at once whatever pace was
asked; a deadline days away acted on after Redis lost its clock set; and a player's list of turns,
soonest deadline first, the same over REST and GraphQL. Time is moved with time-machine, in
process, never waited for."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
import time_machine
from django.test import Client
from jsonschema import Draft202012Validator
from rest_framework.test import APIClient
from standardwebhooks import Webhook

from games import push, services, tasks, webhooks
from games.accounts import app_create, player_create
from games.engine import state_from_dict
from games.infra import clocks, jobs
from games.models import App, Move, Player, PushMessage, Table, WebhookDelivery
from games.push import credentials, devices
from tests.push.providers import FakeWebPush

pytestmark = pytest.mark.django_db(transaction=True)  # on_commit hooks fire, as in production

ROOT = Path(__file__).resolve().parents[2]
BODY_SCHEMA = Draft202012Validator(
    json.loads((ROOT / "docs" / "schemas" / "webhook-body.schema.json").read_text()),
    format_checker=Draft202012Validator.FORMAT_CHECKER,
)
START = dt.datetime(2031, 3, 4, 9, 0, tzinfo=dt.UTC)
HOUR = 3600
DAY = 86_400
# The Redis database of the restart test, which it empties: one no other test uses (the last of a
# default server's 16), so that its FLUSHDB cannot touch another test's keys.
RESTART_DB = 15


class Receiver:
    """A real HTTP endpoint in a thread that records every POST it gets and answers 200."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                owner.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    yield made
    made.server.shutdown()
    made.server.server_close()


@pytest.fixture
def reminded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, list[int]]]:
    """The reminders handed to games.push (table, seats), each still recorded by push.remind."""
    calls: list[tuple[int, list[int]]] = []
    real = push.remind

    def remind(table: Table, seats: Any) -> None:
        calls.append((table.pk, list(seats)))
        real(table, seats)

    monkeypatch.setattr(push, "remind", remind)
    return calls


def _api(token: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return c


def _person_and_bots(app: App | None, player: Player, clocks: dict[str, int | None], **options: Any) -> Table:
    """A table of `app` with three basic bots and `player` at seat 0: the game starts, the bots
    pass at once, and the person is to pass."""
    out = services.table_create(app=app, bots={1: "basic", 2: "basic", 3: "basic"}, clocks=clocks, **options)
    assert out.table is not None
    services.seat_join(table_id=out.table.pk, player=player, position=0)
    return Table.objects.get(pk=out.table.pk)


def _reminders(table: Table) -> list[WebhookDelivery]:
    return list(WebhookDelivery.objects.filter(table=table, event_types=["turn_reminder"]).order_by("pk"))


def test_a_one_hour_clock_reminds_fifteen_minutes_before_once_then_the_clock_acts(
    receiver: Receiver, reminded: list[tuple[int, list[int]]], settings: Any
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True  # the local push service
    app, _ = app_create(name="correspondence")
    endpoint, secret = webhooks.endpoint_create(app=app, url=receiver.url)  # every public event type
    player, _ = player_create(app=app, name="Ada")
    browser = FakeWebPush().start()
    sub = browser.subscription(server_key=credentials.vapid_public_key(app.pk))
    devices.register(player, kind="webpush", token=sub["endpoint"], keys=sub["keys"])
    with time_machine.travel(START, tick=False) as clock:
        table = _person_and_bots(app, player, {"pass": HOUR, "play": HOUR, "moon": HOUR})
        assert table.status == "passing" and state_from_dict(table.state).to_act() == [0]
        assert table.deadline == START + dt.timedelta(hours=1)
        assert table.reminder_at == table.deadline - dt.timedelta(minutes=15)
        version = table.version

        clock.move_to(START + dt.timedelta(minutes=44))
        tasks.sweep()
        assert _reminders(table) == [] and reminded == []  # not due yet

        clock.move_to(START + dt.timedelta(minutes=46))
        tasks.sweep()
        (delivery,) = _reminders(table)
        table.refresh_from_db()
        assert table.reminder_at is None and table.version == version  # a reminder is not a move
        assert delivery.seq == version and delivery.endpoint_id == endpoint.pk
        assert reminded == [(table.pk, [0])]
        assert not Move.objects.filter(table=table, seq__gt=version).exists()

        # The endpoint gets it signed, in the documented body: the seat to act and its deadline.
        assert webhooks.attempt(str(delivery.uuid)) == "succeeded"
        ((headers, raw),) = [(h, b) for h, b in receiver.received if h["webhook-id"] == str(delivery.uuid)]
        body = Webhook(secret).verify(raw, headers)
        assert not list(BODY_SCHEMA.iter_errors(body))
        assert body["type"] == "table.reminder" and body["seq"] == version and body["table"] == table.pk
        assert body["events"] == [
            {
                "seq": version,
                "hand": 1,
                "type": "turn_reminder",
                "seats": [0],
                "deadline": "2031-03-04T10:00:00Z",
            }
        ]
        assert headers["hearts-event"] == "turn_reminder"

        # The player's browser is reminded too, once, in words and with no card.
        (note,) = PushMessage.objects.filter(table=table, kind="reminder")
        assert push.attempt(str(note.uuid)) == "sent"
        payload = browser.received[-1]["payload"]
        assert payload["title"] == "Your move is due soon"
        assert payload["body"] == f"Table {table.pk}: your time runs out in about 14 minutes."
        assert payload["data"]["kind"] == "reminder" and payload["tag"] == f"table-{table.pk}"

        tasks.sweep()  # a second sweep finds nothing due
        assert len(_reminders(table)) == 1 and len(reminded) == 1
        assert PushMessage.objects.filter(table=table, kind="reminder").count() == 1

        # At +61 minutes the clock acts: the basic bot passes for the seat, which times out once;
        # the next turn of the seat gets its own hour and its own reminder.
        clock.move_to(START + dt.timedelta(minutes=61))
        tasks.sweep()
        timed = Move.objects.get(table=table, kind="pass", position=0)
        assert timed.events[0][:2] == ["turn_timed_out", {"seat": 0, "deadline": "2031-03-04T10:00:00+00:00"}]
        table.refresh_from_db()
        assert table.seating[0]["timeouts"] == 1 and not table.seating[0]["away"]
        assert state_from_dict(table.state).to_act() == [0]  # the bots played up to the person
        assert table.deadline == START + dt.timedelta(minutes=61, hours=1)
        assert table.reminder_at == table.deadline - dt.timedelta(minutes=15)
        assert len(_reminders(table)) == 1  # the old reminder is not sent again
    browser.stop()


def test_a_reminder_comes_a_quarter_of_the_clock_before_and_at_most_a_day_before() -> None:
    player, _ = player_create(app=None, name="Bea")
    with time_machine.travel(START, tick=False):
        for seconds, before in ((DAY, dt.timedelta(hours=6)), (14 * DAY, dt.timedelta(days=1))):
            table = _person_and_bots(None, player, {"pass": seconds, "play": seconds})
            assert table.deadline == START + dt.timedelta(seconds=seconds)
            assert table.reminder_at == table.deadline - before
        # Not a correspondence table (a play clock under an hour): a deadline, no reminder.
        quick = _person_and_bots(None, player, {"pass": 2 * HOUR, "play": 59 * 60})
        assert quick.deadline is not None and quick.reminder_at is None
        # A correspondence table whose pass clock was left at a minute: no reminder for the pass.
        short = _person_and_bots(None, player, {"play": HOUR})
        assert short.deadline == START + dt.timedelta(seconds=60) and short.reminder_at is None


def test_clocks_go_up_to_fourteen_days_and_fifteen_are_refused_with_invalid_clock() -> None:
    token = APIClient().post("/api/v1/guests", {"name": "g"}, format="json").json()["token"]
    made = _api(token).post("/api/v1/tables", {"clocks": {"play": 14 * DAY, "pass": 14 * DAY}}, format="json")
    assert made.status_code == 201 and made.json()["clocks"]["play"] == 1_209_600
    before = Table.objects.count()
    for name in ("pass", "play", "moon"):
        refused = _api(token).post("/api/v1/tables", {"clocks": {name: 15 * DAY}}, format="json")
        assert refused.status_code == 400, refused.content
        assert refused.json()["code"] == "invalid_clock" and refused.json()["clock"] == name
        assert "from 5 to 1209600" in refused.json()["detail"]
    assert Table.objects.count() == before  # refused: nothing made
    mutation = (
        "mutation($c: ClocksInput) { createTable(clocks: $c) { table { clocks { play } } errors { code } } }"
    )
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}

    def gql(clocks: dict[str, int]) -> dict[str, Any]:
        r = Client().post(
            "/graphql/",
            {"query": mutation, "variables": {"c": clocks}},
            content_type="application/json",
            **headers,
        )
        return r.json()["data"]["createTable"]  # type: ignore[no-any-return]

    assert gql({"play": 14 * DAY}) == {"table": {"clocks": {"play": 1_209_600}}, "errors": []}
    assert gql({"play": 15 * DAY}) == {"table": None, "errors": [{"code": "invalid_clock"}]}
    # The documented limits follow the one constant: REST's OpenAPI and GraphQL's description.
    document = Client().get("/api/schema/?format=json").json()
    play = document["components"]["schemas"]["ClocksRequest"]["properties"]["play"]
    assert (play["minimum"], play["maximum"]) == (5, 1_209_600)
    described = (
        Client()
        .post(
            "/graphql/",
            {"query": '{ __type(name: "ClocksInput") { inputFields { name description } } }'},
            content_type="application/json",
            **headers,
        )
        .json()["data"]["__type"]["inputFields"]
    )
    assert all("5 to 1,209,600 (14 days)" in f["description"] for f in described if f["name"] != "awayAfter")


def test_bots_at_a_correspondence_table_move_at_once_whatever_pace_was_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jobs, "_later", [])  # the paced table's delayed bot task stays here
    token = APIClient().post("/api/v1/guests", {"name": "g"}, format="json").json()["token"]
    api = _api(token)
    tables = {}
    for play in (HOUR, 30):
        made = api.post(
            "/api/v1/tables",
            {
                "bots": {"1": "basic", "2": "basic", "3": "basic"},
                "clocks": {"play": play},
                "bot_pace_ms": 1500,
            },
            format="json",
        ).json()
        tables[play] = api.post(f"/api/v1/tables/{made['id']}/join", {"position": 0}, format="json").json()
    assert tables[HOUR]["bot_pace_ms"] == 0 and tables[30]["bot_pace_ms"] == 1500
    for play, table in tables.items():
        path = f"/api/v1/tables/{table['id']}"
        hand = api.get(path).json()["game"]["hand"]
        api.post(f"{path}/actions", {"type": "pass", "cards": hand[:3]}, format="json")
        after = api.get(path).json()  # after the bots' moves the commit queued
        for _ in range(3):  # a few cards of the person's, each answered by the bots
            legal = after["game"]["legal_actions"]
            if after["game"]["to_act"] != [0] or legal is None or legal["type"] != "play":
                break
            api.post(f"{path}/actions", {"type": "play", "card": legal["cards"][0]}, format="json")
            after = api.get(path).json()
        if play == HOUR:
            # Every bot card owed was played at once: the person is to act again.
            assert after["game"]["to_act"] == [0] and after["game"]["legal_actions"] is not None
            assert [entry[1] for entry in jobs._later] == []
        else:
            assert after["game"]["to_act"] != [0]  # a bot's turn, its card held back by the pace
            assert [entry[1] for entry in jobs._later] == [table["id"]]


@pytest.mark.needs_redis
def test_a_three_day_deadline_is_acted_on_after_redis_lost_the_clock_set(
    redis_url: str, settings: Any
) -> None:
    """The clock set lives in Redis without persistence: a restart empties it. The deadline in the
    database is the truth, and the sweep acts on it once it has passed."""
    url = urlunsplit(urlsplit(redis_url)._replace(path=f"/{RESTART_DB}"))
    settings.REDIS_URL = url
    client = redis.Redis.from_url(url)
    client.flushdb()
    player, _ = player_create(app=None, name="Cy")
    with time_machine.travel(START, tick=False) as clock:
        table = _person_and_bots(None, player, {"pass": 3 * DAY, "play": 3 * DAY})
        assert table.deadline == START + dt.timedelta(days=3)
        assert table.reminder_at == table.deadline - dt.timedelta(hours=18)
        waited = time.monotonic() + 10  # the commit's publisher thread sets the clock
        while client.zscore(clocks.KEY, str(table.pk)) is None:
            assert time.monotonic() < waited, "the clock never reached Redis"
            time.sleep(0.02)
        assert client.zscore(clocks.KEY, str(table.pk)) == table.deadline.timestamp()
        version = table.version

        client.flushdb()  # Redis restarts without persistence: the clock set is gone
        assert client.zcard(clocks.KEY) == 0

        clock.move_to(START + dt.timedelta(days=2, hours=12))  # not yet: the reminder only
        tasks.sweep()
        table.refresh_from_db()
        assert table.version == version and table.reminder_at is None

        clock.move_to(START + dt.timedelta(days=3, seconds=1))
        tasks.sweep()
        table.refresh_from_db()
        assert table.version > version
        timed = Move.objects.get(table=table, kind="pass", position=0)
        assert timed.events[0][0] == "turn_timed_out"
        assert table.deadline == START + dt.timedelta(days=6, seconds=1)  # the next turn's clock
    client.flushdb()


def test_the_turns_list_is_sorted_by_deadline_has_only_the_players_turns_and_rest_and_graphql_agree() -> None:
    token = APIClient().post("/api/v1/guests", {"name": "Dee"}, format="json").json()["token"]
    api = _api(token)
    other = APIClient().post("/api/v1/guests", {"name": "Eve"}, format="json").json()["token"]
    with time_machine.travel(START, tick=False):
        made = {}
        for name, clocks in (
            ("two_hours", {"pass": 2 * HOUR, "play": 2 * HOUR}),
            ("one_hour", {"pass": HOUR, "play": HOUR}),
            ("no_clock", {"pass": None, "play": None, "moon": None}),
            ("passed", {"pass": 30 * 60}),
        ):
            bots = (
                {"2": "basic", "3": "basic"}
                if name == "passed"
                else {"1": "basic", "2": "basic", "3": "basic"}
            )
            table = api.post("/api/v1/tables", {"bots": bots, "clocks": clocks}, format="json").json()
            api.post(f"/api/v1/tables/{table['id']}/join", {"position": 0}, format="json")
            made[name] = api.get(f"/api/v1/tables/{table['id']}").json()  # the bots have passed
        # At `passed` Eve takes seat 1 and Dee passes: the table waits for Eve, not for Dee.
        passed = made["passed"]["id"]
        _api(other).post(f"/api/v1/tables/{passed}/join", {"position": 1}, format="json")
        mine = api.get(f"/api/v1/tables/{passed}").json()["game"]["hand"]
        api.post(f"/api/v1/tables/{passed}/actions", {"type": "pass", "cards": mine[:3]}, format="json")
        assert api.get(f"/api/v1/tables/{passed}").json()["game"]["to_act"] == [1]

        answer = api.get("/api/v1/me/turns")
        assert answer.status_code == 200
        body = answer.json()
        assert body["more"] is False
        assert [t["table"] for t in body["turns"]] == [
            made[n]["id"] for n in ("one_hour", "two_hours", "no_clock")
        ]
        first = body["turns"][0]
        assert first == {
            "table": made["one_hour"]["id"],
            "status": "passing",
            "version": made["one_hour"]["version"],
            "seat": 0,
            "action": "pass",
            "deadline": "2031-03-04T10:00:00Z",
            "clock": HOUR,
        }
        assert (
            body["turns"][1]["deadline"] == "2031-03-04T11:00:00Z" and body["turns"][1]["clock"] == 2 * HOUR
        )
        assert body["turns"][2]["deadline"] is None and body["turns"][2]["clock"] is None
        # Eve's list: only the table that waits for her.
        theirs = _api(other).get("/api/v1/me/turns").json()["turns"]
        assert [(t["table"], t["seat"], t["action"]) for t in theirs] == [(passed, 1, "pass")]

        query = "{ myTurns { more turns { table status version seat action deadline clock } } }"
        r = Client().post(
            "/graphql/",
            {"query": query},
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        assert r.json() == {"data": {"myTurns": body}}

    # An app key has no turns of its own.
    _, key = app_create(name="turns")
    refused = _api(key).get("/api/v1/me/turns")
    assert refused.status_code == 422 and refused.json()["code"] == "player_token_required"
    r = Client().post(
        "/graphql/",
        {"query": "{ myTurns { more } }"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert r.json()["errors"][0]["extensions"]["code"] == "player_token_required"
