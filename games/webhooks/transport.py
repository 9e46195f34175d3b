"""The wire: the Standard Webhooks signature headers of an attempt, and one POST that follows no
redirect, never reaches a private address unless allowed, and connects to the address it checked
(games.webhooks.addresses)."""

from __future__ import annotations

import datetime as dt
import logging
import random
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

import httpx
from standardwebhooks import Webhook

from games.webhooks import addresses
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


def _blocked_address(host: str, port: int) -> str | None:
    """Why `host` may not be sent to (a private, loopback or link-local address, or an IPv6 form
    embedding one: games.webhooks.addresses) unless WEBHOOK_ALLOW_PRIVATE_HOSTS, or None."""
    if conf("WEBHOOK_ALLOW_PRIVATE_HOSTS"):
        return None
    netloc = f"[{host}]" if ":" in host else host
    return addresses.check(f"http://{netloc}:{port}/", allow_private=False)[1]


def post(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> tuple[int | None, str]:
    """POST once: (HTTP status or None, error text or '')."""
    code, _, error = exchange(url, body, headers, timeout, read=1024)
    return code, error


def blocked(url: str) -> str | None:
    """Why `url`'s host may not be sent to (an address that is not public, or an IPv6 form embedding
    one, unless WEBHOOK_ALLOW_PRIVATE_HOSTS), or None; bot endpoints (games.extbots) are checked alike."""
    parts = urlsplit(url)
    return _blocked_address(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))


def exchange(
    url: str, body: bytes, headers: Mapping[str, str], timeout: float, *, read: int
) -> tuple[int | None, bytes, str]:
    """POST once and read up to `read` bytes of the answer: (HTTP status or None, the answer's
    bytes, error text or ''). Follows no redirect, never reaches a refused address."""
    allowed, refused = addresses.check(url, allow_private=bool(conf("WEBHOOK_ALLOW_PRIVATE_HOSTS")))
    if refused:
        return None, b"", refused
    # Connect to the addresses just checked, never to what the name resolves to a moment later.
    client = addresses.pinned_client(allowed, proxy=conf("WEBHOOK_PROXY") or None)
    try:
        with (
            client,
            client.stream("POST", url, content=body, headers=dict(headers), timeout=timeout) as answer,
        ):
            if not 200 <= answer.status_code < 300:  # a 3xx too: no redirect is followed
                return answer.status_code, b"", f"HTTP {answer.status_code}"
            data = b""
            for chunk in answer.iter_bytes():
                data += chunk
                if len(data) >= read:
                    break
            return answer.status_code, data[:read], ""
    except httpx.TimeoutException as exc:
        return None, b"", f"{type(exc).__name__}: timed out"
    except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError) as exc:
        return None, b"", f"{type(exc).__name__}: {exc}"[:300]
