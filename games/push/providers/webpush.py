"""Web Push (RFC 8030): the payload encrypted for the browser (RFC 8291, aes128gcm) and signed for
its push service (VAPID, RFC 8292), one POST to the subscription's endpoint; and the VAPID pair."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.conf import settings
from http_ece import ECEException  # type: ignore[import-untyped]  # pywebpush's RFC 8188 cipher
from py_vapid import Vapid02, VapidException  # type: ignore[import-untyped]  # pywebpush's VAPID signer
from pywebpush import WebPusher, WebPushException  # type: ignore[import-untyped]

from games.push.providers import (
    Credential,
    Note,
    Outcome,
    Target,
    network_outcome,
    pinned,
    refusal,
    retry_after,
    webpush_topic,
)
from games.webhooks import addresses

log = logging.getLogger(__name__)

VAPID_LIFETIME = 12 * 3600  # seconds; push services refuse a VAPID token valid for more than 24 h
SENT = frozenset({200, 201, 202})
DEAD = frozenset({404, 410})  # the subscription expired or the browser unsubscribed


def generate_vapid() -> tuple[str, str]:
    """A new VAPID pair: (the public key as browsers take it for applicationServerKey, an
    uncompressed P-256 point in unpadded base64url; the private key in PKCS#8 PEM)."""
    key = ec.generate_private_key(ec.SECP256R1())
    point = key.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return base64.urlsafe_b64encode(point).decode().rstrip("="), pem.decode()


def content(note: Note) -> bytes:
    """What the service worker receives (games' web client shows it with showNotification, `tag`
    replacing the table's earlier one)."""
    body = {
        "title": note.title,
        "body": note.body,
        "tag": note.collapse,
        "data": dict(note.data),
        "lang": note.language,
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


# Signing, per process: loading the PEM and signing a JWT were a sixth of the push lane's CPU.
# RFC 8292 (section 2) lets a server reuse a VAPID token for many requests to the same push
# service: one is made per key, subject and origin and reused for VAPID_REUSE seconds of its
# VAPID_LIFETIME, so a reused token always has hours left.
VAPID_REUSE = 3600
_keys: dict[str, ec.EllipticCurvePrivateKey | None] = {}
_tokens: dict[tuple[str, str, str], tuple[float, dict[str, str]]] = {}
_lock = threading.Lock()
KEPT = 64  # keys, and tokens, a process keeps (the oldest goes first)


def _keep(kept: dict[Any, Any], key: Any, value: Any) -> None:
    with _lock:
        kept[key] = value
        while len(kept) > KEPT:
            kept.pop(next(iter(kept)))


def _vapid_key(credential: Credential) -> ec.EllipticCurvePrivateKey | None:
    pem = str(credential.get("private_key", ""))
    if pem in _keys:
        return _keys[pem]
    try:
        loaded = serialization.load_pem_private_key(pem.encode(), None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        loaded = None
    private = loaded if isinstance(loaded, ec.EllipticCurvePrivateKey) else None
    _keep(_keys, pem, private)
    return private


def _vapid_headers(key: ec.EllipticCurvePrivateKey, subject: str, origin: str, pem: str) -> dict[str, str]:
    """The RFC 8292 `Authorization: vapid t=<jwt>,k=<public key>` for the endpoint's origin."""
    now = time.time()
    found = _tokens.get((pem, subject, origin))
    if found is not None and now - found[0] < VAPID_REUSE:
        return dict(found[1])
    claims = {"aud": origin, "exp": int(now) + VAPID_LIFETIME, "sub": subject}
    headers: dict[str, str] = Vapid02(private_key=key).sign(claims)
    _keep(_tokens, (pem, subject, origin), (now, dict(headers)))
    return headers


def send(credential: Credential, target: Target, note: Note, timeout: float) -> Outcome:
    """Send `note` to one Web Push subscription. Its endpoint is whatever the browser (or a client
    claiming to be one) registered, so it is refused unless it is an http(s) URL of a public host
    (WEBHOOK_ALLOW_PRIVATE_HOSTS allows private ones, as for webhooks)."""
    endpoint = target.token
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return Outcome("failed", error="endpoint: not an http(s) URL")
    found, refused = addresses.check(endpoint, allow_private=bool(settings.WEBHOOK_ALLOW_PRIVATE_HOSTS))
    if refused:
        return refusal("endpoint", endpoint, refused)
    secrets = (endpoint, str(credential.get("private_key", "")), *target.keys.values())
    subscription = {"endpoint": endpoint, "keys": dict(target.keys)}
    key = _vapid_key(credential)
    if key is None:
        return Outcome("failed", error="credential: private_key is not a usable P-256 key in PEM")
    subject = str(credential.get("subject") or settings.PUSH_VAPID_SUBJECT)
    try:
        vapid = _vapid_headers(
            key, subject, f"{parts.scheme}://{parts.netloc}", str(credential["private_key"])
        )
    except VapidException:
        return Outcome("failed", error="credential: subject is not a mailto: or https: URL")
    try:
        encrypted = WebPusher(subscription).encode(content(note), "aes128gcm")["body"]
    except (WebPushException, ECEException, ValueError, TypeError, binascii.Error):
        return Outcome("failed", error="subscription: keys p256dh and auth are not a usable pair")
    headers = {
        **vapid,
        "Content-Encoding": "aes128gcm",
        "Content-Type": "application/octet-stream",
        "TTL": str(note.ttl),
        "Urgency": "high",
        "Topic": webpush_topic(note.collapse),  # the service replaces an undelivered earlier one
    }
    try:
        # The answer's body is never read: the endpoint's host may be anyone's.
        # Sent to the addresses just checked (a name rebinding meanwhile cannot move it).
        with pinned(found).stream(
            "POST", endpoint, content=encrypted, headers=headers, timeout=timeout
        ) as response:
            status = response.status_code
            location = response.headers.get("location", "")
            wait = retry_after(response.headers.get("retry-after"))
    except httpx.HTTPError as exc:
        return network_outcome(exc, *secrets)
    if status in SENT:
        return Outcome("sent", status=status, provider_id=_message_id(location))
    error = f"HTTP {status}"
    if status in DEAD:
        log.info("Web Push subscription at %s is gone (HTTP %s)", parts.hostname, status)
        return Outcome("dead", status=status, error=error)
    if status == 429 or status >= 500:
        return Outcome("retry", status=status, error=error, retry_after=wait)
    return Outcome("failed", status=status, error=error)


def _message_id(location: str) -> str:
    """The push service's id of the message: the last segment of its Location (RFC 8030 5)."""
    return location.rstrip("/").rsplit("/", 1)[-1][:200]
