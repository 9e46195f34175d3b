"""Push devices over REST and GraphQL: each kind registered and answered without its token, the same
target registered again moving to whoever registers it, the per-player limit, guests refused FCM and
APNs, bad tokens and keys refused with their field and reason and nothing stored, a player's own
devices and an app's players' (another player's or another app's is not found), and expiry."""

from __future__ import annotations

import base64
import datetime as dt
import json
import secrets
import uuid
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from games.accounts import app_create, player_create
from games.models import Player, PushDevice, PushMessage
from games.push import devices

pytestmark = pytest.mark.django_db

ME = "/api/v1/me/devices"
FCM_TOKEN = "dX1fAkeFcmReg:APA91bH" + "x" * 120
APNS_TOKEN = "ab" * 32


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def subscription_keys() -> dict[str, str]:
    """A browser's subscription keys: a fresh P-256 public key and a 16-byte auth secret."""
    point = (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    )
    return {"p256dh": b64url(point), "auth": b64url(secrets.token_bytes(16))}


def endpoint() -> str:
    return f"https://push.example.net/wp/{uuid.uuid4().hex}"


def webpush(**extra: Any) -> dict[str, Any]:
    return {"kind": "webpush", "token": endpoint(), "keys": subscription_keys(), **extra}


def client(secret: str | None = None, language: str | None = None) -> APIClient:
    c = APIClient()
    if secret:
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    if language:
        c.defaults["HTTP_ACCEPT_LANGUAGE"] = language
    return c


def gql(query: str, token: str | None = None, **variables: Any) -> dict[str, Any]:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    r = Client().post(
        "/graphql/", {"query": query, "variables": variables}, content_type="application/json", **headers
    )
    assert r.status_code == 200, r.content
    body: dict[str, Any] = r.json()
    assert "errors" not in body, body
    return body["data"]


def app_player(name: str = "p") -> tuple[Any, str, Player, str]:
    """An app, its key, one of its players and the player's token."""
    app, key = app_create(name=f"app-{name}")
    player, token = player_create(app=app, name=name)
    return app, key, player, token


# -- registering -----------------------------------------------------------------------------------


def test_a_player_registers_each_kind_and_the_answer_shows_only_the_tokens_end() -> None:
    _, _, player, token = app_player()
    me = client(token)
    push = webpush(label="Laptop")
    answers = [
        me.post(ME, {"kind": "fcm", "token": FCM_TOKEN, "label": "Phone"}, format="json"),
        me.post(
            ME, {"kind": "apns", "token": APNS_TOKEN.upper(), "topic": "com.example.hearts"}, format="json"
        ),
        me.post(ME, push, format="json"),
    ]
    assert [r.status_code for r in answers] == [201, 201, 201], [r.json() for r in answers]
    fcm, apns, web = (r.json() for r in answers)
    assert set(fcm) == {
        "id",
        "kind",
        "label",
        "token_hint",
        "topic",
        "created_at",
        "expires_at",
        "last_pushed_at",
    }
    assert (fcm["kind"], fcm["label"], fcm["token_hint"], fcm["topic"]) == (
        "fcm",
        "Phone",
        FCM_TOKEN[-6:],
        None,
    )
    assert (apns["kind"], apns["token_hint"], apns["topic"]) == (
        "apns",
        APNS_TOKEN[-6:],
        "com.example.hearts",
    )
    assert (web["kind"], web["label"], web["token_hint"]) == ("webpush", "Laptop", push["token"][-6:])
    assert fcm["expires_at"] is None and fcm["last_pushed_at"] is None and fcm["created_at"]
    # The whole token (a bearer secret for the provider) and the subscription keys are in no answer.
    listed = me.get(ME)
    shown = b"".join(r.content for r in [*answers, listed]).decode()
    for secret in (FCM_TOKEN, APNS_TOKEN, APNS_TOKEN.upper(), push["token"], *push["keys"].values()):
        assert secret not in shown
    assert [d["id"] for d in listed.json()["results"]] == [fcm["id"], apns["id"], web["id"]]
    stored = {d.kind: d for d in PushDevice.objects.filter(player=player)}
    assert stored["apns"].token == APNS_TOKEN  # lower case, as APNs writes it
    assert stored["webpush"].keys == push["keys"] and stored["webpush"].token == push["token"]
    assert {d.scope for d in stored.values()} == {player.app_id}


