"""Signed webhooks: registration and its errors, the secret shown once (in the Standard Webhooks
format), isolation between apps, deliveries of a whole bot game to a real local HTTP receiver,
verified by the standardwebhooks library and valid against the body's JSON Schema, with no hidden
card in any body; tampered, stale and replayed deliveries refused by that library, a dead
endpoint's growing backoff with one webhook-id, redelivery and rotation, duplicate and interrupted
task runs, the sweep, and a real Celery worker on the `webhooks` queue (PostgreSQL and Redis)."""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.core import signals
from django.db import close_old_connections, connection
from django.db.models import Count
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from jsonschema import Draft202012Validator
from rest_framework.test import APIClient
from standardwebhooks import Webhook, WebhookVerificationError

from games import services, tasks, webhooks
from games.accounts import app_create, player_create
from games.contracts.openapi import openapi_document
from games.contracts.webhook_schema import body_schema
from games.engine import state_from_dict
from games.errors import ServiceError
from games.models import App, Move, Table, WebhookDelivery, WebhookEndpoint
from games.webhooks import transport
from tests.api.schema_checks import CONFORMS, schema  # loaded at collection: it makes a request

ROOT = Path(__file__).resolve().parents[2]
HIDDEN = {"cards_dealt", "cards_passed", "cards_received"}
SCHEMA_FILE = ROOT / "docs" / "schemas" / "webhook-body.schema.json"
BODY_SCHEMA = Draft202012Validator(
    json.loads(SCHEMA_FILE.read_text()), format_checker=Draft202012Validator.FORMAT_CHECKER
)


def _documented_receiver() -> Callable[..., Any]:
    """The verification snippet of docs/webhooks.md itself, as a receiver would paste it."""
    section = (ROOT / "docs" / "webhooks.md").read_text().split("# Webhooks", 1)[1]
    snippet = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(snippet, namespace)
    return namespace["verified_body"]  # type: ignore[no-any-return]


verified_body = _documented_receiver()


def verified(secret: str, headers: dict[str, str], raw: bytes) -> Any:
    """The body as a receiver gets it from the reference library (which refuses by raising)."""
    return Webhook(secret).verify(raw, headers)


def refusal(secret: str, headers: dict[str, str], raw: bytes) -> str:
    """Why the reference library refuses this delivery (the test fails if it accepts it)."""
    with pytest.raises(WebhookVerificationError) as refused:
        Webhook(secret).verify(raw, headers)
    return str(refused.value)


def check_body(raw: bytes) -> dict[str, Any]:
    """A delivered body, checked against the documented JSON Schema."""
    body = json.loads(raw)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in BODY_SCHEMA.iter_errors(body)]
    assert not errors, errors
    assert dt.datetime.fromisoformat(body["created_at"]).utcoffset() == dt.timedelta(0)
    return body  # type: ignore[no-any-return]


class Receiver:
    """A real HTTP server in a thread that records every POST and answers `status`."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.received: list[tuple[dict[str, str], bytes]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                owner.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(owner.status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body in self.received]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Callable[..., Receiver]]:
    made: list[Receiver] = []

    def make(status: int = 200) -> Receiver:
        made.append(Receiver(status))
        return made[-1]

    yield make
    for r in made:
        r.close()


def refused_url() -> str:
    """A local port nothing listens on: every connection is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"


def client(secret: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return c


def bot_game(app: App, target: int = 50) -> Table:
    out = services.table_create(
        options={"target_score": target},
        bots=dict.fromkeys(range(4), "basic"),
        clocks={"play": None},
        app=app,
    )
    assert out.table is not None
    return Table.objects.get(pk=out.table.pk)


def deliver_everything() -> int:
    n = 0
    while tried := webhooks.deliver_due():
        n += tried
    return n


def make_due(delivery: WebhookDelivery) -> None:
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())


