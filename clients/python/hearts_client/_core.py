"""What the sync and async clients share, free of I/O: requests, the retry rules, and stream positions."""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar, cast
from urllib.parse import parse_qs, urlsplit

import httpx
from httpx_sse import ServerSentEvent

from hearts_client.errors import (
    HeartsError,
    RateLimited,
    ServerError,
    ServiceUnavailable,
    StaleVersion,
    TransportError,
    error_from,
)
from hearts_client.models import Event

log = logging.getLogger("hearts_client")
__version__ = "1.0.0"  # the API's version (docs/clients.md, "Versions")
USER_AGENT = f"hearts-client-python/{__version__}"
_OVER = ("finished", "abandoned")
STREAM_TIMEOUT = httpx.Timeout(10.0, read=60.0)  # keep-alives come every 15 s: 60 s of silence is a dead link


@dataclass(frozen=True)
class Retry:
    """How a call is retried: at most `attempts` tries in all; waits of `backoff` seconds doubling
    up to `max_backoff` when the server names none; a `Retry-After` longer than `max_wait` is not
    waited for (the error is raised). A stream reconnects up to `stream_attempts` times in a row
    without receiving an event."""

    attempts: int = 5
    backoff: float = 0.25
    max_backoff: float = 5.0
    max_wait: float = 60.0
    stream_attempts: int = 10

    def delay(self, failures: int) -> float:
        return float(min(self.backoff * 2 ** max(0, failures - 1), self.max_backoff))


def new_key() -> str:
    """A fresh Idempotency-Key for one logical call (its retries reuse it)."""
    return f"hc-{uuid.uuid4().hex}"


T = TypeVar("T")