def test_registering_the_same_target_again_updates_it_and_another_player_takes_it_over() -> None:
    app, _, first, first_token = app_player("first")
    second, second_token = player_create(app=app, name="second")
    push = webpush(label="Kitchen tablet")
    made = client(first_token).post(ME, push, format="json")
    assert made.status_code == 201
    device_id = made.json()["id"]
    again = client(first_token).post(
        ME, {**push, "label": "Tablet", "keys": subscription_keys()}, format="json"
    )
    assert again.status_code == 200 and again.json()["id"] == device_id and again.json()["label"] == "Tablet"
    waiting = PushMessage.objects.create(
        uuid=uuid.uuid4(), device_id=device_id, kind="turn", key="turn:1:1", not_before=timezone.now()
    )
    # The same browser, now signed in as someone else: the device moves, with nothing of the first
    # player's registration (their label) and none of what was waiting for them.
    moved = client(second_token).post(
        ME, {"kind": "webpush", "token": push["token"], "keys": push["keys"]}, format="json"
    )
    assert moved.status_code == 200, moved.json()
    assert moved.json()["id"] == device_id and moved.json()["label"] == ""
    assert client(first_token).get(ME).json()["results"] == []
    assert [d["id"] for d in client(second_token).get(ME).json()["results"]] == [device_id]
    assert PushDevice.objects.get(pk=device_id).player_id == second.pk
    waiting.refresh_from_db()
    assert (waiting.status, waiting.last_error) == (PushMessage.Status.CANCELLED, "device_moved")
    # Another app's player registering the same endpoint has a device of their own (another scope).
    _, _, _, other_token = app_player("elsewhere")
    assert client(other_token).post(ME, push, format="json").status_code == 201
    assert PushDevice.objects.filter(token=push["token"]).count() == 2
    assert first.devices.count() == 0


def test_a_player_has_at_most_the_configured_number_of_devices(settings: Any) -> None:
    settings.PUSH_MAX_DEVICES = 2
    _, _, player, token = app_player()
    me = client(token)
    bodies = [webpush(), webpush()]
    kept = [me.post(ME, body, format="json").json() for body in bodies]
    refused = me.post(ME, {"kind": "fcm", "token": FCM_TOKEN}, format="json")
    assert refused.status_code == 409
    assert refused.json()["code"] == "too_many_devices" and refused.json()["limit"] == 2
    assert player.devices.count() == 2
    # Registering one of the two again is no new device: it still works at the limit.
    assert me.post(ME, bodies[1], format="json").status_code == 200
    # An expired device no longer counts; a removed one frees its place.
    PushDevice.objects.filter(pk=kept[0]["id"]).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert me.post(ME, webpush(), format="json").status_code == 201
    assert me.delete(f"{ME}/{kept[1]['id']}").status_code == 204
    assert me.post(ME, {"kind": "fcm", "token": FCM_TOKEN}, format="json").status_code == 201
    assert player.devices.count() == 2


def test_a_device_already_held_counts_against_the_limit_of_whoever_takes_it(settings: Any) -> None:
    settings.PUSH_MAX_DEVICES = 1
    app, _, _, first_token = app_player("first")
    _, second_token = player_create(app=app, name="second")
    shared = webpush()
    assert client(first_token).post(ME, shared, format="json").status_code == 201
    assert client(second_token).post(ME, webpush(), format="json").status_code == 201
    taken = client(second_token).post(ME, shared, format="json")
    assert taken.status_code == 409 and taken.json()["code"] == "too_many_devices"
    assert len(client(first_token).get(ME).json()["results"]) == 1  # still the first player's
    again = client(first_token).post(ME, shared, format="json")
    assert again.status_code == 200  # the holder at the limit registers it again