# -- registration -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_registration_validates_and_shows_the_secret_once() -> None:
    app, key = app_create(name="a")
    _, token = player_create(app=app, name="p")
    api = client(key)
    r = client(token).post("/api/v1/webhooks", {"url": "https://example.com/h"}, format="json")
    assert r.status_code == 422 and r.json()["code"] == "app_key_required"
    assert client(token).get("/api/v1/webhooks").json()["code"] == "app_key_required"
    for url, reason in [
        ("ftp://example.com/h", "scheme"),
        ("javascript:alert(1)", "scheme"),
        ("example.com/h", "scheme"),
        ("http://", "host"),
        ("https://user:pw@example.com/h", "credentials"),
        ("http://example.com:99999/h", "malformed"),
        ("http://exa mple.com/", "malformed"),
        ("https://example.com/" + "a" * 2000, "length"),
    ]:
        r = api.post("/api/v1/webhooks", {"url": url}, format="json")
        assert r.status_code == 400 and r.json()["code"] == "invalid_url", url
        assert r.json()["reason"] == reason, url
    for types in (["cards_dealt"], ["card_played", "nope"], []):
        r = api.post(
            "/api/v1/webhooks", {"url": "https://example.com/h", "event_types": types}, format="json"
        )
        assert r.status_code == 400 and r.json()["code"] == "invalid_event_type", types
        assert "card_played" in r.json()["known"] and "cards_dealt" not in r.json()["known"]
    r = api.post("/api/v1/webhooks", {"event_types": ["*"]}, format="json")
    assert r.status_code == 400 and r.json()["code"] == "invalid_input"
    assert WebhookEndpoint.objects.count() == 0

    r = api.post(
        "/api/v1/webhooks",
        {"url": "https://example.com/h", "event_types": ["trick_won", "card_played", "trick_won"]},
        format="json",
    )
    assert r.status_code == 201
    created = r.json()
    # The Standard Webhooks format: whsec_ + the standard base64 of a 32-byte key, padding and all.
    assert re.fullmatch(r"whsec_[A-Za-z0-9+/]{43}=", created["secret"]), created["secret"]
    assert len(base64.b64decode(created["secret"].removeprefix("whsec_"), validate=True)) == 32
    assert created["event_types"] == ["trick_won", "card_played"] and created["active"] is True
    endpoint = WebhookEndpoint.objects.get()
    assert webhooks.secret_of(endpoint) == created["secret"]
    assert created["secret"] not in json.dumps(list(WebhookEndpoint.objects.values()), default=str)
    shown = api.get(f"/api/v1/webhooks/{created['id']}").json()
    listed = api.get("/api/v1/webhooks").json()["results"]
    assert "secret" not in shown and [w["id"] for w in listed] == [created["id"]]
    assert all("secret" not in w for w in listed)
    assert shown == {k: v for k, v in created.items() if k != "secret"}
    assert api.post("/api/v1/webhooks", {"url": "http://example.com"}, format="json").json()[
        "event_types"
    ] == ["*"]

    r = api.patch(f"/api/v1/webhooks/{created['id']}", {"url": "gopher://x"}, format="json")
    assert r.json()["code"] == "invalid_url"
    r = api.patch(f"/api/v1/webhooks/{created['id']}", {"active": False, "event_types": ["*"]}, format="json")
    assert r.status_code == 200 and r.json()["active"] is False and r.json()["event_types"] == ["*"]
    rotated = api.post(f"/api/v1/webhooks/{created['id']}/secret").json()["secret"]
    assert rotated != created["secret"] and rotated == webhooks.secret_of(
        WebhookEndpoint.objects.get(pk=created["id"])
    )
    assert re.fullmatch(r"whsec_[A-Za-z0-9+/]{43}=", rotated)
    assert api.delete(f"/api/v1/webhooks/{created['id']}").status_code == 204
    assert api.get(f"/api/v1/webhooks/{created['id']}").status_code == 404


@pytest.mark.django_db
def test_an_app_has_a_limited_number_of_endpoints(settings: Any) -> None:
    settings.WEBHOOK_MAX_PER_APP = 2
    _, key = app_create(name="a")
    for _ in range(2):
        assert (
            client(key).post("/api/v1/webhooks", {"url": "https://e.com"}, format="json").status_code == 201
        )
    r = client(key).post("/api/v1/webhooks", {"url": "https://e.com"}, format="json")
    assert r.status_code == 409 and r.json()["code"] == "too_many_webhooks"


