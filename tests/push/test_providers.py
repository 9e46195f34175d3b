"""The push providers' wire protocols (games.push.providers) against local servers that check each
request as FCM, APNs and a Web Push service do: what arrives, and how each answer is read."""

from __future__ import annotations

import base64
import datetime as dt
import email.utils
import socket
import ssl
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import time_machine
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from games.push.providers import (
    Note,
    Outcome,
    Target,
    apns,
    apns_collapse_id,
    fcm,
    retry_after,
    webpush,
    webpush_topic,
)
from tests.push.providers import FakeAPNs, FakeFCM, FakeWebPush

TIMEOUT = 5.0
MESSAGE = str(uuid.uuid4())
NOTE = Note(
    title="À toi de jouer",
    body="Table 7 : c'est ton tour de jouer.",
    collapse="table:7",
    data={"kind": "turn", "table": "7", "message": MESSAGE},
    ttl=3600,
    language="fr",
)


def no_secret_in(outcome: Outcome, *secrets: str) -> bool:
    """Neither a secret nor any long piece of one (a PEM's base64 line, a token's tail) is in the
    outcome's error: what PushMessage.last_error keeps and an app's delivery log may show."""
    for secret in secrets:
        pieces = [secret] + [line for line in secret.splitlines() if len(line) >= 16]
        if len(secret) > 24:
            pieces.append(secret[8:24])
        if any(piece in outcome.error for piece in pieces):
            return False
    return True


