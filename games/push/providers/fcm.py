"""Firebase Cloud Messaging's HTTP v1 API: the OAuth 2.0 token from the app's service account, and
one messages:send request per notification."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import jwt
from django.conf import settings

from games.push.providers import (
    Credential,
    Note,
    Outcome,
    Target,
    apns_collapse_id,
    client,
    network_outcome,
    pinned,
    refusal,
    retry_after,
    scrub,
    short,
    webpush_topic,
)
from games.webhooks import addresses

log = logging.getLogger(__name__)

SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ASSERTION_LIFETIME = 3600  # seconds: the most Google's token endpoint accepts
# A token is used until this long before Google said it expires, so that none dies in flight.
REFRESH_MARGIN = 300.0

# FCM's google.rpc error codes (FcmError.errorCode) and what each means for the device.
DEAD_CODES = frozenset({"UNREGISTERED"})
RETRY_CODES = frozenset({"QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL"})
# Every other code fails the message without pruning the device: INVALID_ARGUMENT (a malformed
# message, or a token that never was one), SENDER_ID_MISMATCH, THIRD_PARTY_AUTH_ERROR.


@dataclass(frozen=True)
class _Token:
    value: str
    good_until: float  # unix seconds


_tokens: dict[str, _Token] = {}
_fetch_locks: dict[str, threading.Lock] = {}
_tokens_lock = threading.Lock()


def _cache_key(credential: Credential) -> str:
    """The cache's key for one service account: the key material too, not the email alone, so that
    a credential naming another app's account without its key can never borrow that app's token."""
    fields = [str(credential.get(name, "")) for name in ("client_email", "private_key_id", "token_uri")]
    fields.append(str(credential.get("private_key", "")))
    return hashlib.sha256("\0".join(fields).encode()).hexdigest()


def forget_token(credential: Credential) -> None:
    """Drop the cached access token (FCM refused it, or the account's key was replaced)."""
    with _tokens_lock:
        _tokens.pop(_cache_key(credential), None)


def _assertion(credential: Credential, now: int) -> str:
    claims = {
        "iss": credential["client_email"],
        "scope": SCOPE,
        "aud": credential["token_uri"],
        "iat": now,
        "exp": now + ASSERTION_LIFETIME,
    }
    headers = {"kid": str(credential.get("private_key_id", ""))}
    return jwt.encode(claims, credential["private_key"], algorithm="RS256", headers=headers)


def _access_token(credential: Credential, timeout: float) -> str | Outcome:
    """The account's access token, from the cache while it lasts, else from its token_uri by the
    JWT bearer grant (RFC 7523), one fetch per account at a time; an Outcome when none was had."""
    key = _cache_key(credential)
    with _tokens_lock:
        cached = _tokens.get(key)
        lock = _fetch_locks.setdefault(key, threading.Lock())
    if cached is not None and cached.good_until > time.time():
        return cached.value
    with lock:
        with _tokens_lock:
            cached = _tokens.get(key)  # another thread may have fetched it while this one waited
        if cached is not None and cached.good_until > time.time():
            return cached.value
        answer = _fetch_token(credential, timeout)
        if isinstance(answer, Outcome):
            return answer
        with _tokens_lock:
            _tokens[key] = answer
        return answer.value


def _fetch_token(credential: Credential, timeout: float) -> _Token | Outcome:
    token_uri = str(credential.get("token_uri", ""))
    if urlsplit(token_uri).scheme not in ("http", "https"):
        return Outcome("failed", error="credential: token_uri is not an http(s) URL")
    # The service account JSON is the app's: never a way inside, and sent to the address checked.
    found, refused = addresses.check(token_uri, allow_private=bool(settings.WEBHOOK_ALLOW_PRIVATE_HOSTS))
    if refused:
        return refusal("credential: token_uri", token_uri, refused)
    now = int(time.time())
    try:
        assertion = _assertion(credential, now)
    except (KeyError, ValueError, TypeError, jwt.PyJWTError):
        # The key's own parse error may quote it: say which field, not what it held.
        return Outcome("failed", error="credential: private_key is not a usable RSA key in PEM")
    secret = str(credential.get("private_key", ""))
    try:
        response = pinned(found).post(
            token_uri,
            data={"grant_type": GRANT_TYPE, "assertion": assertion},
            headers={"Accept": "application/json"},
            timeout=timeout,
        )
    except httpx.HTTPError as exc:
        return network_outcome(exc, assertion, secret)
    body = _json(response)
    if response.status_code == 429 or response.status_code >= 500:
        return Outcome(
            "retry",
            status=response.status_code,
            error=f"oauth: HTTP {response.status_code}",
            retry_after=retry_after(response.headers.get("retry-after")),
        )
    value, expires_in = body.get("access_token"), body.get("expires_in")
    if response.status_code != 200 or not isinstance(value, str) or not value:
        # Google answers 400 invalid_grant for a bad signature, an unknown or disabled account.
        reason = f"{body.get('error', '')}: {body.get('error_description', '')}".strip(": ")
        log.warning(
            "FCM token refused for %s: HTTP %s %s",
            credential.get("client_email"),
            response.status_code,
            scrub(reason, assertion, secret),
        )
        return Outcome(
            "failed",
            status=response.status_code,
            error=scrub(f"oauth: HTTP {response.status_code} {reason}".strip(), assertion, secret),
        )
    lifetime = float(expires_in) if isinstance(expires_in, int | float) else 3600.0
    return _Token(value, now + lifetime - min(REFRESH_MARGIN, lifetime / 2))


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def message(target: Target, note: Note) -> dict[str, Any]:
    """The v1 message: shown by the system on Android and iOS (notification), one per table on the
    device (collapse key, tag, apns-collapse-id, Topic), dropped after `ttl` if not delivered."""
    expiration = str(int(time.time()) + note.ttl) if note.ttl > 0 else "0"
    return {
        "token": target.token,
        "notification": {"title": note.title, "body": note.body},
        "data": dict(note.data),
        "android": {
            "collapse_key": note.collapse,
            "ttl": f"{note.ttl}s",
            "priority": "HIGH",
            "notification": {"tag": note.collapse},
        },
        "apns": {
            "headers": {
                "apns-collapse-id": apns_collapse_id(note.collapse),
                "apns-expiration": expiration,
            },
            "payload": {"aps": {"thread-id": note.collapse}},
        },
        "webpush": {
            "headers": {"TTL": str(note.ttl), "Urgency": "high", "Topic": webpush_topic(note.collapse)}
        },
    }


def _error(body: dict[str, Any]) -> tuple[str, str, str]:
    """(FcmError.errorCode, google.rpc status, message) of an error answer; '' for what it lacks,
    as a proxy's or a load balancer's answer does."""
    error = body.get("error")
    if not isinstance(error, dict):
        return "", "", ""
    code = ""
    for detail in error.get("details") or []:
        if isinstance(detail, dict) and detail.get("errorCode"):
            code = str(detail["errorCode"])
    return code, str(error.get("status", "")), str(error.get("message", ""))


def send(credential: Credential, target: Target, note: Note, timeout: float) -> Outcome:
    """Send `note` to one FCM registration token."""
    token = _access_token(credential, timeout)
    if isinstance(token, Outcome):
        return token
    project = quote(str(credential.get("project_id", "")), safe="")
    url = f"{str(settings.PUSH_FCM_URL).rstrip('/')}/v1/projects/{project}/messages:send"
    secrets = (token, target.token, str(credential.get("private_key", "")))
    try:
        response = client().post(
            url,
            json={"message": message(target, note)},
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
        )
    except httpx.HTTPError as exc:
        return network_outcome(exc, *secrets)
    status = response.status_code
    body = _json(response)
    if status == 200:
        return Outcome("sent", status=status, provider_id=str(body.get("name", "")))
    code, rpc_status, detail = _error(body)
    error = scrub(f"HTTP {status} {code or rpc_status} {detail}".strip(), *secrets)
    # A 404 is a token FCM no longer knows only when FCM said so: a 404 without its error body is
    # a wrong PUSH_FCM_URL or a proxy, and pruning every device for it would lose them all.
    if code in DEAD_CODES or (status == 404 and rpc_status == "NOT_FOUND"):
        log.info("FCM token %s unregistered", short(target.token))
        return Outcome("dead", status=status, error=error)
    if status == 401 and code != "THIRD_PARTY_AUTH_ERROR":
        forget_token(credential)  # expired or revoked early: the next attempt fetches a new one
        return Outcome("retry", status=status, error=error)
    if status == 429 or status >= 500 or code in RETRY_CODES:
        wait = retry_after(response.headers.get("retry-after"))
        return Outcome("retry", status=status, error=error, retry_after=wait)
    return Outcome("failed", status=status, error=error)
