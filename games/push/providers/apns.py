"""Apple Push Notification service over HTTP/2 with token (.p8 key) authentication: the provider
JWT, and one POST /3/device/<token> per notification."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

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
    retry_after,
    scrub,
    short,
)

log = logging.getLogger(__name__)

PRODUCTION_URL = "https://api.push.apple.com"
SANDBOX_URL = "https://api.sandbox.push.apple.com"
# Apple refuses a provider token older than an hour (ExpiredProviderToken) and one replaced more
# often than every 20 minutes (TooManyProviderTokenUpdates): one token per key for 50 minutes.
JWT_REUSE = 50 * 60

# Apple's reasons (the answer's {"reason"}) that say the device token will never work again; any
# 410 (Unregistered, ExpiredToken) says so too.
DEAD_REASONS = frozenset({"BadDeviceToken", "DeviceTokenNotForTopic", "Unregistered", "ExpiredToken"})
# Reasons worth another attempt besides 429 and 5xx: a connection Apple closed as idle.
RETRY_REASONS = frozenset({"IdleTimeout", "TooManyProviderTokenUpdates", "TooManyRequests"})


@dataclass(frozen=True)
class _Jwt:
    value: str
    issued_at: float


_jwts: dict[str, _Jwt] = {}
_jwts_lock = threading.Lock()


def _cache_key(credential: Credential) -> str:
    """One provider token per signing key (its id, team and the key itself, so that a credential
    naming another app's key id without its key never borrows that app's token)."""
    fields = [str(credential.get(name, "")) for name in ("key_id", "team_id", "private_key")]
    return hashlib.sha256("\0".join(fields).encode()).hexdigest()


def provider_token(credential: Credential) -> str:
    """The key's ES256 provider token, reused for JWT_REUSE seconds. Raises ValueError when the
    credential cannot sign (its message never quotes the key)."""
    key = _cache_key(credential)
    now = time.time()
    with _jwts_lock:
        cached = _jwts.get(key)
        if cached is not None and now - cached.issued_at < JWT_REUSE:
            return cached.value
        try:
            value = jwt.encode(
                {"iss": str(credential["team_id"]), "iat": int(now)},
                credential["private_key"],
                algorithm="ES256",
                headers={"kid": str(credential["key_id"]), "typ": None},  # Apple's header: alg, kid
            )
        except (KeyError, ValueError, TypeError, jwt.PyJWTError):
            raise ValueError("credential: private_key is not a usable P-256 key in PEM") from None
        _jwts[key] = _Jwt(value, now)
        return value


def forget_provider_token(credential: Credential, value: str) -> None:
    """Drop the cached token Apple called expired, unless another thread already replaced it."""
    key = _cache_key(credential)
    with _jwts_lock:
        cached = _jwts.get(key)
        if cached is not None and cached.value == value:
            del _jwts[key]


def payload(note: Note) -> dict[str, Any]:
    """The alert as iOS shows it, threaded per table, with the app's data beside `aps`."""
    alert = {"title": note.title, "body": note.body}
    return {**note.data, "aps": {"alert": alert, "sound": "default", "thread-id": note.collapse}}


def _apns_id(note: Note) -> str:
    """The message's own id when it has one (so each attempt of one message carries the same
    apns-id in Apple's logs), else a fresh UUID."""
    try:
        return str(uuid.UUID(note.data.get("message", "")))
    except ValueError:
        return str(uuid.uuid4())


def send(credential: Credential, target: Target, note: Note, timeout: float) -> Outcome:
    """Send `note` to one APNs device token."""
    try:
        bearer = provider_token(credential)
    except ValueError as exc:
        return Outcome("failed", error=str(exc))
    base = str(settings.PUSH_APNS_URL or "") or (SANDBOX_URL if credential.get("sandbox") else PRODUCTION_URL)
    apns_id = _apns_id(note)
    headers = {
        "authorization": f"bearer {bearer}",
        "apns-topic": target.topic or str(credential.get("topic", "")),
        "apns-push-type": "alert",
        "apns-priority": "10",
        "apns-expiration": str(int(time.time()) + note.ttl) if note.ttl > 0 else "0",
        "apns-collapse-id": apns_collapse_id(note.collapse),
        "apns-id": apns_id,
        "content-type": "application/json",
    }
    body = json.dumps(payload(note), ensure_ascii=False, separators=(",", ":")).encode()
    url = f"{base.rstrip('/')}/3/device/{quote(target.token, safe='')}"
    secrets = (bearer, target.token, str(credential.get("private_key", "")))
    try:
        response = client().post(url, content=body, headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        return network_outcome(exc, *secrets)
    status = response.status_code
    if status == 200:
        return Outcome("sent", status=status, provider_id=response.headers.get("apns-id", apns_id))
    reason = _reason(response)
    error = scrub(f"HTTP {status} {reason}".strip(), *secrets)
    if status == 410 or reason in DEAD_REASONS:
        log.info("APNs token %s is dead: %s", short(target.token), reason or status)
        return Outcome("dead", status=status, error=error)
    if status == 403 and reason == "ExpiredProviderToken":
        forget_provider_token(credential, bearer)
        return Outcome("retry", status=status, error=error)
    if status == 429 or status >= 500 or reason in RETRY_REASONS:
        wait = retry_after(response.headers.get("retry-after"))
        return Outcome("retry", status=status, error=error, retry_after=wait)
    if status == 403:
        log.warning(
            "APNs refused key %s of team %s: %s", credential.get("key_id"), credential.get("team_id"), reason
        )
    return Outcome("failed", status=status, error=error)


def _reason(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return ""
    return str(body.get("reason", "")) if isinstance(body, dict) else ""