@pytest.mark.django_db(transaction=True)
def test_another_apps_endpoints_and_deliveries_are_not_found(receiver: Callable[..., Receiver]) -> None:
    mine, my_key = app_create(name="mine")
    _, their_key = app_create(name="theirs")
    hook = client(my_key).post("/api/v1/webhooks", {"url": receiver().url}, format="json").json()
    bot_game(mine, target=50)
    delivery = WebhookDelivery.objects.filter(endpoint_id=hook["id"]).first()
    assert delivery is not None
    base = f"/api/v1/webhooks/{hook['id']}"
    them = client(their_key)
    assert them.get("/api/v1/webhooks").json()["results"] == []
    for call in (
        lambda: them.get(base),
        lambda: them.patch(base, {"active": False}, format="json"),
        lambda: them.delete(base),
        lambda: them.post(f"{base}/secret"),
        lambda: them.get(f"{base}/deliveries"),
        lambda: them.get(f"{base}/deliveries/{delivery.uuid}"),
        lambda: them.post(f"{base}/deliveries/{delivery.uuid}/redeliver"),
        lambda: client(my_key).get(f"/api/v1/webhooks/{hook['id'] + 1000}"),
        lambda: client(my_key).get(f"{base}/deliveries/00000000-0000-0000-0000-000000000000"),
    ):
        r = call()
        assert r.status_code == 404 and r.json()["code"] == "not_found"
    assert WebhookEndpoint.objects.get(pk=hook["id"]).active
    # The guest tables (no app) and another app's tables never reach this endpoint.
    their_app = App.objects.get(name="theirs")
    before = WebhookDelivery.objects.count()
    bot_game(their_app, target=50)
    services.table_create(options={}, bots={0: "basic"})
    assert WebhookDelivery.objects.count() == before


# -- deliveries ------------------------------------------------------------------------------------


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
@pytest.mark.django_db(transaction=True)
def test_a_whole_bot_game_is_delivered_signed_and_without_any_hidden_card(
    receiver: Callable[..., Receiver],
) -> None:
    app, key = app_create(name="a")
    everything, tricks = receiver(), receiver()
    api = client(key)
    hook = api.post("/api/v1/webhooks", {"url": everything.url}, format="json").json()
    only = api.post(
        "/api/v1/webhooks", {"url": tricks.url, "event_types": ["trick_won"]}, format="json"
    ).json()
    table = bot_game(app)
    assert table.status == Table.Status.FINISHED  # recording never waits for a send
    assert not everything.received  # eager mode: nothing was sent during the game's requests
    assert deliver_everything() == WebhookDelivery.objects.count()

    moves = list(Move.objects.filter(table=table).order_by("seq"))
    public_seqs = [m.seq for m in moves if any(to is None for _, _, to, _ in m.events)]
    logged_public = {kind for m in moves for kind, _, to, _ in m.events if to is None}
    assert logged_public <= set(webhooks.PUBLIC_EVENT_TYPES)  # the documented list is complete
    assert not logged_public & HIDDEN

    bodies = everything.bodies()
    assert [b["seq"] for b in bodies] == public_seqs  # one delivery per move, in order
    assert {b["table"] for b in bodies} == {table.pk}
    types = {e["type"] for b in bodies for e in b["events"]}
    assert {
        "game_started",
        "hand_started",
        "pass_submitted",
        "card_played",
        "trick_won",
        "hand_scored",
    } <= types
    assert "game_over" in types
    assert not types & HIDDEN
    sent_from = int(time.time()) - 600
    for headers, raw in everything.received:
        body = check_body(raw)  # every real body matches docs/schemas/webhook-body.schema.json
        assert verified(hook["secret"], headers, raw) == body  # Standard Webhooks, its own library
        assert verified_body(hook["secret"], raw, headers) == body  # the snippet of docs/webhooks.md
        assert verified_body(only["secret"], raw, headers) is None  # another endpoint's secret
        assert refusal(only["secret"], headers, raw) == "No matching signature found"
        assert headers["webhook-id"] == body["id"] and body["type"] == "table.events"
        assert sent_from <= int(headers["webhook-timestamp"]) <= time.time() + 1
        assert re.fullmatch(r"v1,[A-Za-z0-9+/]{43}=", headers["webhook-signature"])
        assert "hearts-signature" not in headers and "hearts-delivery" not in headers
        assert headers["hearts-event"] == ",".join(dict.fromkeys(e["type"] for e in body["events"]))
        assert headers["hearts-attempt"] == "1"
        for name in HIDDEN:
            assert name.encode() not in raw
        for event in body["events"]:
            if event["type"] == "pass_submitted":  # who passed, never which cards
                assert set(event) == {"seq", "hand", "type", "seat"}
            if event["type"] == "hand_started":
                assert "cards" not in event and "hands" not in event
    # The seat's own cards never travel in a body before its hand is over (the hand's record,
    # public once the hand is scored, is the only place a deal appears).
    dealt = [
        (m.hand, data["cards"]) for m in moves for kind, data, to, _ in m.events if kind == "cards_dealt"
    ]
    for hand, cards in dealt:
        for b in bodies:
            if b["hand"] == hand and not any(e["type"] == "hand_revealed" for e in b["events"]):
                assert json.dumps(sorted(cards)) not in json.dumps(b)
    assert {e["type"] for b in tricks.bodies() for e in b["events"]} == {"trick_won"}
    for headers, raw in tricks.received:
        assert verified(only["secret"], headers, raw) == check_body(raw)

    page = api.get(f"/api/v1/webhooks/{hook['id']}/deliveries").json()
    assert len(page["results"]) == 20 and page["next"]
    assert [d["seq"] for d in page["results"]] == sorted(public_seqs, reverse=True)[:20]  # newest first
    assert all(d["status"] == "succeeded" and d["attempts"] == 1 for d in page["results"])
    assert all(d["last_status_code"] == 200 and d["delivered_at"] for d in page["results"])
    second = api.get(page["next"]).json()
    assert [d["seq"] for d in second["results"]] == sorted(public_seqs, reverse=True)[20:40]
    one = api.get(f"/api/v1/webhooks/{hook['id']}/deliveries/{page['results'][0]['id']}").json()
    assert one["body"] == json.loads(everything.received[-1][1]) and one["log"][0]["status_code"] == 200
    assert api.get(f"/api/v1/webhooks/{hook['id']}/deliveries?status=pending").json()["results"] == []
    assert api.get(f"/api/v1/webhooks/{hook['id']}/deliveries?status=nope").json()["code"] == "invalid_filter"


