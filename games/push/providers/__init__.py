"""The push providers' wire protocols: FCM HTTP v1, APNs over HTTP/2 with token authentication, and
Web Push (RFC 8030/8291/8292). Each module has one `send(credential, target, note, timeout)` that
makes one request and says what happened; retries, claims and pruning are games.push.sending's."""

from __future__ import annotations

import base64
import datetime as dt
import email.utils
import hashlib
import logging
import math
import os
import ssl
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

import certifi
import httpx
from django.conf import settings

from games.webhooks import addresses

Result = Literal["sent", "retry", "dead", "failed"]


@dataclass(frozen=True)
class Note:
    """What a device shows: no card or other hidden information, ever (built by games.push.texts)."""

    title: str
    body: str
    collapse: str  # one notification per table on the device: FCM collapse_key/tag, apns-collapse-id, Topic
    data: dict[str, str]  # for the app: {"kind", "table", "message"}; strings only (FCM's rule)
    ttl: int  # seconds the provider keeps it for a device that is offline
    language: str = "en"


@dataclass(frozen=True)
class Target:
    """One device: `token` is the FCM registration token, the APNs device token, or the Web Push
    endpoint; `keys` the Web Push subscription's p256dh and auth; `topic` the APNs bundle id."""

    kind: str
    token: str
    keys: dict[str, str] = field(default_factory=dict)
    topic: str = ""


@dataclass(frozen=True)
class Outcome:
    """One request's result: `sent`; `retry` (5xx, 429, a network error; `retry_after` seconds when
    the provider said); `dead` (the token is gone: prune the device); `failed` (never retried:
    a refused request, bad credentials)."""

    result: Result
    status: int | None = None
    error: str = ""
    retry_after: float | None = None
    provider_id: str = ""  # FCM's message name, APNs's apns-id


Credential = dict[str, Any]  # the provider's public fields and the decrypted secret, merged


# The helpers the three protocols share: one HTTP client per process, Retry-After, the collapse ids
# each provider accepts, and error text that never carries a token or a key.

ERROR_MAX = 300  # PushMessage.last_error's length
APNS_COLLAPSE_MAX = 64  # bytes: Apple refuses a longer apns-collapse-id (BadCollapseId)
WEBPUSH_TOPIC_MAX = 32  # characters of the URL-safe base64 alphabet (RFC 8030 section 5.4)
SECRET_MIN = 8  # shorter "secrets" (a malformed key) are not worth hiding, and would blank out words

_clients: dict[str, httpx.Client] = {}
_clients_lock = threading.Lock()


def client() -> httpx.Client:
    """The process's one HTTP client for every provider: APNs wants one long-lived HTTP/2 connection
    per process (Apple treats rapid reconnection as a denial of service), and FCM and the Web Push
    services answer faster on a kept one. It follows no redirect (a Web Push endpoint is supplied by
    a client) and trusts PUSH_CA_FILE's certificates besides the usual ones."""
    ca_file = str(settings.PUSH_CA_FILE or "")
    with _clients_lock:
        shared = _clients.get(ca_file)
        if shared is None:
            context = _trust(ca_file)
            shared = _clients[ca_file] = httpx.Client(http2=True, verify=context, follow_redirects=False)
    return shared


_contexts: dict[str, ssl.SSLContext] = {}


def _trust(ca_file: str) -> ssl.SSLContext:
    """The TLS context of the providers' clients: certifi's roots and PUSH_CA_FILE's (made once)."""
    context = _contexts.get(ca_file)
    if context is None:
        context = _contexts[ca_file] = ssl.create_default_context(cafile=certifi.where())
        if ca_file:
            context.load_verify_locations(cafile=ca_file)
    return context


PINNED_CLIENTS = 64  # Web Push hosts whose pinned client (and its kept connection) a process keeps
_pinned: OrderedDict[tuple[str, tuple[str, ...]], httpx.Client] = OrderedDict()


