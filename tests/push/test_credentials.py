"""An app's push credentials over REST and GraphQL: FCM service accounts and APNs keys set, shown
(public fields only) and removed; no private key in any answer or log line; bad keys refused with the
field at fault; secrets encrypted at rest, rotated to a new first key by `push_rotate_keys`; the VAPID
pair made once per app and served to anyone who subscribes a browser."""

from __future__ import annotations

import base64
import json
import logging
from io import StringIO
from typing import Any
from unittest import mock

import pytest
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from django.contrib import admin
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.test import Client, RequestFactory
from rest_framework.test import APIClient

from games.accounts import app_create, player_create
from games.models import PushCredential
from games.push import credentials

pytestmark = pytest.mark.django_db

SETTINGS = "/api/v1/app/push"
FCM = "/api/v1/app/push/fcm"
APNS = "/api/v1/app/push/apns"
VAPID = "/api/v1/push/vapid-key"


def pem(key: PrivateKeyTypes, password: bytes | None = None) -> str:
    encryption = serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    ).decode()


def same_key(one: str, other: str) -> bool:
    """Two PEM texts of the same RSA private key (however each is written)."""
    keys = [serialization.load_pem_private_key(text.encode(), None) for text in (one, other)]
    assert all(isinstance(key, rsa.RSAPrivateKey) for key in keys)
    return bool(keys[0].private_numbers() == keys[1].private_numbers())  # type: ignore[union-attr]


def body_lines(text: str) -> list[str]:
    """The base64 lines of a PEM: the key itself (the header and footer are not secret)."""
    return [line for line in text.splitlines() if line and not line.startswith("-----")]


@pytest.fixture(scope="module")
def rsa_pem() -> str:
    return pem(rsa.generate_private_key(public_exponent=65537, key_size=2048))


def p8() -> str:
    """An APNs token key as Apple's .p8 file holds it: EC P-256, PKCS#8 PEM."""
    return pem(ec.generate_private_key(ec.SECP256R1()))


def service_account(key: str, **changes: Any) -> dict[str, Any]:
    """A service account's JSON key file as Google's console downloads it."""
    account = {
        "type": "service_account",
        "project_id": "hearts-test-1",
        "private_key_id": "0123456789abcdef0123456789abcdef01234567",
        "private_key": key,
        "client_email": "push@hearts-test-1.iam.gserviceaccount.com",
        "client_id": "1234567890",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": "https://oauth2.googleapis.com/token",
        "universe_domain": "googleapis.com",
    }
    account.update(changes)
    return {k: v for k, v in account.items() if v is not None}


def apns(key: str, **changes: Any) -> dict[str, Any]:
    return {
        "key_id": "ABC123DEFG",
        "team_id": "DEF123GHIJ",
        "topic": "com.example.hearts",
        "sandbox": True,
        "private_key": key,
        **changes,
    }


def client(secret: str | None = None) -> APIClient:
    c = APIClient()
    if secret:
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return c


def gql(query: str, token: str | None = None, **variables: Any) -> tuple[dict[str, Any], str]:
    """The data of a query that must not fail as a whole, and the answer's text."""
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    r = Client().post(
        "/graphql/", {"query": query, "variables": variables}, content_type="application/json", **headers
    )
    assert r.status_code == 200 and "errors" not in r.json(), r.content
    return r.json()["data"], r.content.decode()


# -- set, show, remove ------------------------------------------------------------------------------