@pytest.mark.django_db(transaction=True)
def test_the_library_refuses_a_tampered_stale_or_replayed_delivery(receiver: Callable[..., Receiver]) -> None:
    app, key = app_create(name="a")
    target = receiver()
    hook = (
        client(key)
        .post("/api/v1/webhooks", {"url": target.url, "event_types": ["game_started"]}, format="json")
        .json()
    )
    bot_game(app, target=50)
    assert deliver_everything() == 1
    [(headers, raw)] = target.received
    secret = hook["secret"]
    assert verified(secret, headers, raw)["events"][0]["type"] == "game_started"
    signed = ("webhook-id", "webhook-timestamp", "webhook-signature")
    # What was sent is exactly what the service signs for that id, time and body.
    again = webhooks.sign(
        secret, headers["webhook-id"], raw.decode(), timestamp=int(headers["webhook-timestamp"])
    )
    assert again == {name: headers[name] for name in signed}
    # A changed body, delivery id or timestamp no longer matches the signature.
    no_match = "No matching signature found"
    assert refusal(secret, headers, raw.replace(b'"game_started"', b'"game_over"')) == no_match
    assert refusal(secret, headers, raw + b" ") == no_match
    assert refusal(secret, {**headers, "webhook-id": str(uuid.uuid4())}, raw) == no_match
    later = str(int(headers["webhook-timestamp"]) + 1)
    assert refusal(secret, {**headers, "webhook-timestamp": later}, raw) == no_match
    # Rightly signed, but more than 5 minutes old (a replay) or ahead: refused all the same.
    now = int(time.time())
    for shift, why in ((-301, "Message timestamp too old"), (301, "Message timestamp too new")):
        replayed = webhooks.sign(secret, headers["webhook-id"], raw.decode(), timestamp=now + shift)
        assert refusal(secret, {**headers, **replayed}, raw) == why
    for name in signed:
        without = {k: v for k, v in headers.items() if k != name}
        assert refusal(secret, without, raw) == "Missing required headers"