def test_a_guest_registers_only_web_push() -> None:
    _, token = player_create(app=None, name="guest")
    me = client(token)
    for body in ({"kind": "fcm", "token": FCM_TOKEN}, {"kind": "apns", "token": APNS_TOKEN}):
        r = me.post(ME, body, format="json")
        assert r.status_code == 422 and r.json()["code"] == "device_kind_not_allowed", r.json()
    assert PushDevice.objects.count() == 0
    made = me.post(ME, webpush(), format="json")
    assert made.status_code == 201 and PushDevice.objects.get().scope == 0


NOT_ON_CURVE = b64url(b"\x04" + b"\x00" * 64)
BAD = [
    # (a change to a good webpush registration, or a whole body; the field; the reason)
    ({"kind": "fcm", "token": "short"}, "token", "format"),
    (
        {"kind": "fcm", "token": "a token with spaces in it, which no registration token has"},
        "token",
        "format",
    ),
    ({"kind": "apns", "token": "zz" * 32}, "token", "format"),
    ({"kind": "apns", "token": "a" * 63}, "token", "format"),
    ({"token": "ftp://push.example.net/x"}, "token", "scheme"),
    ({"token": "push.example.net/x"}, "token", "scheme"),
    ({"token": "https://user:pw@push.example.net/x"}, "token", "credentials"),
    ({"token": "https://push.example.net/x#frag"}, "token", "malformed"),
    ({"token": "https:///x"}, "token", "host"),
    ({"keys": None}, "keys", "malformed"),
    ({"keys": {"p256dh": "x"}}, "keys", "malformed"),
    (
        {"keys": {"p256dh": b64url(b"\x04" + b"\x01" * 63), "auth": b64url(b"a" * 16)}},
        "keys.p256dh",
        "length",
    ),
    ({"keys": {"p256dh": NOT_ON_CURVE, "auth": b64url(b"a" * 16)}}, "keys.p256dh", "curve"),
    ({"keys": {"p256dh": "not base64!", "auth": b64url(b"a" * 16)}}, "keys.p256dh", "malformed"),
    ({"topic": "com.example.app"}, "topic", "kind"),
    ({"kind": "fcm", "token": FCM_TOKEN, "keys": {"p256dh": "a", "auth": "b"}}, "keys", "kind"),
    ({"kind": "apns", "token": APNS_TOKEN, "topic": "not a bundle id"}, "topic", "format"),
    ({"expires_at": "2001-01-01T00:00:00Z"}, "expires_at", "past"),
    ({"expires_at": (timezone.now() + dt.timedelta(days=400)).isoformat()}, "expires_at", "too_far"),
]


@pytest.mark.parametrize(
    ("change", "field", "reason"), BAD, ids=[f"{f}-{r}-{i}" for i, (_, f, r) in enumerate(BAD)]
)
def test_a_bad_target_is_refused_with_its_field_and_reason_and_nothing_is_stored(
    change: dict[str, Any], field: str, reason: str
) -> None:
    _, _, _, token = app_player()
    body = {**webpush(), **change}
    if body["kind"] != "webpush" and "keys" not in change:
        del body["keys"]
    body = {k: v for k, v in body.items() if v is not None}  # None: the field left out
    r = client(token).post(ME, body, format="json")
    assert r.status_code == 400, r.json()
    assert (r.json()["code"], r.json()["field"], r.json()["reason"]) == ("invalid_device", field, reason)
    assert PushDevice.objects.count() == 0


def test_plain_http_and_private_addresses_are_for_local_push_services_only(settings: Any) -> None:
    _, _, _, token = app_player()
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = False
    for url, reason in (
        ("http://push.example.net/x", "scheme"),
        ("https://127.0.0.1:8443/x", "private"),
        ("https://[::1]/x", "private"),
        ("https://10.0.0.7/x", "private"),
    ):
        r = client(token).post(ME, webpush(token=url), format="json")
        assert (r.status_code, r.json().get("reason")) == (400, reason), url
    assert PushDevice.objects.count() == 0
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    assert client(token).post(ME, webpush(token="http://127.0.0.1:8443/x"), format="json").status_code == 201