def closed_port_url(scheme: str = "http") -> str:
    """A local port nothing listens on: every connection is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"{scheme}://127.0.0.1:{s.getsockname()[1]}"


def other_rsa_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def other_ec_pem() -> str:
    return (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        .decode()
    )


# FCM HTTP v1 ----------------------------------------------------------------------------------


@pytest.fixture
def fake_fcm(settings: Any) -> Iterator[FakeFCM]:
    with FakeFCM() as fake:
        settings.PUSH_FCM_URL = fake.url
        yield fake


def fcm_send(fake: FakeFCM, token: str, note: Note = NOTE, **credential: Any) -> Outcome:
    return fcm.send({**fake.service_account, **credential}, Target("fcm", token), note, TIMEOUT)


def test_fcm_note_arrives_with_its_text_data_and_collapse_key(fake_fcm: FakeFCM) -> None:
    token = fake_fcm.registration_token()
    outcome = fcm_send(fake_fcm, token)
    assert outcome.result == "sent", (outcome, fake_fcm.problems)
    [message] = fake_fcm.received
    assert outcome.provider_id.startswith("projects/hearts-test/messages/")
    assert message["token"] == token
    assert message["notification"] == {"title": NOTE.title, "body": NOTE.body}
    assert message["data"] == {"kind": "turn", "table": "7", "message": MESSAGE}
    assert message["android"] == {
        "collapse_key": "table:7",
        "ttl": "3600s",
        "priority": "HIGH",
        "notification": {"tag": "table:7"},
    }
    assert message["apns"]["headers"]["apns-collapse-id"] == "table:7"
    assert int(message["apns"]["headers"]["apns-expiration"]) == pytest.approx(time.time() + 3600, abs=5)
    assert message["webpush"]["headers"] == {
        "TTL": "3600",
        "Urgency": "high",
        "Topic": webpush_topic("table:7"),
    }
    assert fake_fcm.problems == []


def test_fcm_access_token_serves_two_sends_with_one_token_request(fake_fcm: FakeFCM) -> None:
    first, second = fake_fcm.registration_token(), fake_fcm.registration_token()
    assert fcm_send(fake_fcm, first).result == "sent"
    assert fcm_send(fake_fcm, second).result == "sent"
    assert fake_fcm.token_requests == 1
    assert [m["token"] for m in fake_fcm.received] == [first, second]


def test_fcm_refused_access_token_is_dropped_and_the_next_send_fetches_a_new_one(fake_fcm: FakeFCM) -> None:
    token = fake_fcm.registration_token()
    assert fcm_send(fake_fcm, token).result == "sent"
    fake_fcm.revoke_tokens()
    refused = fcm_send(fake_fcm, token)
    assert (refused.result, refused.status) == ("retry", 401)
    again = fcm_send(fake_fcm, token)
    assert again.result == "sent", (again, fake_fcm.problems)
    assert fake_fcm.token_requests == 2
    assert len(fake_fcm.received) == 2


def test_fcm_access_token_is_renewed_before_google_says_it_expires(settings: Any) -> None:
    with FakeFCM(token_lifetime=600) as fake:
        settings.PUSH_FCM_URL = fake.url
        token = fake.registration_token()
        assert fcm_send(fake, token).result == "sent"
        with time_machine.travel(time.time() + 240):  # 6 minutes left: still used
            assert fcm_send(fake, token).result == "sent"
            assert fake.token_requests == 1
        with time_machine.travel(time.time() + 360):  # 4 minutes left: renewed, never used up to the end
            assert fcm_send(fake, token).result == "sent"
            assert fake.token_requests == 2


def test_fcm_token_cache_is_never_shared_with_a_credential_without_the_accounts_key(
    fake_fcm: FakeFCM,
) -> None:
    token = fake_fcm.registration_token()
    assert fcm_send(fake_fcm, token).result == "sent"
    # Another app names the same account (email, key id, project) with a key of its own.
    impostor = fcm_send(fake_fcm, token, private_key=other_rsa_pem())
    assert impostor.result == "failed"
    assert "invalid_grant" in impostor.error
    assert fake_fcm.token_requests == 2
    assert len(fake_fcm.received) == 1


def test_fcm_unregistered_token_is_dead(fake_fcm: FakeFCM) -> None:
    token = fake_fcm.registration_token()
    fake_fcm.unregister(token)
    outcome = fcm_send(fake_fcm, token)
    assert (outcome.result, outcome.status) == ("dead", 404)
    assert "UNREGISTERED" in outcome.error
    assert no_secret_in(outcome, token)
    assert fake_fcm.received == []


def test_fcm_quota_exceeded_is_retried_after_the_seconds_fcm_asks_for(fake_fcm: FakeFCM) -> None:
    fake_fcm.fail_next(429, retry_after=30)
    outcome = fcm_send(fake_fcm, fake_fcm.registration_token())
    assert (outcome.result, outcome.status, outcome.retry_after) == ("retry", 429, 30.0)
    assert "QUOTA_EXCEEDED" in outcome.error


def test_fcm_retry_after_as_an_http_date_is_read_as_seconds_from_now(fake_fcm: FakeFCM) -> None:
    fake_fcm.fail_next(503, retry_after=email.utils.formatdate(time.time() + 120, usegmt=True))
    outcome = fcm_send(fake_fcm, fake_fcm.registration_token())
    assert (outcome.result, outcome.status) == ("retry", 503)
    assert outcome.retry_after == pytest.approx(120, abs=3)


@pytest.mark.parametrize("status", [500, 503])
def test_fcm_server_errors_are_retried_at_the_senders_own_pace(fake_fcm: FakeFCM, status: int) -> None:
    fake_fcm.fail_next(status)
    outcome = fcm_send(fake_fcm, fake_fcm.registration_token())
    assert (outcome.result, outcome.status, outcome.retry_after) == ("retry", status, None)


@pytest.mark.parametrize(
    ("status", "code"),
    [(400, "INVALID_ARGUMENT"), (403, "SENDER_ID_MISMATCH"), (401, "THIRD_PARTY_AUTH_ERROR")],
)
def test_fcm_refusals_fail_the_message_and_keep_the_device(fake_fcm: FakeFCM, status: int, code: str) -> None:
    fake_fcm.fail_next(status, reason=code)
    outcome = fcm_send(fake_fcm, fake_fcm.registration_token())
    assert (outcome.result, outcome.status) == ("failed", status)
    assert code in outcome.error
    assert (
        fake_fcm.token_requests == 1
    )  # the access token was fine: kept (THIRD_PARTY_AUTH_ERROR is the app's APNs key)


def test_fcm_refuses_data_values_that_are_not_strings(fake_fcm: FakeFCM) -> None:
    note = Note("T", "B", collapse="table:7", data={"table": 7}, ttl=60)  # type: ignore[dict-item]
    outcome = fcm_send(fake_fcm, fake_fcm.registration_token(), note=note)
    assert (outcome.result, outcome.status) == ("failed", 400)
    assert "INVALID_ARGUMENT" in outcome.error and "message.data" in outcome.error


def test_fcm_404_without_fcms_error_body_is_no_reason_to_prune(settings: Any, fake_fcm: FakeFCM) -> None:
    settings.PUSH_FCM_URL = fake_fcm.url + "/wrong-prefix"  # a misconfigured URL answers a bare 404
    outcome = fcm_send(fake_fcm, fake_fcm.registration_token())
    assert (outcome.result, outcome.status) == ("failed", 404)


def test_fcm_unusable_key_fails_without_quoting_it(fake_fcm: FakeFCM) -> None:
    broken = fake_fcm.service_account["private_key"].replace("MII", "XYZ", 1)
    outcome = fcm_send(fake_fcm, fake_fcm.registration_token(), private_key=broken)
    assert outcome.result == "failed"
    assert outcome.error == "credential: private_key is not a usable RSA key in PEM"
    assert fake_fcm.requests == 0


def test_fcm_token_uri_at_a_private_address_is_refused_in_production(
    settings: Any, fake_fcm: FakeFCM
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = False
    outcome = fcm_send(fake_fcm, fake_fcm.registration_token())
    assert outcome.result == "failed"
    assert "token_uri refused" in outcome.error
    assert fake_fcm.requests == 0


def test_fcm_unreachable_is_retried_and_says_so_without_secrets(settings: Any, fake_fcm: FakeFCM) -> None:
    token = fake_fcm.registration_token()
    assert fcm_send(fake_fcm, token).result == "sent"  # an access token in the cache
    settings.PUSH_FCM_URL = closed_port_url()
    outcome = fcm_send(fake_fcm, token)
    assert outcome.result == "retry"
    assert outcome.error.startswith("network: ConnectError")
    assert no_secret_in(outcome, token, fake_fcm.service_account["private_key"])


def test_fcm_answer_slower_than_the_timeout_is_retried(fake_fcm: FakeFCM) -> None:
    """The provider has it (a worker that died here would never know): the sender's claim, not this
    transport, keeps it from being sent twice."""
    token = fake_fcm.registration_token()
    assert fcm_send(fake_fcm, token).result == "sent"
    fake_fcm.delay(2)
    outcome = fcm.send(fake_fcm.service_account, Target("fcm", token), NOTE, 0.3)
    assert outcome.result == "retry"
    assert "Timeout" in outcome.error
    assert len(fake_fcm.received) == 2


# APNs -----------------------------------------------------------------------------------------


@pytest.fixture
def fake_apns(settings: Any) -> Iterator[FakeAPNs]:
    with FakeAPNs() as fake:
        settings.PUSH_APNS_URL = fake.url
        settings.PUSH_CA_FILE = fake.ca_file
        yield fake


def apns_send(
    fake: FakeAPNs, token: str, note: Note = NOTE, device_topic: str = "", **credential: Any
) -> Outcome:
    target = Target("apns", token, topic=device_topic)
    return apns.send({**fake.key, "sandbox": False, **credential}, target, note, TIMEOUT)


def test_apns_note_arrives_over_http2_with_apples_headers(fake_apns: FakeAPNs) -> None:
    token = fake_apns.device_token()
    outcome = apns_send(fake_apns, token)
    assert outcome.result == "sent", (outcome, fake_apns.problems)
    [request] = fake_apns.received
    assert request["http_version"] == "2"
    assert request["token"] == token
    assert request["payload"] == {
        "aps": {
            "alert": {"title": NOTE.title, "body": NOTE.body},
            "sound": "default",
            "thread-id": "table:7",
        },
        "kind": "turn",
        "table": "7",
        "message": MESSAGE,
    }
    headers = request["headers"]
    assert headers["apns-topic"] == "com.example.hearts"
    assert headers["apns-push-type"] == "alert"
    assert headers["apns-priority"] == "10"
    assert headers["apns-collapse-id"] == "table:7"
    assert int(headers["apns-expiration"]) == pytest.approx(time.time() + 3600, abs=5)
    assert headers["apns-id"] == MESSAGE == outcome.provider_id
    assert fake_apns.problems == []


def test_apns_device_topic_is_used_over_the_keys(settings: Any) -> None:
    with FakeAPNs(topic="com.example.hearts.beta") as fake:
        settings.PUSH_APNS_URL, settings.PUSH_CA_FILE = fake.url, fake.ca_file
        credential_topic = {"topic": "com.example.hearts"}
        assert (
            apns_send(
                fake, fake.device_token(), device_topic="com.example.hearts.beta", **credential_topic
            ).result
            == "sent"
        )
        wrong = apns_send(fake, fake.device_token(), **credential_topic)
        assert (wrong.result, wrong.status, wrong.error) == ("failed", 400, "HTTP 400 BadTopic")


def test_apns_provider_token_is_reused_across_sends(fake_apns: FakeAPNs) -> None:
    for _ in range(3):
        assert apns_send(fake_apns, fake_apns.device_token()).result == "sent"
    assert len(fake_apns.provider_tokens) == 3
    assert len(set(fake_apns.provider_tokens)) == 1


def test_apns_provider_token_is_replaced_after_50_minutes_not_before(fake_apns: FakeAPNs) -> None:
    token = fake_apns.device_token()
    assert apns_send(fake_apns, token).result == "sent"
    with time_machine.travel(time.time() + 45 * 60):
        assert apns_send(fake_apns, token).result == "sent"
    with time_machine.travel(time.time() + 51 * 60):
        outcome = apns_send(fake_apns, token)
        assert outcome.result == "sent", (outcome, fake_apns.problems)
    first, same, renewed = fake_apns.provider_tokens
    assert first == same != renewed


def test_apns_expired_provider_token_is_dropped_and_the_next_send_signs_anew(fake_apns: FakeAPNs) -> None:
    token = fake_apns.device_token()
    assert apns_send(fake_apns, token).result == "sent"
    fake_apns.expire_provider_tokens()
    expired = apns_send(fake_apns, token)
    assert (expired.result, expired.status, expired.error) == ("retry", 403, "HTTP 403 ExpiredProviderToken")
    assert apns_send(fake_apns, token).result == "sent", fake_apns.problems
    assert len(set(fake_apns.provider_tokens)) == 2


def test_apns_unregistered_device_is_dead(fake_apns: FakeAPNs) -> None:
    token = fake_apns.device_token()
    fake_apns.dead_tokens.add(token)
    outcome = apns_send(fake_apns, token)
    assert (outcome.result, outcome.status, outcome.error) == ("dead", 410, "HTTP 410 Unregistered")


@pytest.mark.parametrize(
    ("status", "reason", "result"),
    [
        (400, "BadDeviceToken", "dead"),
        (400, "DeviceTokenNotForTopic", "dead"),
        (400, "BadTopic", "failed"),
        (403, "InvalidProviderToken", "failed"),
        (413, "PayloadTooLarge", "failed"),
        (500, "InternalServerError", "retry"),
        (503, "ServiceUnavailable", "retry"),
    ],
)
def test_apns_reasons_are_read_as_apple_documents_them(
    fake_apns: FakeAPNs, status: int, reason: str, result: str
) -> None:
    fake_apns.fail_next(status, reason=reason)
    outcome = apns_send(fake_apns, fake_apns.device_token())
    assert (outcome.result, outcome.status, outcome.error) == (result, status, f"HTTP {status} {reason}")


def test_apns_too_many_requests_is_retried_after_retry_after(fake_apns: FakeAPNs) -> None:
    fake_apns.fail_next(429, retry_after=12)
    outcome = apns_send(fake_apns, fake_apns.device_token())
    assert (outcome.result, outcome.status, outcome.retry_after) == ("retry", 429, 12.0)


def test_apns_long_collapse_id_is_shortened_to_apples_64_bytes(fake_apns: FakeAPNs) -> None:
    long_note = Note("T", "B", collapse="table:" + "é" * 40, data={}, ttl=0)
    assert apns_send(fake_apns, fake_apns.device_token(), note=long_note).result == "sent", fake_apns.problems
    headers = fake_apns.received[0]["headers"]
    assert headers["apns-collapse-id"] == apns_collapse_id(long_note.collapse)
    assert len(headers["apns-collapse-id"].encode()) == 64
    assert headers["apns-expiration"] == "0"  # ttl 0: delivered now or never
    assert uuid.UUID(headers["apns-id"])


def test_apns_unusable_key_fails_without_quoting_it(fake_apns: FakeAPNs) -> None:
    outcome = apns_send(fake_apns, fake_apns.device_token(), private_key=other_rsa_pem())
    assert outcome == Outcome("failed", error="credential: private_key is not a usable P-256 key in PEM")
    assert fake_apns.requests == 0


def test_apns_key_of_another_team_is_refused_by_apple_and_fails(fake_apns: FakeAPNs) -> None:
    outcome = apns_send(fake_apns, fake_apns.device_token(), private_key=other_ec_pem())
    assert (outcome.result, outcome.status, outcome.error) == ("failed", 403, "HTTP 403 InvalidProviderToken")
    assert no_secret_in(outcome, fake_apns.key["private_key"], *fake_apns.provider_tokens)


def test_apns_unreachable_is_retried_without_secrets(settings: Any, fake_apns: FakeAPNs) -> None:
    settings.PUSH_APNS_URL = closed_port_url("https")
    token = fake_apns.device_token()
    outcome = apns_send(fake_apns, token)
    assert outcome.result == "retry"
    assert outcome.error.startswith("network: ConnectError")
    assert no_secret_in(outcome, token, fake_apns.key["private_key"])


def test_apns_answer_slower_than_the_timeout_is_retried_and_the_connection_still_serves(
    fake_apns: FakeAPNs,
) -> None:
    token = fake_apns.device_token()
    fake_apns.delay(2)
    outcome = apns.send({**fake_apns.key, "sandbox": False}, Target("apns", token), NOTE, 0.3)
    assert outcome.result == "retry"
    assert "Timeout" in outcome.error
    fake_apns.delay(0)
    assert apns_send(fake_apns, token).result == "sent"
    assert len(fake_apns.received) == 2  # Apple had the first: the sender's claim keeps it from a repeat


def test_apns_refuses_a_new_provider_token_on_a_connection_within_20_minutes(fake_apns: FakeAPNs) -> None:
    """Why the token is reused: signing one per send is refused (TooManyProviderTokenUpdates)."""
    token = fake_apns.device_token()
    assert apns_send(fake_apns, token).result == "sent"
    apns._jwts.clear()  # as if the process had forgotten it
    outcome = apns_send(fake_apns, token)
    assert (outcome.result, outcome.error) == ("retry", "HTTP 429 TooManyProviderTokenUpdates")


def test_fake_apns_refuses_http1_as_apple_does(fake_apns: FakeAPNs) -> None:
    context = ssl.create_default_context(cafile=fake_apns.ca_file)
    with httpx.Client(http2=False, verify=context) as http1:
        answer = http1.post(f"{fake_apns.url}/3/device/{fake_apns.device_token()}", content=b"{}")
    assert answer.status_code == 505
    assert fake_apns.received == []


def test_apns_chooses_apples_host_by_the_keys_sandbox_flag(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without PUSH_APNS_URL: a development build's token goes to the sandbox, a store build's to
    production (the hosts are unreachable here: the request's address is what is checked)."""
    settings.PUSH_APNS_URL = ""
    requested: list[str] = []

    class Unreachable:
        def post(self, url: str, **kwargs: Any) -> httpx.Response:
            requested.append(url)
            raise httpx.ConnectError("no network in tests")

    monkeypatch.setattr(apns, "client", Unreachable)
    key = {"key_id": "K", "team_id": "T", "topic": "com.example.hearts", "private_key": other_ec_pem()}
    token = "ab" * 32
    for sandbox in (True, False):
        outcome = apns.send({**key, "sandbox": sandbox}, Target("apns", token), NOTE, TIMEOUT)
        assert outcome.result == "retry"
    assert requested == [
        f"https://api.sandbox.push.apple.com/3/device/{token}",
        f"https://api.push.apple.com/3/device/{token}",
    ]