@pytest.mark.django_db(transaction=True)
def test_a_dead_endpoint_records_failed_attempts_with_growing_backoff(
    receiver: Callable[..., Receiver], settings: Any
) -> None:
    settings.WEBHOOK_BACKOFF_BASE = 1
    settings.WEBHOOK_MAX_ATTEMPTS = 4
    app, key = app_create(name="a")
    broken = receiver(status=500)
    api = client(key)
    refused = api.post(
        "/api/v1/webhooks", {"url": refused_url(), "event_types": ["game_over"]}, format="json"
    )
    erroring = api.post("/api/v1/webhooks", {"url": broken.url, "event_types": ["game_over"]}, format="json")
    table = bot_game(app)
    assert table.status == Table.Status.FINISHED  # the game never waited for the dead endpoints
    for hook, code in ((refused.json(), None), (erroring.json(), 500)):
        delivery = WebhookDelivery.objects.get(endpoint_id=hook["id"])
        waits = []
        for n in range(1, 5):
            make_due(delivery)
            outcome = tasks.deliver_webhook(str(delivery.uuid))
            delivery.refresh_from_db()
            assert delivery.attempts == n and delivery.last_status_code == code and delivery.last_error
            if n < 4:
                assert outcome == "retry" and delivery.status == "pending"
                assert delivery.next_attempt_at is not None and delivery.last_attempt_at is not None
                waits.append((delivery.next_attempt_at - delivery.last_attempt_at).total_seconds())
            else:
                assert (
                    outcome == "failed" and delivery.status == "failed" and delivery.next_attempt_at is None
                )
        assert waits == sorted(waits) and waits[0] < waits[1] < waits[2] and 0.7 < waits[0] < 1.5
        assert [a["attempt"] for a in delivery.log] == [1, 2, 3, 4]
        assert all(a["error"] for a in delivery.log) and delivery.delivered_at is None
        r = api.get(f"/api/v1/webhooks/{hook['id']}/deliveries?status=failed").json()["results"]
        assert [d["id"] for d in r] == [str(delivery.uuid)] and r[0]["attempts"] == 4
    assert len(broken.received) == 4  # exactly one POST per attempt
    # Every attempt carries the same webhook-id (the delivery's: receivers dedupe on it), its own
    # time, and a signature that verifies for that time.
    retried = WebhookDelivery.objects.get(endpoint_id=erroring.json()["id"])
    assert [h["webhook-id"] for h, _ in broken.received] == [str(retried.uuid)] * 4
    assert [h["hearts-attempt"] for h, _ in broken.received] == ["1", "2", "3", "4"]
    stamps = [int(h["webhook-timestamp"]) for h, _ in broken.received]
    assert stamps == sorted(stamps)
    assert len({raw for _, raw in broken.received}) == 1  # the same bytes every time
    for headers, raw in broken.received:
        assert verified(erroring.json()["secret"], headers, raw) == check_body(raw)
    assert "Connection" in WebhookDelivery.objects.get(endpoint_id=refused.json()["id"]).last_error


@pytest.mark.django_db(transaction=True)
def test_redelivery_sends_the_same_delivery_again(receiver: Callable[..., Receiver], settings: Any) -> None:
    settings.WEBHOOK_MAX_ATTEMPTS = 1
    app, key = app_create(name="a")
    target = receiver(status=503)
    api = client(key)
    hook = api.post(
        "/api/v1/webhooks", {"url": target.url, "event_types": ["game_started"]}, format="json"
    ).json()
    bot_game(app, target=50)
    deliver_everything()
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and delivery.attempts == 1
    url = f"/api/v1/webhooks/{hook['id']}/deliveries/{delivery.uuid}/redeliver"
    target.status = 200
    r = api.post(url)
    assert r.status_code == 202 and r.json()["status"] == "pending" and r.json()["id"] == str(delivery.uuid)
    assert deliver_everything() == 1
    delivery.refresh_from_db()
    assert delivery.status == "succeeded" and delivery.attempts == 2 and delivery.last_status_code == 200
    assert api.post(url).status_code == 202  # a succeeded one too: the receiver lost it, say
    deliver_everything()
    ids = [h["webhook-id"] for h, _ in target.received]
    assert ids == [str(delivery.uuid)] * 3  # the same id every time: receivers dedupe on it
    assert len({raw for _, raw in target.received}) == 1  # and the same bytes
    for headers, raw in target.received:
        assert verified(hook["secret"], headers, raw) == check_body(raw)
    # After a rotation, a redelivery of that same delivery is signed with the new secret only.
    rotated = api.post(f"/api/v1/webhooks/{hook['id']}/secret").json()["secret"]
    assert api.post(url).status_code == 202
    deliver_everything()
    headers, raw = target.received[-1]
    assert headers["webhook-id"] == str(delivery.uuid) and verified(rotated, headers, raw) == check_body(raw)
    assert refusal(hook["secret"], headers, raw) == "No matching signature found"
    assert api.patch(f"/api/v1/webhooks/{hook['id']}", {"active": False}, format="json").status_code == 200
    r = api.post(url)
    assert r.status_code == 409 and r.json()["code"] == "webhook_disabled"