def test_the_input_itself_is_checked_as_every_operation_checks_it() -> None:
    _, _, _, token = app_player()
    for body in (
        {"kind": "sms", "token": FCM_TOKEN},
        {"kind": "fcm"},
        {"kind": "fcm", "token": 5},
        {**webpush(), "label": "x" * 65},
        {**webpush(), "label": "nul\x00"},
        {**webpush(), "keys": "keys"},
        {**webpush(), "expires_at": "soon"},
        {**webpush(), "colour": "red"},
    ):
        r = client(token).post(ME, body, format="json")
        assert r.status_code == 400 and r.json()["code"] == "invalid_input", body
    assert PushDevice.objects.count() == 0


# -- who may see and remove them ----------------------------------------------------------------


def test_a_player_lists_and_removes_their_own_devices_only() -> None:
    app, key, _, token = app_player()
    _, other_token = player_create(app=app, name="other")
    mine = client(token).post(ME, webpush(), format="json").json()
    theirs = client(other_token).post(ME, webpush(), format="json").json()
    assert client(other_token).delete(f"{ME}/{mine['id']}").status_code == 404
    assert client(token).delete(f"{ME}/{theirs['id']}").json()["code"] == "not_found"
    assert client(token).delete(f"{ME}/{mine['id']}").status_code == 204
    assert client(token).get(ME).json()["results"] == []
    assert client(token).delete(f"{ME}/{mine['id']}").status_code == 404
    assert [d["id"] for d in client(other_token).get(ME).json()["results"]] == [theirs["id"]]
    # An app key has no devices of its own; a player token cannot use the app's paths.
    for r in (client(key).get(ME), client(key).post(ME, webpush(), format="json")):
        assert r.status_code == 422 and r.json()["code"] == "player_token_required"
    assert client().get(ME).status_code == 401


def test_an_app_manages_its_players_devices_and_never_another_apps() -> None:
    app, key, player, token = app_player()
    other_player, _ = player_create(app=app, name="other")
    _, stranger_key = app_create(name="stranger")
    theirs = f"/api/v1/players/{player.pk}/devices"
    made = client(key).post(theirs, {"kind": "apns", "token": APNS_TOKEN, "label": "iPad"}, format="json")
    assert made.status_code == 201 and made.json()["label"] == "iPad"
    assert client(key).post(theirs, {"kind": "apns", "token": APNS_TOKEN}, format="json").status_code == 200
    assert [d["id"] for d in client(key).get(theirs).json()["results"]] == [made.json()["id"]]
    assert [d["id"] for d in client(token).get(ME).json()["results"]] == [
        made.json()["id"]
    ]  # the player's own
    # Another app's key: that player does not exist for it.
    assert client(stranger_key).get(theirs).json()["code"] == "not_found"
    assert client(stranger_key).post(theirs, webpush(), format="json").status_code == 404
    assert client(stranger_key).delete(f"{theirs}/{made.json()['id']}").status_code == 404
    # The device of one player is not another player's, even of the same app.
    other = f"/api/v1/players/{other_player.pk}/devices"
    assert client(key).delete(f"{other}/{made.json()['id']}").status_code == 404
    assert client(token).get(theirs).json()["code"] == "app_key_required"
    assert client(token).post(theirs, webpush(), format="json").json()["code"] == "app_key_required"
    assert client(key).delete(f"{theirs}/{made.json()['id']}").status_code == 204
    assert client(key).get(theirs).json()["results"] == []