# Web Push -------------------------------------------------------------------------------------


@pytest.fixture
def fake_webpush(settings: Any) -> Iterator[FakeWebPush]:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    with FakeWebPush() as fake:
        yield fake


@pytest.fixture(scope="module")
def vapid() -> dict[str, str]:
    public, private = webpush.generate_vapid()
    return {"public_key": public, "private_key": private, "subject": "mailto:push@hearts.example"}


def webpush_send(vapid: dict[str, str], subscription: dict[str, Any], note: Note = NOTE) -> Outcome:
    target = Target("webpush", subscription["endpoint"], keys=subscription["keys"])
    return webpush.send(vapid, target, note, TIMEOUT)


def test_webpush_note_is_decrypted_by_the_browsers_key_as_sent(
    fake_webpush: FakeWebPush, vapid: dict[str, str]
) -> None:
    subscription = fake_webpush.subscription(server_key=vapid["public_key"])
    outcome = webpush_send(vapid, subscription)
    assert outcome.result == "sent", (outcome, fake_webpush.problems)
    assert outcome.status == 201 and outcome.provider_id
    [message] = fake_webpush.received
    assert message["payload"] == {
        "title": NOTE.title,
        "body": NOTE.body,
        "tag": "table:7",
        "data": {"kind": "turn", "table": "7", "message": MESSAGE},
        "lang": "fr",
    }
    assert (message["ttl"], message["urgency"]) == (3600, "high")
    assert message["topic"] == webpush_topic("table:7")
    assert fake_webpush.problems == []


