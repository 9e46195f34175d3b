"""The wire: the Standard Webhooks signature headers of an attempt, and one POST that follows no
redirect and never reaches a private address unless allowed."""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import random
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from standardwebhooks import Webhook

from games.webhooks.base import (
    ID_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    conf,
)

log = logging.getLogger(__name__)


def sign(secret: str, delivery_id: str, body: str, *, timestamp: int | None = None) -> dict[str, str]:
    """The Standard Webhooks headers of one attempt at sending `body`: `webhook-id` (the delivery
    id, the same on every attempt), `webhook-timestamp` (this attempt's unix seconds, now unless
    given) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`), signed
    by the standardwebhooks library, so a receiver's `Webhook(secret).verify(body, headers)` is the
    same code. Receivers verify with that library; the service has no verifier of its own."""
    stamp = int(time.time()) if timestamp is None else timestamp
    at = dt.datetime.fromtimestamp(stamp, tz=dt.UTC)
    signature = Webhook(secret).sign(msg_id=delivery_id, timestamp=at, data=body)
    return {ID_HEADER: delivery_id, TIMESTAMP_HEADER: str(stamp), SIGNATURE_HEADER: signature}


def backoff(attempts: int) -> float:
    """Seconds before the next attempt after `attempts` failed ones: base * 2^(attempts-1),
    capped, with up to 25% jitter downwards (so each wait is still longer than the last)."""
    base, cap = float(conf("WEBHOOK_BACKOFF_BASE")), float(conf("WEBHOOK_BACKOFF_MAX"))
    return float(min(cap, base * 2 ** max(0, attempts - 1)) * random.uniform(0.75, 1.0))


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:  # a 3xx is a failed attempt
        return None


def _blocked_address(host: str, port: int) -> str | None:
    """Why `host` may not be sent to (a private, loopback or link-local address) unless
    WEBHOOK_ALLOW_PRIVATE_HOSTS, or None."""
    if conf("WEBHOOK_ALLOW_PRIVATE_HOSTS"):
        return None
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except OSError as exc:
        return f"cannot resolve host: {exc}"
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not address.is_global or address.is_multicast:
            return f"address_not_allowed: {address}"
    return None


def post(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> tuple[int | None, str]:
    """POST once: (HTTP status or None, error text or '')."""
    code, _, error = exchange(url, body, headers, timeout, read=1024)
    return code, error


def blocked(url: str) -> str | None:
    """Why `url`'s host may not be sent to (a private, loopback or link-local address, unless
    WEBHOOK_ALLOW_PRIVATE_HOSTS), or None; bot endpoints (games.extbots) are checked alike."""
    parts = urlsplit(url)
    return _blocked_address(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))


def exchange(
    url: str, body: bytes, headers: Mapping[str, str], timeout: float, *, read: int
) -> tuple[int | None, bytes, str]:
    """POST once and read up to `read` bytes of the answer: (HTTP status or None, the answer's
    bytes, error text or ''). Follows no redirect, never reaches a refused address."""
    refused = blocked(url)
    if refused:
        return None, b"", refused
    proxy = conf("WEBHOOK_PROXY")
    opener = urllib.request.build_opener(
        _NoRedirects, urllib.request.ProxyHandler({"http": proxy, "https": proxy} if proxy else {})
    )
    request = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, response.read(read), ""
    except urllib.error.HTTPError as exc:
        return exc.code, b"", f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return None, b"", f"{type(exc).__name__}: {reason}"[:300]