def pinned(found: list[addresses.IPAddress]) -> httpx.Client:
    """A client like `client()` that connects only to `found`, the addresses a Web Push endpoint's
    host resolved to when it was checked (games.webhooks.addresses), so a name that rebinds after
    the check cannot move the send. One per set of addresses, the most recently used
    PINNED_CLIENTS kept, so a push service's connection is reused while its name keeps resolving
    to the same addresses."""
    ca_file = str(settings.PUSH_CA_FILE or "")
    key = (ca_file, tuple(str(a) for a in found))
    with _clients_lock:
        kept = _pinned.get(key)
        if kept is not None:
            _pinned.move_to_end(key)
            return kept
        kept = _pinned[key] = addresses.pinned_client(found, verify=_trust(ca_file), http2=True)
        while len(_pinned) > PINNED_CLIENTS:
            _, evicted = _pinned.popitem(last=False)
            evicted.close()
    return kept


class _RequestLineRedaction(logging.Filter):
    """httpx logs every request's URL at INFO, and ours hold an APNs device token or a Web Push
    endpoint (whoever knows it can push to that browser): the line keeps the origin only."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if (
            isinstance(record.msg, str)
            and record.msg.startswith("HTTP Request:")
            and isinstance(args, tuple)
            and len(args) > 1
        ):
            url = args[1]
            if isinstance(url, httpx.URL):
                record.args = (args[0], f"{url.scheme}://{url.netloc.decode()}/…", *args[2:])
        return True


logging.getLogger("httpx").addFilter(_RequestLineRedaction())
# hpack's DEBUG lines hold whole HTTP/2 header blocks, Huffman-coded but readable: the provider
# tokens in `authorization` with them. They stay out of the logs whatever LOG_LEVEL says.
logging.getLogger("hpack").setLevel(logging.INFO)


def _forget_clients() -> None:
    """A forked worker opens connections of its own: the parent's sockets are not its to share."""
    global _clients_lock
    _clients_lock = threading.Lock()
    _clients.clear()
    _pinned.clear()
    _contexts.clear()


os.register_at_fork(after_in_child=_forget_clients)


def retry_after(value: str | None) -> float | None:
    """Seconds a Retry-After header asks for, as delta-seconds or an HTTP date (RFC 9110 10.2.3);
    None when absent or unreadable, so that the sender's own backoff decides."""
    if not value:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, when.timestamp() - time.time())


def apns_collapse_id(collapse: str) -> str:
    """`collapse` as an apns-collapse-id: itself when it fits Apple's 64 bytes, else a digest of it
    (64 hex characters), so that two long ids never collapse into one by truncation."""
    if len(collapse.encode()) <= APNS_COLLAPSE_MAX:
        return collapse
    return hashlib.sha256(collapse.encode()).hexdigest()


def webpush_topic(collapse: str) -> str:
    """`collapse` as a Web Push Topic: at most 32 characters of the URL-safe base64 alphabet, which a
    table id with its separators is not; a digest keeps it one topic per collapse id."""
    digest = hashlib.sha256(collapse.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")[:WEBPUSH_TOPIC_MAX]


def short(token: str) -> str:
    """A token as a log line may show it: enough to tell two apart, too little to send to."""
    return f"{token[:8]}…" if len(token) > 8 else "…"


def scrub(text: str, *secrets: str) -> str:
    """`text` fit for Outcome.error and the logs: without any of `secrets` (tokens, endpoints,
    keys), and no longer than PushMessage.last_error holds."""
    for secret in secrets:
        if len(secret) >= SECRET_MIN:
            text = text.replace(secret, short(secret))
    return text[:ERROR_MAX]


def refusal(what: str, url: str, why: str) -> Outcome:
    """The Outcome of a URL games.webhooks.transport.blocked refused for `why`: a name that did not
    resolve may resolve on the next attempt; a private address will not become public."""
    result: Result = "retry" if why.startswith("cannot resolve host") else "failed"
    return Outcome(result, error=scrub(f"{what} refused: {why}", url))


def network_outcome(exc: Exception, *secrets: str) -> Outcome:
    """A request that got no answer (refused, reset, timed out): the provider may come back."""
    return Outcome("retry", error=scrub(f"network: {type(exc).__name__}: {exc}", *secrets))