def test_webpush_topic_is_one_short_url_safe_id_per_collapse_id() -> None:
    topics = {webpush_topic(f"table:{n}") for n in range(1000)}
    assert len(topics) == 1000
    assert all(len(t) == 32 and t.replace("-", "").replace("_", "").isalnum() for t in topics)
    assert webpush_topic("table:7") == webpush_topic("table:7")


def test_webpush_vapid_public_key_is_the_browsers_application_server_key(vapid: dict[str, str]) -> None:
    public, private = webpush.generate_vapid()
    point = base64.urlsafe_b64decode(public + "=")
    assert len(point) == 65 and point[0] == 4  # an uncompressed P-256 point, unpadded base64url
    key = serialization.load_pem_private_key(private.encode(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    assert (
        key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        == point
    )


@pytest.mark.parametrize("status", [404, 410])
def test_webpush_gone_subscription_is_dead(
    fake_webpush: FakeWebPush, vapid: dict[str, str], status: int
) -> None:
    subscription = fake_webpush.subscription()
    if status == 410:
        fake_webpush.gone(subscription["endpoint"])
    else:
        subscription = {**subscription, "endpoint": subscription["endpoint"] + "x"}  # unknown to it
    outcome = webpush_send(vapid, subscription)
    assert (outcome.result, outcome.status, outcome.error) == ("dead", status, f"HTTP {status}")


def test_webpush_too_many_requests_is_retried_after_retry_after(
    fake_webpush: FakeWebPush, vapid: dict[str, str]
) -> None:
    fake_webpush.fail_next(429, retry_after=45)
    outcome = webpush_send(vapid, fake_webpush.subscription())
    assert (outcome.result, outcome.status, outcome.retry_after) == ("retry", 429, 45.0)


def test_webpush_503_is_retried(fake_webpush: FakeWebPush, vapid: dict[str, str]) -> None:
    fake_webpush.fail_next(503)
    outcome = webpush_send(vapid, fake_webpush.subscription())
    assert (outcome.result, outcome.status) == ("retry", 503)


def test_webpush_redirect_is_not_followed(fake_webpush: FakeWebPush, vapid: dict[str, str]) -> None:
    fake_webpush.fail_next(307)
    outcome = webpush_send(vapid, fake_webpush.subscription())
    assert (outcome.result, outcome.status) == ("failed", 307)
    assert fake_webpush.requests == 1
    assert fake_webpush.received == []


def test_webpush_message_signed_by_another_key_than_the_subscriptions_fails(
    fake_webpush: FakeWebPush, vapid: dict[str, str]
) -> None:
    other_public, _ = webpush.generate_vapid()
    outcome = webpush_send(vapid, fake_webpush.subscription(server_key=other_public))
    assert (outcome.result, outcome.status) == ("failed", 403)
    assert no_secret_in(outcome, vapid["private_key"])


def test_webpush_private_endpoint_is_refused_without_a_request(
    settings: Any, fake_webpush: FakeWebPush, vapid: dict[str, str]
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = False
    subscription = fake_webpush.subscription()
    outcome = webpush_send(vapid, subscription)
    assert outcome.result == "failed"
    assert outcome.error.startswith("endpoint refused: address_not_allowed: 127.0.0.1")
    assert fake_webpush.requests == 0
    assert no_secret_in(outcome, subscription["endpoint"])


def test_fake_webpush_refuses_a_vapid_token_for_another_origin(
    fake_webpush: FakeWebPush, vapid: dict[str, str]
) -> None:
    subscription = fake_webpush.subscription(server_key=vapid["public_key"])
    key = serialization.load_pem_private_key(vapid["private_key"].encode(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    other = "https://push.other.example"
    headers = webpush._vapid_headers(key, vapid["subject"], other, vapid["private_key"])
    answer = httpx.post(subscription["endpoint"], content=b"x", headers={**headers, "TTL": "60"})
    assert answer.status_code == 401
    assert fake_webpush.received == []


def test_webpush_endpoint_whose_name_does_not_resolve_is_retried_not_dropped(
    settings: Any, vapid: dict[str, str]
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = False  # only then is the address looked up before sending
    subscription = {
        "endpoint": "https://push.hearts.invalid/wpush/v2/abcdefgh",
        "keys": {"p256dh": "x", "auth": "y"},
    }
    outcome = webpush_send(vapid, subscription)
    assert outcome.result == "retry"
    assert outcome.error.startswith("endpoint refused: cannot resolve host")


@pytest.mark.parametrize("endpoint", ["ftp://push.example.com/x", "javascript:alert(1)", "https:///nohost"])
def test_webpush_endpoint_that_is_not_http_is_refused(vapid: dict[str, str], endpoint: str) -> None:
    subscription = {"endpoint": endpoint, "keys": {"p256dh": "x", "auth": "y"}}
    assert webpush_send(vapid, subscription) == Outcome("failed", error="endpoint: not an http(s) URL")


def test_webpush_unusable_subscription_keys_fail_without_a_request(
    fake_webpush: FakeWebPush, vapid: dict[str, str]
) -> None:
    subscription = fake_webpush.subscription()
    broken = {**subscription, "keys": {"p256dh": subscription["keys"]["p256dh"][:20], "auth": "short"}}
    outcome = webpush_send(vapid, broken)
    assert outcome == Outcome("failed", error="subscription: keys p256dh and auth are not a usable pair")
    assert fake_webpush.requests == 0


def test_webpush_unusable_vapid_key_fails_without_quoting_it(
    fake_webpush: FakeWebPush, vapid: dict[str, str]
) -> None:
    broken = {**vapid, "private_key": other_rsa_pem()}
    outcome = webpush_send(broken, fake_webpush.subscription())
    assert outcome == Outcome("failed", error="credential: private_key is not a usable P-256 key in PEM")
    assert fake_webpush.requests == 0


def test_webpush_unreachable_is_retried_without_the_endpoint(
    fake_webpush: FakeWebPush, vapid: dict[str, str]
) -> None:
    subscription = fake_webpush.subscription()
    subscription["endpoint"] = closed_port_url() + "/push/" + "s3cr3t" * 6
    outcome = webpush_send(vapid, subscription)
    assert outcome.result == "retry"
    assert outcome.error.startswith("network: ConnectError")
    assert no_secret_in(
        outcome, subscription["endpoint"], vapid["private_key"], *subscription["keys"].values()
    )


# Shared ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("120", 120.0),
        ("0", 0.0),
        ("2.5", 2.5),
        ("-3", 0.0),
        ("inf", None),
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_reads_delta_seconds(header: str | None, seconds: float | None) -> None:
    assert retry_after(header) == seconds


@pytest.mark.parametrize(("minutes", "seconds"), [(5, 300.0), (-5, 0.0)])
def test_retry_after_reads_an_http_date_as_seconds_from_now(minutes: int, seconds: float) -> None:
    when = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=minutes)
    assert retry_after(email.utils.format_datetime(when, usegmt=True)) == pytest.approx(seconds, abs=2)


def test_apns_collapse_id_keeps_short_ids_and_digests_long_ones() -> None:
    assert apns_collapse_id("table:7") == "table:7"
    long_ids = {apns_collapse_id("t" * 64 + str(n)) for n in range(10)}
    assert len(long_ids) == 10 and all(len(i) == 64 for i in long_ids)
