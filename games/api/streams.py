"""Event streams: one table's events, or all of a player's tables', as Server-Sent Events or NDJSON.

The events, their ids and the resume rule are games/live/events.py (shared with the GraphQL
subscriptions); this module frames them and serves the two views. Reconnecting with
`Last-Event-ID` (or `?last_event_id=`) set to the last id received resumes right after it: nothing
missed, nothing repeated. A client authenticates with its bearer header, or (a browser's
EventSource, which cannot send one) with a short-lived `?ticket=` for this one stream
(games/api/tickets.py). Both are plain async views: `add_streams`, an OpenAPI hook, describes them.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse, StreamingHttpResponse

from games import messages, quotas
from games.accounts import Principal, principal_from_header, principal_from_ticket
from games.api import schemas
from games.api.auth import count_against_limits
from games.contracts import event_schemas
from games.errors import Code, ServiceError
from games.infra import ratelimit, sockets
from games.live import fanout
from games.live.events import Item, open_table, parse_player_position, player_events, table_events
from games.operations.scopes import STREAMS as STREAM_SCOPES

log = logging.getLogger(__name__)

# -- framing ------------------------------------------------------------------------------


RETRY_MS = 2000  # how long an EventSource waits before it reconnects


@dataclass
class Framer:
    """Writes events as SSE (`event`, `id`, `data` lines) or as NDJSON (one object per line, with
    the id under `id`); keep-alives are an SSE comment or `{"type": "keepalive"}`. Every SSE block
    carries JSON data: the reconnection delay (`retry:`) rides in the first event's block, since a
    block of its own would reach clients as a message without data."""

    ndjson: bool
    last_write: float = field(default_factory=time.monotonic)
    retry_sent: bool = False

    @property
    def content_type(self) -> str:
        return "application/x-ndjson" if self.ndjson else "text/event-stream"

    def event(self, event_id: str, data: dict[str, Any]) -> bytes:
        self.last_write = time.monotonic()
        body = {"id": event_id, **data}
        text = json.dumps(body, separators=(",", ":"))
        if self.ndjson:
            return (text + "\n").encode()
        retry = "" if self.retry_sent else f"retry: {RETRY_MS}\n"
        self.retry_sent = True
        return f"{retry}id: {event_id}\nevent: {data['type']}\ndata: {text}\n\n".encode()

    def keepalive(self) -> bytes | None:
        if time.monotonic() - self.last_write < settings.STREAM_KEEPALIVE_SECONDS:
            return None
        self.last_write = time.monotonic()
        # An SSE comment line with no blank line after it: a blank line would make clients that
        # keep the last event id (httpx-sse) hand out an event with empty data.
        return b'{"type":"keepalive"}\n' if self.ndjson else b": keep-alive\n"


def _until_keepalive(framer: Framer) -> float:
    return max(0.05, settings.STREAM_KEEPALIVE_SECONDS - (time.monotonic() - framer.last_write))


COALESCED = 64  # most events sent in one write


async def framed(items: AsyncIterator[Item], framer: Framer) -> AsyncIterator[bytes]:
    """The SSE or NDJSON bytes of a stream's items, with a keep-alive when it has been quiet. The
    events that come together (a table change's card, trick and turn) go out in one write: the
    items say when nothing more is coming for now (None, before every wait), and each write costs
    the server a trip through Django's and uvicorn's sending, more than framing an event does."""
    held: list[bytes] = []
    async for item in items:
        if item is not None:
            held.append(framer.event(*item))
            if len(held) < COALESCED:
                continue
        if held:
            yield b"".join(held)
            held = []
            continue
        beat = framer.keepalive()
        if beat:
            yield beat
    if held:
        yield b"".join(held)


# -- views --------------------------------------------------------------------------------


def _error(exc: ServiceError) -> JsonResponse:
    return JsonResponse(exc.body(), status=exc.status)


def _limited(exc: ratelimit.RateLimited) -> JsonResponse:
    response = JsonResponse(exc.body(), status=429)
    response["Retry-After"] = str(exc.retry_after)
    return response


async def _principal(request: HttpRequest, stream: str) -> Principal:
    """The caller: from `Authorization: Bearer`, or from a `?ticket=` issued for this `stream`
    (`table:<id>` or `me`; see games/api/tickets.py) by a client that cannot send headers."""
    header = request.headers.get("Authorization", "")
    ticket = request.GET.get("ticket")
    if ticket is not None and header:
        msg = "send a ticket or an Authorization header, not both"
        raise ServiceError("ticket_invalid", msg, kind="auth")
    if ticket is not None:
        principal: Principal | None = await fanout.db(principal_from_ticket, ticket, stream)
    else:
        principal = await fanout.db(principal_from_header, header)
    if principal is None:
        raise ServiceError(
            "not_authenticated", "send 'Authorization: Bearer <key or token>' or a ?ticket=", kind="auth"
        )
    if principal.player is not None:
        messages.prefer(principal.player.language)  # its errors in the player's language
    principal.require_scope(STREAM_SCOPES[stream.partition(":")[0]])  # 403 missing_scope
    await fanout.db(count_against_limits, request, principal)  # opening a stream counts as a request
    return principal


def _framer(request: HttpRequest) -> Framer:
    wanted = request.GET.get("format") or ""
    if wanted not in ("", "sse", "ndjson"):
        raise ServiceError("invalid_format", "format is sse or ndjson", kind="malformed")
    ndjson = wanted == "ndjson" or (
        not wanted and "application/x-ndjson" in request.headers.get("Accept", "")
    )
    return Framer(ndjson=ndjson)


def _last_event_id(request: HttpRequest) -> str | None:
    raw = request.headers.get("Last-Event-ID") or request.GET.get("last_event_id")
    return raw.strip() if raw and raw.strip() else None


async def _take_quota(principal: Principal) -> tuple[list[sockets.Scope], str]:
    """A place for this stream under the caller's stream quotas (games/quotas.py), or 429
    quota_exceeded: its scopes and its entry, for `_held`."""
    entry = f"stream:{uuid.uuid4().hex}"
    scopes = await fanout.db(quotas.stream_scopes, principal)
    await fanout.db(quotas.stream_opened, scopes, entry)
    return scopes, entry


async def _held(items: AsyncIterator[Item], scopes: list[sockets.Scope], entry: str) -> AsyncIterator[Item]:
    """The stream's items while it holds its place under the quotas: refreshed every
    sockets.REFRESH seconds (a quiet stream still yields before each wait), released when the
    stream ends or its client goes (a killed process's place expires after sockets.TTL)."""
    refreshed = time.monotonic()
    try:
        async for item in items:
            if item is None and time.monotonic() - refreshed >= sockets.REFRESH:
                refreshed = time.monotonic()
                fanout.hub().background(fanout.db(sockets.refresh, [(scopes, entry)]))
            yield item
    finally:
        fanout.hub().background(fanout.db(sockets.release, scopes, entry))


def _streaming(framer: Framer, items: AsyncIterator[Item]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(framed(items, framer), content_type=framer.content_type)
    response["Cache-Control"] = "no-cache, no-transform"
    response["X-Accel-Buffering"] = "no"  # nginx: do not buffer the stream
    return response


async def table_stream(request: HttpRequest, table_id: int) -> HttpResponseBase:
    """GET /api/v1/tables/{id}/stream: the table's events for the caller (their seat's view, or
    public events only for an app or an unseated player). A finished table with nothing left
    to send answers 204, which tells a browser's EventSource to stop reconnecting."""
    if request.method != "GET":
        return JsonResponse(messages.body("method_not_allowed", "use GET"), status=405)
    try:
        framer = _framer(request)
        principal = await _principal(request, f"table:{table_id}")
        after, first = await open_table(principal, table_id, _last_event_id(request))
    except ServiceError as exc:
        return _error(exc)
    except ratelimit.RateLimited as exc:
        return _limited(exc)
    if first is not None and not first.events and first.over:
        return HttpResponse(status=204)
    try:
        scopes, entry = await _take_quota(principal)
    except ServiceError as exc:
        return _error(exc)
    idle = lambda: _until_keepalive(framer)  # noqa: E731
    items = table_events(principal, table_id, after, first, idle)
    return _streaming(framer, _held(items, scopes, entry))


async def player_stream(request: HttpRequest) -> HttpResponseBase:
    """GET /api/v1/me/stream: a player's events at every table they sit at, and `your_turn`
    whenever any of them waits for them."""
    if request.method != "GET":
        return JsonResponse(messages.body("method_not_allowed", "use GET"), status=405)
    try:
        framer = _framer(request)
        principal = await _principal(request, "me")
        principal.require_player("a player stream needs a player's token")
        raw = _last_event_id(request)
        positions = parse_player_position(raw) if raw else None
        scopes, entry = await _take_quota(principal)
    except ServiceError as exc:
        return _error(exc)
    except ratelimit.RateLimited as exc:
        return _limited(exc)
    items = player_events(principal, positions, lambda: _until_keepalive(framer))
    return _streaming(framer, _held(items, scopes, entry))


# -- their OpenAPI description ------------------------------------------------------------


def _error_responses(codes: tuple[Code, ...]) -> dict[str, Any]:
    """A stream's error responses: the one error shape (RateLimitedOut for a 429) with its codes."""
    out: dict[str, Any] = {}
    for status, names in schemas.error_codes(codes, body=False).items():
        too_many = "TooManyOut" if "quota_exceeded" in names else "RateLimitedOut"
        shape = too_many if status == 429 else "ErrorOut"
        out[str(status)] = {
            "description": schemas.describe_codes(status, names),
            "x-error-codes": names,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{shape}"}}},
            **({"headers": {"Retry-After": schemas.RETRY_AFTER}} if status in (429, 503) else {}),
        }
    return out


def add_streams(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: every event type's schema (games.contracts.event_schemas)
    and the two streams, which DRF does not see."""
    result.setdefault("components", {}).setdefault("schemas", {}).update(event_schemas.event_components())
    result["paths"].update(event_schemas.stream_paths(_error_responses))
    return result