def test_an_expired_device_is_not_listed_and_the_sweep_removes_it() -> None:
    _, _, player, token = app_player()
    soon = (timezone.now() + dt.timedelta(hours=1)).isoformat()
    made = client(token).post(ME, webpush(expires_at=soon), format="json").json()
    kept = client(token).post(ME, webpush(), format="json").json()
    assert made["expires_at"] is not None and kept["expires_at"] is None
    later = timezone.now() + dt.timedelta(hours=2)
    assert [d.pk for d in devices.devices_of(player, later)] == [kept["id"]]
    assert devices.prune_expired(timezone.now()) == 0
    assert devices.prune_expired(later) == 1
    assert [d["id"] for d in client(token).get(ME).json()["results"]] == [kept["id"]]
    assert not PushDevice.objects.filter(pk=made["id"]).exists()


def test_a_device_keeps_the_language_it_was_registered_in() -> None:
    _, _, _, token = app_player()
    made = client(token, language="mi").post(ME, webpush(), format="json")
    assert made.status_code == 201
    assert PushDevice.objects.get(pk=made.json()["id"]).language == "mi"


# -- GraphQL: the same operations ------------------------------------------------------------------

DEVICE = "device { id kind label tokenHint topic expiresAt } created errors { code field }"
REGISTER = f"""mutation($kind: DeviceKind!, $target: String!, $keys: WebPushKeysInput, $label: String) {{
  registerDevice(kind: $kind, token: $target, keys: $keys, label: $label) {{ {DEVICE} }} }}"""


def test_graphql_registers_lists_and_removes_a_players_devices_as_rest_does() -> None:
    _, key, _, token = app_player()
    push = webpush()
    made = gql(REGISTER, token, kind="webpush", target=push["token"], keys=push["keys"], label="Phone")[
        "registerDevice"
    ]
    assert made["errors"] == [] and made["created"] is True
    assert made["device"]["kind"] == "webpush" and made["device"]["tokenHint"] == push["token"][-6:]
    again = gql(REGISTER, token, kind="webpush", target=push["token"], keys=push["keys"])["registerDevice"]
    assert again["created"] is False and again["device"]["id"] == made["device"]["id"]
    listed = gql("{ myDevices { id label } me { devices { id } } }", token)
    assert listed["myDevices"] == [{"id": made["device"]["id"], "label": ""}]
    assert listed["me"]["devices"] == [{"id": made["device"]["id"]}]
    assert push["token"] not in json.dumps(listed)
    bad = {**push["keys"], "p256dh": NOT_ON_CURVE}
    refused = gql(REGISTER, token, kind="webpush", target=endpoint(), keys=bad)["registerDevice"]
    assert refused == {
        "device": None,
        "created": False,
        "errors": [{"code": "invalid_device", "field": "keys.p256dh"}],
    }
    late = gql(
        "mutation($target: String!) { registerDevice(kind: fcm, token: $target, "
        f'expiresAt: "2001-01-01T00:00:00Z") {{ {DEVICE} }} }}',
        token,
        target=FCM_TOKEN,
    )["registerDevice"]
    assert late["errors"] == [{"code": "invalid_device", "field": "expiresAt"}]
    assert gql("{ me { devices { id } } }", key)["me"]["devices"] is None  # an app key has none
    app_refused = gql(REGISTER, key, kind="webpush", target=endpoint(), keys=push["keys"])["registerDevice"]
    assert app_refused["errors"] == [{"code": "player_token_required", "field": None}]
    deleted = gql(
        "mutation($id: Int!) { deleteDevice(id: $id) { deleted errors { code } } }",
        token,
        id=made["device"]["id"],
    )
    assert deleted == {"deleteDevice": {"deleted": True, "errors": []}}
    gone = gql(
        "mutation($id: Int!) { deleteDevice(id: $id) { deleted errors { code } } }",
        token,
        id=made["device"]["id"],
    )
    assert gone == {"deleteDevice": {"deleted": False, "errors": [{"code": "not_found"}]}}
    assert gql("{ myDevices { id } }", token)["myDevices"] == []