@pytest.mark.django_db(transaction=True)
def test_duplicate_and_interrupted_task_runs_never_mark_a_delivery_wrong(
    receiver: Callable[..., Receiver], monkeypatch: pytest.MonkeyPatch
) -> None:
    app, _ = app_create(name="a")
    target = receiver()
    webhooks.endpoint_create(app=app, url=target.url, event_types=["game_started"])
    bot_game(app, target=50)
    delivery = WebhookDelivery.objects.get()
    delivery_id = str(delivery.uuid)
    assert tasks.deliver_webhook(delivery_id) == "succeeded"
    assert tasks.deliver_webhook(delivery_id) == "skipped"  # the duplicate task: nothing sent
    assert len(target.received) == 1
    delivery.refresh_from_db()
    assert delivery.status == "succeeded" and delivery.attempts == 1

    # A worker killed mid-send: the claim (attempt counted, lease) is committed, the result never is.
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="pending", next_attempt_at=timezone.now())
    real_post = webhooks.post

    def killed(*args: Any) -> Any:
        raise SystemExit("worker killed")

    monkeypatch.setattr(transport, "post", killed)
    with pytest.raises(SystemExit):
        webhooks.attempt(delivery_id)
    monkeypatch.setattr(transport, "post", real_post)
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.attempts == 2
    assert delivery.next_attempt_at is not None and delivery.next_attempt_at > timezone.now()  # leased
    assert tasks.deliver_webhook(delivery_id) == "skipped"  # redelivered message during the lease
    assert tasks.sweep() == 0  # the sweep leaves a leased delivery alone
    # The lease runs out and the task was lost: the sweep queues it again (eager here: sent at once).
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        next_attempt_at=timezone.now() - dt.timedelta(seconds=10),
        queued_at=timezone.now() - dt.timedelta(seconds=120),
    )
    assert tasks.sweep() == 1
    delivery.refresh_from_db()
    assert delivery.status == "succeeded" and delivery.attempts == 3 and len(target.received) == 2

    # A redelivery during a send supersedes it: the late result does not overwrite the new claim.
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="pending", next_attempt_at=timezone.now())

    def slow(*args: Any) -> Any:
        webhooks.redeliver(WebhookDelivery.objects.select_related("endpoint").get(pk=delivery.pk))
        return real_post(*args)

    monkeypatch.setattr(transport, "post", slow)
    assert webhooks.attempt(delivery_id) == "superseded"
    monkeypatch.setattr(transport, "post", real_post)
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.next_attempt_at is not None
    assert webhooks.attempt(delivery_id) == "succeeded"


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_move_leaves_no_delivery_and_a_disabled_endpoint_gets_none(
    receiver: Callable[..., Receiver],
) -> None:
    app, _ = app_create(name="a")
    endpoint, _ = webhooks.endpoint_create(app=app, url=receiver().url)
    table = services.table_create(options={}, bots={1: "basic"}, app=app).table
    assert table is not None
    player = player_create(app=app, name="p")[0]
    count = WebhookDelivery.objects.count()
    with pytest.raises(ServiceError):
        services.seat_join(table_id=table.pk, player=player, position=1)  # a bot's seat: refused
    assert WebhookDelivery.objects.count() == count
    webhooks.endpoint_update(endpoint, {"active": False})
    assert WebhookDelivery.objects.filter(status="pending").count() == 0  # pending ones failed
    services.seat_join(table_id=table.pk, player=player)
    assert WebhookDelivery.objects.count() == count


@pytest.mark.django_db(transaction=True)
def test_the_endpoints_are_read_only_when_the_locked_table_says_its_app_has_one(
    receiver: Callable[..., Receiver],
) -> None:
    """The table's locked read says whether its app has an active endpoint (an EXISTS beside it):
    an app without one costs no query for its endpoints; one registered between two moves gets the
    second, and once disabled is not read again."""
    app, _ = app_create(name="a")
    table = services.table_create(options={}, clocks={"play": None}, app=app).table
    assert table is not None
    players = [player_create(app=app, name=f"p{i}")[0] for i in range(4)]
    for player in players[:3]:
        services.seat_join(table_id=table.pk, player=player)

    def endpoint_reads(act: Callable[[], Any]) -> int:
        with CaptureQueriesContext(connection) as captured:
            act()
        return sum(q["sql"].startswith('SELECT "games_webhookendpoint"') for q in captured.captured_queries)

    assert endpoint_reads(lambda: services.seat_join(table_id=table.pk, player=players[3])) == 0
    assert WebhookDelivery.objects.count() == 0
    endpoint, _ = webhooks.endpoint_create(app=app, url=receiver().url)
    state = Table.objects.get(pk=table.pk).state
    assert (
        endpoint_reads(
            lambda: services.action_submit(table_id=table.pk, position=0, action=_a_pass(state, 0))
        )
        == 1
    )
    assert WebhookDelivery.objects.filter(endpoint=endpoint).count() == 1
    webhooks.endpoint_update(endpoint, {"active": False})
    assert (
        endpoint_reads(
            lambda: services.action_submit(table_id=table.pk, position=1, action=_a_pass(state, 1))
        )
        == 0
    )