@dataclass
class Call(Generic[T]):
    """One logical call and its attempts; `T` is the type of its decoded answer.

    Writes carry an `Idempotency-Key` (the caller's or a new one) that every retry reuses, so a
    retry after a lost answer gets the first answer back instead of acting twice; with `version`
    they carry `If-Match`. Retried: no answer at all (the key makes it safe), 429 and 503 after
    `Retry-After`, other 5xx with backoff; 409 `stale_version` only when `restale` (a write whose
    intent does not depend on what changed, such as taking a seat): then at the version the 409
    names. Everything else raises at once.
    """

    method: str
    path: str
    body: dict[str, Any] | None = None
    params: dict[str, str] | None = None
    write: bool = False
    version: int | None = None
    key: str | None = None
    restale: bool = False
    etag: str | None = None  # sent as If-None-Match
    text: bool = False  # the answer is plain text, not JSON
    none_on: str | None = None  # an error code that answers None (404 `not_waiting`: not in the queue)
    unwrap: str | None = None  # the answer is this field of the body (`results` of a list)
    retry: Retry = field(default_factory=lambda: Retry())  # the client's, set when it runs the call
    failures: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.write and self.key is None:
            self.key = new_key()

    def headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self.key is not None:
            headers["Idempotency-Key"] = self.key
        if self.version is not None:
            headers["If-Match"] = str(self.version)
        if self.etag is not None:
            headers["If-None-Match"] = self.etag
        return headers

    def decode(self, value: Any) -> T:
        if self.unwrap is not None and isinstance(value, dict):
            value = value[self.unwrap]
        return cast(T, value)

    def request(self, http: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        return http.build_request(
            self.method, self.path, json=self.body, params=self.params, headers=self.headers()
        )

    def answered(self, response: httpx.Response) -> Done | float:
        """The decoded answer, or how long to wait before the next attempt (raises when done trying)."""
        if response.is_success:
            if self.text:
                return Done(response.text)
            return Done(self.decode(response.json()) if response.content else None)
        if response.status_code == 304:  # If-None-Match named the table's current version
            return Done(None)
        error = error_from(response)
        if self.none_on is not None and error.code == self.none_on:
            return Done(None)
        self.failures += 1
        if self.failures >= self.retry.attempts:
            raise error
        if isinstance(error, StaleVersion) and self.restale and error.version is not None:
            self.version = error.version
            return 0.0
        if isinstance(error, RateLimited | ServiceUnavailable):
            wait = error.retry_after if error.retry_after is not None else self.retry.delay(self.failures)
            if wait > self.retry.max_wait:
                raise error
            return wait
        if isinstance(error, ServerError):
            return self.retry.delay(self.failures)
        raise error

    def failed(self, exc: httpx.TransportError) -> float:
        """No answer: wait and try again (with the same key), or raise TransportError."""
        self.failures += 1
        if self.failures >= self.retry.attempts:
            raise TransportError("transport_error", f"{self.method} {self.path}: {exc!r}") from exc
        return self.retry.delay(self.failures)


@dataclass(frozen=True)
class Done:
    value: Any


def next_page(call: Call[Any], page: Any) -> Call[Any] | None:
    """The call for the page after `page` (a cursor page: `next` is its address, or null), or None
    after the last: the same call with `cursor` set to the one `next` names."""
    after = page.get("next") if isinstance(page, dict) else None
    if not after:
        return None
    cursor = parse_qs(urlsplit(after).query).get("cursor")
    if not cursor:
        return None
    return replace(call, params={**(call.params or {}), "cursor": cursor[0]}, key=None)


@dataclass
class StreamState:
    """A stream's position and reconnection rules, shared by the sync and async iterators.

    `last_event_id` is the id of the last event yielded; every reconnection sends it as
    `Last-Event-ID`, so the server resumes right after it (nothing missed, nothing repeated). A
    table stream is over after `table_finished`, or when the server answers 204 (over, nothing
    left after the position)."""

    path: str
    retry: Retry
    last_event_id: str | None = None
    table_stream: bool = True
    finished: bool = False
    failures: int = 0
    reconnects: int = 0

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self.last_event_id is not None:
            headers["Last-Event-ID"] = self.last_event_id
        return headers

    def opened(self, response: httpx.Response, body: bytes) -> float | None:
        """Check a stream's answer: None to read it (200); 204 ends the stream; an error raises, or
        (429, 503, 5xx) gives the wait before reconnecting."""
        if response.status_code == 200:
            return None
        if response.status_code == 204:
            self.finished = True
            return 0.0
        error = error_from(
            httpx.Response(
                response.status_code, headers=response.headers, content=body, request=response.request
            )
        )
        self.failures += 1
        if self.failures >= self.retry.stream_attempts:
            raise error
        if isinstance(error, RateLimited | ServiceUnavailable):
            wait = error.retry_after if error.retry_after is not None else self.retry.delay(self.failures)
            if wait > self.retry.max_wait:
                raise error
            return wait
        if isinstance(error, ServerError):
            return self.retry.delay(self.failures)
        raise error

    def event(self, sse: ServerSentEvent) -> Event | None:
        """The typed event of one SSE message (None for anything else); moves the position."""
        if not sse.data:
            return None
        data = json.loads(sse.data)
        if not isinstance(data, dict) or "type" not in data:
            return None
        event_id = sse.id or data.get("id")
        if event_id:
            self.last_event_id = str(event_id)
        self.failures = 0
        if self.table_stream and data["type"] == "table_finished":
            self.finished = True
        state = data.get("state")
        if data["type"] == "state" and isinstance(state, dict) and state.get("status") in _OVER:
            self.finished = True  # a table that was over before we connected: nothing will follow
        return cast(Event, data)

    def dropped(self, exc: Exception | None) -> float:
        """The connection ended before the stream was over: the wait before resuming (raises
        after `stream_attempts` failures in a row)."""
        self.failures += 1
        self.reconnects += 1
        cause = repr(exc) if exc else "the server ended the stream"
        if self.failures >= self.retry.stream_attempts:
            raise TransportError("transport_error", f"{self.path}: {cause}") from exc
        wait = self.retry.delay(self.failures)
        log.info(
            "stream %s lost (%s); resuming after %s in %.2f s", self.path, cause, self.last_event_id, wait
        )
        return wait


STREAM_DROPS: tuple[type[Exception], ...] = (httpx.TransportError, httpx.StreamError)

__all__ = ["STREAM_DROPS", "Call", "Done", "HeartsError", "Retry", "StreamState", "new_key", "next_page"]