def test_graphql_refuses_a_guest_fcm_and_serves_an_apps_players_devices() -> None:
    _, guest_token = player_create(app=None, name="guest")
    refused = gql(REGISTER, guest_token, kind="fcm", target=FCM_TOKEN)["registerDevice"]
    assert refused["errors"] == [{"code": "device_kind_not_allowed", "field": None}]
    app, key, player, _ = app_player()
    _, stranger_key = app_create(name="stranger")
    register = f"""mutation($p: Int!) {{ registerPlayerDevice(playerId: $p, kind: apns, token: "{APNS_TOKEN}",
      topic: "com.example.hearts") {{ {DEVICE} }} }}"""
    made = gql(register, key, p=player.pk)["registerPlayerDevice"]
    assert made["created"] is True and made["device"]["topic"] == "com.example.hearts"
    assert gql(register, stranger_key, p=player.pk)["registerPlayerDevice"]["errors"] == [
        {"code": "not_found", "field": None}
    ]
    listed = "query($p: Int!) { playerDevices(playerId: $p) { id kind } }"
    assert gql(listed, key, p=player.pk)["playerDevices"] == [{"id": made["device"]["id"], "kind": "apns"}]
    assert gql(listed, stranger_key, p=player.pk)["playerDevices"] is None
    delete = (
        "mutation($p: Int!, $id: Int!) { deletePlayerDevice(playerId: $p, id: $id) "
        "{ deleted errors { code } } }"
    )
    assert (
        gql(delete, stranger_key, p=player.pk, id=made["device"]["id"])["deletePlayerDevice"]["deleted"]
        is False
    )
    assert gql(delete, key, p=player.pk, id=made["device"]["id"])["deletePlayerDevice"] == {
        "deleted": True,
        "errors": [],
    }
    assert gql(listed, key, p=player.pk)["playerDevices"] == []
    assert app.pk and PushDevice.objects.count() == 0


# -- the Python SDK ---------------------------------------------------------------------------------


# Through the WSGI app, whose end of request closes the connection: not inside a test transaction.
@pytest.mark.django_db(transaction=True)
def test_the_python_sdk_registers_lists_and_removes_devices_for_a_player_and_for_an_app() -> None:
    """The SDK's calls, in process through the WSGI app: a player's own devices, then an app's
    player's, with the API's refusals raised as the SDK's errors."""
    import httpx
    from hearts_client import HeartsClient
    from hearts_client.errors import BadRequest, NotFound, RulesError

    from hearts_service.wsgi import application

    _, key, player, token = app_player()

    wsgi = httpx.WSGITransport(app=application)
    with httpx.Client(transport=wsgi) as mine, httpx.Client(transport=wsgi) as apps:  # a header each
        me = HeartsClient("http://localhost", token, http=mine)
        app = HeartsClient("http://localhost", key, http=apps)
        push = webpush()
        made = me.devices.register("webpush", push["token"], keys=push["keys"], label="Laptop")
        assert made["label"] == "Laptop" and made["token_hint"] == push["token"][-6:]
        again = me.devices.register("webpush", push["token"], keys=push["keys"])
        assert again["id"] == made["id"] and again["label"] == ""
        assert [d["id"] for d in me.devices.list()] == [made["id"]]
        with pytest.raises(BadRequest) as bad:
            me.devices.register("apns", "not hex")
        assert bad.value.code == "invalid_device"
        me.devices.delete(made["id"])
        assert me.devices.list() == []
        with pytest.raises(NotFound):
            me.devices.delete(made["id"])

        theirs = app.devices.register_for(player.pk, "fcm", FCM_TOKEN, label="Pixel")
        assert [d["id"] for d in app.devices.list_for(player.pk)] == [theirs["id"]]
        assert [d["id"] for d in me.devices.list()] == [theirs["id"]]
        with pytest.raises(RulesError) as refused:
            app.devices.list()
        assert refused.value.code == "player_token_required"
        app.devices.delete_for(player.pk, theirs["id"])
        assert app.devices.list_for(player.pk) == []