def _a_pass(state: dict[str, Any], seat: int) -> dict[str, Any]:
    return state_from_dict(state).legal_actions(seat)[0].to_dict()


@pytest.mark.django_db(transaction=True)
def test_the_embedded_sweep_sends_due_deliveries_from_a_background_thread(
    receiver: Callable[..., Receiver],
) -> None:
    app, _ = app_create(name="a")
    target = receiver()
    webhooks.endpoint_create(app=app, url=target.url, event_types=["game_started", "game_over"])
    bot_game(app, target=50)
    assert tasks.sweep(inline=True) >= 1  # returns at once; the sender thread does the sends
    deadline = time.monotonic() + 10
    while len(target.received) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(e["type"] for b in target.bodies() for e in b["events"]) == ["game_over", "game_started"]
    while WebhookDelivery.objects.filter(status="pending").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"succeeded"}


@pytest.mark.django_db
def test_private_addresses_are_refused_unless_allowed(settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = False
    for url in (
        "http://127.0.0.1:9/h",
        "http://10.1.2.3/h",
        "http://169.254.169.254/latest",
        "http://[::1]/h",
    ):
        code, error = webhooks.post(url, b"{}", {}, 1)
        assert code is None and error.startswith("address_not_allowed"), url


# -- a real worker on the webhooks queue -----------------------------------------------------------


WORKER_ENV = {
    "WEBHOOK_ALLOW_PRIVATE_HOSTS": "1",
    "WEBHOOK_BACKOFF_BASE": "1",
    "WEBHOOK_MAX_ATTEMPTS": "3",
    "WEBHOOK_SWEEP_GRACE": "1",  # the sweep (beat) queues a lost delivery again within seconds
    "WEBHOOK_REQUEUE_AFTER": "5",
}


@pytest.mark.needs_postgres
@pytest.mark.needs_redis
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_on_the_webhooks_queue_delivers_a_game_while_a_dead_endpoint_retries(
    workers: Callable[..., subprocess.Popen[bytes]],
    receiver: Callable[..., Receiver],
    settings: Any,
) -> None:
    settings.WEBHOOK_MAX_ATTEMPTS = 3  # the attempt budget is set when a delivery is recorded (here)
    app, _ = app_create(name="a")
    target = receiver()
    _, secret = webhooks.endpoint_create(app=app, url=target.url, event_types=["*"])
    webhooks.endpoint_create(app=app, url=refused_url(), event_types=["game_started"])
    workers(queues="clocks,people,bots", beat=True, **WORKER_ENV)  # the game lanes, beat: the sweep
    workers(queues="webhooks", **WORKER_ENV)  # the webhook sender
    table_id = bot_game(app, target=50).pk  # queued on commit: the workers play and send it
    deadline = time.monotonic() + 240  # generous: CI machines are shared
    while time.monotonic() < deadline:
        table = Table.objects.get(pk=table_id)
        done = table.status == Table.Status.FINISHED
        if (
            done
            and not WebhookDelivery.objects.filter(endpoint__url=target.url)
            .exclude(status="succeeded")
            .exists()
        ):
            break
        time.sleep(0.3)
    else:
        rows = WebhookDelivery.objects.filter(endpoint__url=target.url)
        raise AssertionError(
            f"not finished in time: {Table.objects.get(pk=table_id)}, {len(target.received)} received,"
            f" deliveries {list(rows.values_list('status', 'attempts').annotate(n=Count('pk')))}"
        )
    moves = Move.objects.filter(table_id=table_id).order_by("seq")
    public_seqs = [m.seq for m in moves if any(to is None for _, _, to, _ in m.events)]
    assert sorted({b["seq"] for b in target.bodies()}) == public_seqs  # at least once, none missing
    for headers, raw in target.received:
        assert verified(secret, headers, raw) == check_body(raw)
        assert not any(name.encode() in raw for name in HIDDEN)
    # The dead endpoint was tried by the same worker, with backoff, and never held up the game.
    dead = WebhookDelivery.objects.exclude(endpoint__url=target.url).get()
    while dead.status == "pending" and time.monotonic() < deadline + 30:
        time.sleep(0.3)
        dead.refresh_from_db()
    assert dead.status == "failed" and dead.attempts == 3 and "Connection" in dead.last_error


@pytest.mark.django_db
def test_every_webhook_answer_matches_the_documented_schema(receiver: Callable[..., Receiver]) -> None:
    """The app's whole webhook workflow through the OpenAPI document's operations: each answer
    is checked against its documented schema (as test_schema does for tables)."""
    app, key = app_create(name="a")
    headers = {"Authorization": f"Bearer {key}"}
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:

        def call(path: str, method: str, **kw: Any) -> Any:
            case = schema[path][method].Case(headers=headers, **kw)
            response = case.call()
            case.validate_response(response, checks=CONFORMS)
            return response.json() if response.content else None

        hook = call("/api/v1/webhooks", "POST", body={"url": receiver().url, "event_types": ["game_started"]})
        ids = {"webhook_id": hook["id"]}
        refused = call("/api/v1/webhooks", "POST", body={"url": "ftp://x"})  # documented, conforms
        assert refused["code"] == "invalid_url"
        call("/api/v1/webhooks", "GET")
        call("/api/v1/webhooks/{webhook_id}", "GET", path_parameters=ids)
        call("/api/v1/webhooks/{webhook_id}", "PATCH", path_parameters=ids, body={"description": "mine"})
        call("/api/v1/webhooks/{webhook_id}/secret", "POST", path_parameters=ids)
        services.table_create(
            options={}, bots=dict.fromkeys(range(4), "basic"), app=app
        )  # no commit: no game
        webhooks.deliver_due()
        page = call("/api/v1/webhooks/{webhook_id}/deliveries", "GET", path_parameters=ids)
        one = {**ids, "delivery_id": page["results"][0]["id"]}
        assert call("/api/v1/webhooks/{webhook_id}/deliveries/{delivery_id}", "GET", path_parameters=one)[
            "log"
        ]
        call("/api/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver", "POST", path_parameters=one)
        call("/api/v1/webhooks/{webhook_id}", "DELETE", path_parameters=ids)
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def test_the_committed_body_schema_is_the_generated_one_and_refuses_hidden_cards() -> None:
    """docs/schemas/webhook-body.schema.json is what games/contracts/webhook_schema.py builds from the
    OpenAPI document's event schemas, for the public event types only."""
    openapi = openapi_document()
    generated = body_schema(
        openapi, webhooks.PUBLIC_EVENT_TYPES, webhooks.BODY_TYPE, webhooks.REMINDER_BODY_TYPE
    )
    assert json.loads(SCHEMA_FILE.read_text()) == generated, (
        "regenerate it: python -m games.contracts.webhook_schema > docs/schemas/webhook-body.schema.json"
    )
    Draft202012Validator.check_schema(generated)
    assert {"event", *webhooks.PUBLIC_EVENT_TYPES} <= set(generated["$defs"])
    assert not set(generated["$defs"]) & HIDDEN
    assert "#/components/" not in json.dumps(generated)  # standalone: every $ref is in $defs
    with pytest.raises(ValueError, match="no_such_event"):
        body_schema(openapi, ["card_played", "no_such_event"], webhooks.BODY_TYPE)
    # OpenAPI 3.0's nullable, on a type or on a reference, admits null in JSON Schema too.
    reference = {"allOf": [{"$ref": "#/components/schemas/Thing"}], "nullable": True}
    fields = {"a": {"type": "integer", "nullable": True}, "b": reference}
    document = {"components": {"schemas": {"Event_x": {**_object(fields)}, "Thing": _object({})}}}
    defs = body_schema(document, ["x"], webhooks.BODY_TYPE)["$defs"]
    converted = Draft202012Validator({"$defs": defs, "$ref": "#/$defs/x"})
    assert converted.is_valid({"a": None, "b": None}) and converted.is_valid({"a": 1, "b": {}})
    assert not converted.is_valid({"a": "1", "b": None}) and not converted.is_valid({"a": None, "b": 2})
    played = {"seq": 9, "hand": 1, "type": "card_played", "seat": 2, "card": "QS"}
    body = {
        "id": str(uuid.uuid4()),
        "type": "table.events",
        "webhook": 1,
        "table": 7,
        "seq": 9,
        "hand": 1,
        "created_at": "2026-01-02T03:04:05.678901Z",
        "events": [played],
    }
    assert BODY_SCHEMA.is_valid(body)
    dealt = {"seq": 9, "hand": 1, "type": "cards_dealt", "seat": 2, "cards": ["QS"]}
    for wrong in (
        {**body, "events": [dealt]},  # a seat's own cards: not a webhook event
        {**body, "events": [{**played, "cards": ["QS"]}]},  # a field the event does not have
        {**body, "events": []},
        {**body, "type": "card_played"},
        {k: v for k, v in body.items() if k != "table"},
    ):
        assert not BODY_SCHEMA.is_valid(wrong), wrong


def _object(fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": fields, "required": list(fields), "additionalProperties": False}