def test_an_app_sets_shows_and_removes_its_fcm_and_apns_credentials(rsa_pem: str) -> None:
    app, key = app_create(name="a")
    _, token = player_create(app=app, name="p")
    api = client(key)
    empty = api.get(SETTINGS).json()
    assert empty["fcm"] is None and empty["apns"] is None and empty["webpush"]["public_key"]
    set_fcm = api.put(FCM, {"service_account": service_account(rsa_pem)}, format="json")
    assert set_fcm.status_code == 200, set_fcm.json()
    fcm = set_fcm.json()["fcm"]
    assert {k: v for k, v in fcm.items() if k != "updated_at"} == {
        "project_id": "hearts-test-1",
        "client_email": "push@hearts-test-1.iam.gserviceaccount.com",
        "private_key_id": "0123456789abcdef0123456789abcdef01234567",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    set_apns = api.put(APNS, apns(p8()), format="json")
    assert set_apns.status_code == 200, set_apns.json()
    assert {k: v for k, v in set_apns.json()["apns"].items() if k != "updated_at"} == {
        "key_id": "ABC123DEFG",
        "team_id": "DEF123GHIJ",
        "topic": "com.example.hearts",
        "sandbox": True,
    }
    shown = api.get(SETTINGS).json()
    assert shown == set_apns.json() and shown["fcm"] == fcm and shown["webpush"] == empty["webpush"]
    # Setting again replaces.
    replaced = api.put(APNS, apns(p8(), sandbox=False, key_id="ZYX987WVUT"), format="json").json()["apns"]
    assert (replaced["sandbox"], replaced["key_id"]) == (False, "ZYX987WVUT")
    assert PushCredential.objects.filter(scope=app.pk, provider="apns").count() == 1
    assert api.delete(FCM).status_code == 204
    assert api.delete(FCM).json()["code"] == "not_found"
    assert api.get(SETTINGS).json()["fcm"] is None and api.get(SETTINGS).json()["apns"] == replaced
    assert api.delete(APNS).status_code == 204
    assert api.delete("/api/v1/app/push/webpush").status_code == 404  # the VAPID pair is not removable
    # A player token (or no credentials) manages none of it.
    for r in (
        client(token).get(SETTINGS),
        client(token).put(FCM, {"service_account": service_account(rsa_pem)}, format="json"),
        client(token).put(APNS, apns(p8()), format="json"),
        client(token).delete(APNS),
    ):
        assert r.status_code == 422 and r.json()["code"] == "app_key_required"
    assert client().get(SETTINGS).status_code == 401
    assert not PushCredential.objects.filter(provider__in=["fcm", "apns"]).exists()


def test_no_answer_and_no_log_line_ever_holds_a_private_key(
    rsa_pem: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    app, key = app_create(name="a")
    apns_key = p8()
    secrets = body_lines(rsa_pem) + body_lines(apns_key)
    api = client(key)
    answers = [
        api.put(FCM, {"service_account": service_account(rsa_pem)}, format="json").content.decode(),
        api.put(APNS, apns(apns_key), format="json").content.decode(),
        api.get(SETTINGS).content.decode(),
        gql("{ pushSettings { fcm { projectId privateKeyId } apns { keyId } webpush { publicKey } } }", key)[
            1
        ],
        gql(
            "mutation($sa: String!) { setFcmCredential(serviceAccount: $sa) { "
            "settings { fcm { clientEmail } } errors { code } } }",
            key,
            sa=json.dumps(service_account(rsa_pem)),
        )[1],
        # A refusal does not quote the key either.
        api.put(APNS, apns(rsa_pem), format="json").content.decode(),
        api.put(FCM, {"service_account": service_account(apns_key)}, format="json").content.decode(),
    ]
    assert all(answers)
    for text in [*answers, caplog.text]:
        assert not [line for line in secrets if line in text]
    vapid = credentials.credential_for(app.pk, "webpush")
    assert vapid is not None
    for text in [*answers, caplog.text]:
        assert not [line for line in body_lines(vapid["private_key"]) if line in text]
    # What an admin page could show: the admin, if it has the model at all, shows no secret.
    if admin.site.is_registered(PushCredential):
        model_admin = admin.site._registry[PushCredential]
        request = RequestFactory().get("/")
        shown = [*model_admin.get_fields(request), *model_admin.get_list_display(request)]
        assert "secret" not in shown
    assert all(line not in repr(row) + str(row) for row in PushCredential.objects.all() for line in secrets)


def test_the_stored_secret_is_encrypted_and_the_sender_reads_it_back(rsa_pem: str) -> None:
    app, key = app_create(name="a")
    apns_key = p8()
    client(key).put(FCM, {"service_account": service_account(rsa_pem)}, format="json")
    client(key).put(APNS, apns(apns_key), format="json")
    for row in PushCredential.objects.filter(scope=app.pk):
        assert "PRIVATE KEY" not in row.secret and not [
            s for s in body_lines(rsa_pem + apns_key) if s in row.secret
        ]
        assert "private_key" not in row.public
        assert credentials.decrypt(row.secret).startswith("-----BEGIN PRIVATE KEY-----")
    fcm = credentials.credential_for(app.pk, "fcm")
    assert fcm is not None and set(fcm) == {
        "project_id",
        "client_email",
        "private_key",
        "private_key_id",
        "token_uri",
    }
    assert same_key(fcm["private_key"], rsa_pem)
    sent = credentials.credential_for(app.pk, "apns")
    assert sent is not None and set(sent) == {"key_id", "team_id", "topic", "sandbox", "private_key"}
    assert sent["sandbox"] is True and sent["topic"] == "com.example.hearts"
    web = credentials.credential_for(app.pk, "webpush")
    assert web is not None and set(web) == {"public_key", "private_key", "subject"}
    other, _ = app_create(name="no credentials")
    assert credentials.credential_for(other.pk, "fcm") is None
    assert credentials.credential_for(other.pk, "apns") is None


# -- refusals ---------------------------------------------------------------------------------------


def _small_rsa() -> str:
    return pem(rsa.generate_private_key(public_exponent=65537, key_size=1024))


FCM_BAD = [
    ({"type": "authorized_user"}, "service_account.type", "type"),
    ({"project_id": None}, "service_account.project_id", "format"),
    ({"project_id": "a/b?c"}, "service_account.project_id", "format"),
    ({"client_email": "not an email"}, "service_account.client_email", "format"),
    ({"private_key_id": ""}, "service_account.private_key_id", "format"),
    ({"token_uri": "ftp://oauth2.googleapis.com/token"}, "service_account.token_uri", "scheme"),
    ({"token_uri": "https://user:pw@oauth2.googleapis.com/token"}, "service_account.token_uri", "malformed"),
    (
        {"private_key": "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n"},
        "service_account.private_key",
        "malformed",
    ),
    ({"private_key": None}, "service_account.private_key", "malformed"),
    ({"private_key": "p8"}, "service_account.private_key", "type"),
    ({"private_key": "small"}, "service_account.private_key", "size"),
    ({"private_key": "encrypted"}, "service_account.private_key", "encrypted"),
]


@pytest.mark.parametrize(("change", "field", "reason"), FCM_BAD, ids=[f"{f}-{r}" for _, f, r in FCM_BAD])
def test_a_bad_service_account_is_refused_with_its_field_and_nothing_is_stored(
    rsa_pem: str, change: dict[str, Any], field: str, reason: str
) -> None:
    made = {
        "p8": p8,
        "small": _small_rsa,
        "encrypted": lambda: pem(rsa.generate_private_key(public_exponent=65537, key_size=2048), b"pw"),
    }.get(change.get("private_key") or "")
    if made is not None:  # a key of the wrong kind, made for this case
        change = {**change, "private_key": made()}
    _, app_key = app_create(name="a")
    r = client(app_key).put(FCM, {"service_account": service_account(rsa_pem, **change)}, format="json")
    assert r.status_code == 400, r.json()
    assert (r.json()["code"], r.json()["field"], r.json()["reason"]) == (
        "invalid_push_credential",
        field,
        reason,
    )
    assert not PushCredential.objects.filter(provider="fcm").exists()


def test_plain_http_token_uri_is_for_a_local_server_only(rsa_pem: str, settings: Any) -> None:
    _, key = app_create(name="a")
    local = service_account(rsa_pem, token_uri="http://127.0.0.1:9999/token")
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = False
    refused = client(key).put(FCM, {"service_account": local}, format="json")
    assert (refused.status_code, refused.json()["reason"]) == (400, "scheme")
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    assert client(key).put(FCM, {"service_account": local}, format="json").status_code == 200


APNS_BAD = [
    ({"key_id": "ABC123DEF"}, "key_id", "format"),
    ({"team_id": "def123ghij"}, "team_id", "format"),
    ({"topic": "not a bundle"}, "topic", "format"),
    ({"private_key": "rsa"}, "private_key", "type"),
    ({"private_key": "p384"}, "private_key", "curve"),
    ({"private_key": "garbage"}, "private_key", "malformed"),
]


@pytest.mark.parametrize(("change", "field", "reason"), APNS_BAD, ids=[f"{f}-{r}" for _, f, r in APNS_BAD])
def test_a_bad_apns_key_is_refused_with_its_field_and_nothing_is_stored(
    rsa_pem: str, change: dict[str, Any], field: str, reason: str
) -> None:
    keys = {"rsa": rsa_pem, "p384": pem(ec.generate_private_key(ec.SECP384R1())), "garbage": "garbage"}
    if "private_key" in change:
        change = {"private_key": keys[change["private_key"]]}
    _, app_key = app_create(name="a")
    r = client(app_key).put(APNS, apns(p8(), **change), format="json")
    assert r.status_code == 400, r.json()
    assert (r.json()["code"], r.json()["field"], r.json()["reason"]) == (
        "invalid_push_credential",
        field,
        reason,
    )
    assert not PushCredential.objects.filter(provider="apns").exists()


def test_the_input_itself_is_checked_as_every_operation_checks_it(rsa_pem: str) -> None:
    _, key = app_create(name="a")
    for path, body in (
        (APNS, apns(p8(), sandbox="yes")),
        (APNS, {k: v for k, v in apns(p8()).items() if k != "topic"}),
        (APNS, {**apns(p8()), "extra": 1}),
        (FCM, {"service_account": "not an object"}),
        (FCM, {}),
    ):
        r = client(key).put(path, body, format="json")
        assert r.status_code == 400 and r.json()["code"] == "invalid_input", body
    assert not PushCredential.objects.filter(provider__in=["fcm", "apns"]).exists()


# -- encryption keys and their rotation ----------------------------------------------------------


def test_a_new_first_key_still_reads_old_rows_and_rotation_re_encrypts_them(
    rsa_pem: str, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.PUSH_ENCRYPTION_KEYS = [old]
    app, key = app_create(name="a")
    client(key).put(FCM, {"service_account": service_account(rsa_pem)}, format="json")
    client(key).get(SETTINGS)  # makes the VAPID pair: two rows
    before = dict(PushCredential.objects.values_list("pk", "secret"))
    assert Fernet(old.encode()).decrypt(before[PushCredential.objects.get(provider="fcm").pk].encode())
    updated = {row.pk: row.updated_at for row in PushCredential.objects.all()}

    settings.PUSH_ENCRYPTION_KEYS = [new, old]  # the new key first: it encrypts, both decrypt
    assert credentials.credential_for(app.pk, "fcm") is not None
    out = StringIO()
    call_command("push_rotate_keys", stdout=out)
    assert "re-encrypted 2 push credential(s)" in out.getvalue()
    after = dict(PushCredential.objects.values_list("pk", "secret"))
    assert set(after) == set(before) and all(after[pk] != before[pk] for pk in after)
    for pk, secret in after.items():
        assert Fernet(new.encode()).decrypt(secret.encode()) == Fernet(old.encode()).decrypt(
            before[pk].encode()
        )
    assert {row.pk: row.updated_at for row in PushCredential.objects.all()} == updated  # nothing an app sees

    settings.PUSH_ENCRYPTION_KEYS = [new]  # the old key dropped: every row still reads
    fcm = credentials.credential_for(app.pk, "fcm")
    assert fcm is not None and same_key(fcm["private_key"], rsa_pem)
    settings.PUSH_ENCRYPTION_KEYS = [old]  # only a key that encrypted none of them now
    caplog.set_level(logging.ERROR)
    assert credentials.credential_for(app.pk, "fcm") is None
    assert "cannot be decrypted" in caplog.text
    assert not [line for line in body_lines(rsa_pem) if line in caplog.text]
    with pytest.raises(CommandError, match="cannot be decrypted"):
        call_command("push_rotate_keys", stdout=StringIO())
    assert dict(PushCredential.objects.values_list("pk", "secret")) == after  # all or nothing


def test_without_keys_one_is_derived_from_the_secret_key_and_a_bad_key_is_named_by_position(
    settings: Any,
) -> None:
    settings.PUSH_ENCRYPTION_KEYS = []
    token = credentials.encrypt("the text")
    assert credentials.decrypt(token) == "the text"
    settings.SECRET_KEY = settings.SECRET_KEY + "-changed"
    with pytest.raises(credentials.CredentialUnreadable):
        credentials.decrypt(token)
    bad = "not-a-fernet-key"
    settings.PUSH_ENCRYPTION_KEYS = [Fernet.generate_key().decode(), bad]
    with pytest.raises(ImproperlyConfigured, match="key 2 is not a Fernet key") as raised:
        credentials.encrypt("x")
    assert bad not in str(raised.value)


# -- VAPID ------------------------------------------------------------------------------------------


def _point(public_key: str) -> bytes:
    return base64.urlsafe_b64decode(public_key + "=" * (-len(public_key) % 4))


def test_an_apps_vapid_pair_is_made_once_and_its_halves_match() -> None:
    app, key = app_create(name="a")
    first = client(key).get(SETTINGS).json()["webpush"]["public_key"]
    assert client(key).get(SETTINGS).json()["webpush"]["public_key"] == first
    assert client(key).get(VAPID).json() == {"public_key": first}
    assert "=" not in first and len(_point(first)) == 65 and _point(first)[0] == 4
    assert PushCredential.objects.filter(scope=app.pk, provider="webpush").count() == 1
    sent = credentials.credential_for(app.pk, "webpush")
    assert sent is not None
    private = serialization.load_pem_private_key(sent["private_key"].encode(), None)
    assert isinstance(private, ec.EllipticCurvePrivateKey) and isinstance(private.curve, ec.SECP256R1)
    point = private.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    assert point == _point(first) and sent["public_key"] == first
    assert sent["subject"] == "mailto:push@hearts.invalid"


def test_two_first_needs_at_once_make_one_pair() -> None:
    """The request that loses the race to insert the pair reads the winner's (the unique constraint)."""
    app, _ = app_create(name="a")
    winner = credentials.vapid_public_key(app.pk)
    with mock.patch.object(credentials.PushCredential.objects, "filter") as looked:
        looked.return_value.first.return_value = None  # it did not see the row the other one made
        assert credentials.vapid_public_key(app.pk) == winner
    assert PushCredential.objects.filter(scope=app.pk, provider="webpush").count() == 1


def test_the_vapid_key_is_the_callers_apps_or_the_services_own() -> None:
    app, key = app_create(name="a")
    _, player_token = player_create(app=app, name="p")
    _, guest_token = player_create(app=None, name="g")
    _, other_key = app_create(name="b")
    anonymous = client().get(VAPID)
    assert anonymous.status_code == 200
    service = anonymous.json()["public_key"]
    assert client(guest_token).get(VAPID).json()["public_key"] == service
    own = client(key).get(VAPID).json()["public_key"]
    assert own != service and client(player_token).get(VAPID).json()["public_key"] == own
    assert client(other_key).get(VAPID).json()["public_key"] not in (own, service)
    assert client("hk_player_unknown").get(VAPID).status_code == 401
    assert credentials.vapid_public_key(credentials.SERVICE_SCOPE) == service
    assert gql("{ vapidKey { publicKey } }")[0]["vapidKey"]["publicKey"] == service
    assert gql("{ vapidKey { publicKey } }", player_token)[0]["vapidKey"]["publicKey"] == own


# -- GraphQL: the same operations ------------------------------------------------------------------


def test_graphql_sets_shows_and_removes_credentials_as_rest_does(rsa_pem: str) -> None:
    app, key = app_create(name="a")
    _, token = player_create(app=app, name="p")
    set_fcm = """mutation($sa: String!) { setFcmCredential(serviceAccount: $sa) {
        settings { fcm { projectId clientEmail privateKeyId tokenUri updatedAt } apns { keyId } }
        errors { code field } } }"""
    done = gql(set_fcm, key, sa=json.dumps(service_account(rsa_pem)))[0]["setFcmCredential"]
    assert done["errors"] == [] and done["settings"]["fcm"]["projectId"] == "hearts-test-1"
    assert done["settings"]["apns"] is None
    set_apns = """mutation($k: String!) { setApnsCredential(keyId: "ABC123DEFG", teamId: "DEF123GHIJ",
        topic: "com.example.hearts", sandbox: true, privateKey: $k) {
        settings { apns { keyId teamId topic sandbox } } errors { code field } } }"""
    done = gql(set_apns, key, k=p8())[0]["setApnsCredential"]
    assert done["settings"]["apns"] == {
        "keyId": "ABC123DEFG",
        "teamId": "DEF123GHIJ",
        "topic": "com.example.hearts",
        "sandbox": True,
    }
    not_json = gql(set_fcm, key, sa="{not json")[0]["setFcmCredential"]
    assert not_json == {
        "settings": None,
        "errors": [{"code": "invalid_push_credential", "field": "serviceAccount"}],
    }
    bad_key = gql(set_apns, key, k=rsa_pem)[0]["setApnsCredential"]
    assert bad_key["errors"] == [{"code": "invalid_push_credential", "field": "privateKey"}]
    refused = gql(set_apns, token, k=p8())[0]["setApnsCredential"]
    assert refused["errors"] == [{"code": "app_key_required", "field": None}]
    shown = gql("{ pushSettings { fcm { projectId } apns { topic } webpush { publicKey } } }", key)[0]
    assert shown["pushSettings"]["fcm"] == {"projectId": "hearts-test-1"}
    assert shown["pushSettings"]["webpush"]["publicKey"] == client(key).get(VAPID).json()["public_key"]
    delete = "mutation { deleteFcmCredential { deleted errors { code } } }"
    assert gql(delete, key)[0]["deleteFcmCredential"] == {"deleted": True, "errors": []}
    assert gql(delete, key)[0]["deleteFcmCredential"] == {"deleted": False, "errors": [{"code": "not_found"}]}
    removed = gql("mutation { deleteApnsCredential { deleted errors { code } } }", key)[0]
    assert removed["deleteApnsCredential"]["deleted"] is True
    assert gql("{ pushSettings { fcm { projectId } apns { topic } } }", key)[0]["pushSettings"] == {
        "fcm": None,
        "apns": None,
    }
    assert app.pk


# -- the Python SDK ---------------------------------------------------------------------------------


# Through the WSGI app, whose end of request closes the connection: not inside a test transaction.
@pytest.mark.django_db(transaction=True)
def test_the_python_sdk_sets_shows_and_removes_push_credentials(rsa_pem: str) -> None:
    """The SDK's calls, in process through the WSGI app."""
    import httpx
    from hearts_client import HeartsClient
    from hearts_client.errors import BadRequest, NotFound

    from hearts_service.wsgi import application

    _, key = app_create(name="a")

    wsgi = httpx.WSGITransport(app=application)
    with httpx.Client(transport=wsgi) as apps, httpx.Client(transport=wsgi) as anyones:  # a header each
        app = HeartsClient("http://localhost", key, http=apps)
        anyone = HeartsClient("http://localhost", http=anyones)
        shown = app.push.set_fcm(service_account(rsa_pem))
        assert shown["fcm"] is not None and shown["fcm"]["project_id"] == "hearts-test-1"
        shown = app.push.set_apns("ABC123DEFG", "DEF123GHIJ", "com.example.hearts", p8(), sandbox=True)
        assert shown["apns"] is not None and shown["apns"]["sandbox"] is True
        assert app.push.get_settings() == shown
        assert app.push.vapid_key() == shown["webpush"]
        assert anyone.push.vapid_key()["public_key"] != shown["webpush"]["public_key"]  # the service's
        with pytest.raises(BadRequest) as bad:
            app.push.set_apns("ABC123DEFG", "DEF123GHIJ", "com.example.hearts", rsa_pem)
        assert (bad.value.code, bad.value.body["field"]) == ("invalid_push_credential", "private_key")
        app.push.delete("fcm")
        app.push.delete_apns()
        with pytest.raises(NotFound):
            app.push.delete("apns")
        with pytest.raises(ValueError, match="fcm or apns"):
            app.push.delete("webpush")
        assert app.push.get_settings()["fcm"] is None and app.push.get_settings()["apns"] is None


@pytest.mark.django_db
def test_an_apps_push_keys_are_deleted_with_it() -> None:
    app, _ = app_create(name="leaving")
    credentials.vapid_public_key(app.pk)
    other, _ = app_create(name="staying")
    credentials.vapid_public_key(other.pk)
    app.delete()
    assert list(PushCredential.objects.values_list("scope", flat=True)) == [other.pk]
