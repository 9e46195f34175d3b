"""Event streams: one table's events, or all of a player's tables', as Server-Sent Events or NDJSON;
resumable with Last-Event-ID, redacted by games.reads, woken by the fan-out hub of games/api/fanout.py.
A client authenticates with its bearer header, or (a browser's EventSource, which cannot send one)
with a short-lived `?ticket=` for this one stream (games/api/tickets.py).

Positions. Every event of the move log has the id `<seq>:<n>`: the sequence number of the move
that caused it and its index among that move's events. An id `<seq>` alone means "every event up
to and including move <seq>" (the first `state` event and `your_turn` carry such ids, as does the
REST `version`). Reconnecting with `Last-Event-ID` (or `?last_event_id=`) set to the last id
received resumes right after it: nothing missed, nothing repeated. A player stream's id is the
position at each of the player's tables, `<table>=<position>` joined with commas.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse, StreamingHttpResponse

from games import messages, reads, services
from games.accounts import Principal, principal_from_header, principal_from_ticket
from games.api import fanout
from games.api.auth import count_against_limits
from games.errors import ServiceError
from games.infra import metrics, ratelimit

if TYPE_CHECKING:  # types only: the queries are in games.reads
    from games.models import Table

log = logging.getLogger(__name__)

_POSITION = re.compile(r"(\d{1,12})(?::(\d{1,4}))?")
MAX_TABLES = 100  # most tables in one player's stream position


@dataclass(frozen=True)
class Position:
    """Where a viewer is in one table's events: after event `index` of move `seq`, or after the
    whole move when `index` is None."""

    seq: int
    index: int | None = None

    def __str__(self) -> str:
        return str(self.seq) if self.index is None else f"{self.seq}:{self.index}"

    @classmethod
    def parse(cls, raw: str) -> Position:
        match = _POSITION.fullmatch(raw.strip())
        if match is None:
            raise _bad_position(raw)
        return cls(int(match[1]), None if match[2] is None else int(match[2]))


def _bad_position(raw: str) -> ServiceError:
    return ServiceError(
        "invalid_last_event_id",
        f"{raw[:40]!r} is not an event id of this stream (like 41:2, or 41)",
        kind="malformed",
    )


def parse_player_position(raw: str) -> dict[int, Position]:
    """`12=41:2,15=20`: the position at each table of a player's stream."""
    out: dict[int, Position] = {}
    for part in filter(None, raw.strip().split(",")):
        table, sep, position = part.partition("=")
        if not sep or not table.isdigit() or len(out) >= MAX_TABLES:
            raise _bad_position(raw)
        out[int(table)] = Position.parse(position)
    return out


def format_player_position(positions: dict[int, Position]) -> str:
    return ",".join(f"{t}={p}" for t, p in sorted(positions.items()))


@dataclass
class Batch:
    """What one viewer has not seen yet at one table, up to a page of moves."""

    table: Table
    events: list[tuple[Position, dict[str, Any]]]
    end: Position  # the position after this batch
    more: bool  # another page is waiting
    your_turn: dict[str, Any] | None = None  # set once caught up, when the viewer is to act
    turn_key: tuple[Any, ...] | None = None

    @property
    def over(self) -> bool:
        return reads.is_over(self.table) and not self.more


def snapshot(principal: Principal, table_id: int) -> tuple[dict[str, Any], Batch]:
    """The viewer's full state (the REST table body) and its position, with `your_turn`."""
    metrics.stream_read("viewer")
    table = services.table_seen(principal, table_id)
    body = reads.table_body(table, principal)
    batch = Batch(table, [], Position(body["version"]), more=False)  # a delayed spectator's: the cut
    _set_turn(batch, body, principal)
    return body, batch


def catch_up(principal: Principal, table_id: int, after: Position) -> Batch:
    """The events after `after` that the viewer may see (games.reads redacts them exactly as the
    REST events answer), and, once caught up, whether it is the viewer's turn."""
    metrics.stream_read("viewer")
    table = services.table_seen(principal, table_id)
    upto = reads.shown_version(table, principal)  # a delayed spectator's cut
    if after.seq > upto:
        raise _bad_position(str(after))
    seat = reads.seat_of(table, principal)
    first = after.seq if after.index is not None else after.seq + 1
    # Only up to the version just read: a move committed since is sent next time, after the table
    # (and so `your_turn`) reflects it; otherwise a batch could end before its own last event.
    moves = reads.moves_from(table, first, upto=upto)
    events = [
        (Position(seq, index), {"table": table.pk, **event})
        for seq, index, event in reads.visible_events(moves, seat)
        if not (seq == after.seq and after.index is not None and index <= after.index)
    ]
    more = len(moves) == reads.PAGE
    end = Position(moves[-1].seq if more else upto)
    batch = Batch(table, events, end, more)
    if not more:
        _set_turn(batch, reads.table_body(table, principal), principal)
    return batch


def _set_turn(batch: Batch, body: dict[str, Any], principal: Principal) -> None:
    game, seat = body["game"], body["your_seat"]
    if not game or seat is None or seat not in game["to_act"] or not game.get("legal_actions"):
        return
    batch.turn_key = (game["hand_number"], game["phase"], len(game["tricks"]), len(game["trick"]))
    batch.your_turn = {
        "type": "your_turn",
        "table": batch.table.pk,
        "seq": batch.table.version,
        "version": batch.table.version,
        "hand": game["hand_number"],
        "phase": game["phase"],
        "seat": seat,
        "legal_actions": game["legal_actions"],
        "deadline": body["deadline"],
    }


# -- reading -----------------------------------------------------------------------------

_db = fanout.db


def _limit(read: fanout.Read, principal: Principal) -> int | None:
    """Up to where this viewer may see the shared read: its version, a delayed spectator's cut,
    or None when the read has no cut for a delayed spectator yet (the stream then reads its own)."""
    if reads.delay_for(read.table, principal) is None:
        return read.version
    return read.cut


def shared_batch(
    read: fanout.Read, moves: list[Any], principal: Principal, after: Position, limit: int | None = None
) -> Batch:
    """What the shared read of a table holds for this viewer after `after`, up to `limit` (its
    version, or a delayed spectator's cut): its own redaction (games.reads.visible_events with
    its seat) and its own `your_turn`."""
    table = read.table
    limit = read.version if limit is None else limit
    seat = reads.seat_of(table, principal)
    events = [
        (Position(seq, index), {"table": table.pk, **event})
        for seq, index, event in reads.visible_events([m for m in moves if m.seq <= limit], seat)
        if not (seq == after.seq and after.index is not None and index <= after.index)
    ]
    batch = Batch(table, events, Position(limit), more=False)
    state = read.state()
    if seat is not None and state is not None and seat in state.to_act():
        _set_turn(batch, reads.table_body(table, principal, state), principal)
    return batch


async def next_batch(
    follow: fanout.Follow, principal: Principal, table_id: int, after: Position
) -> Batch | None:
    """The viewer's next batch at a table it follows: from the feed's shared read when it holds
    what the viewer lacks, else (a viewer far behind) from the viewer's own read; None when the
    shared read has nothing newer than `after`."""
    read = follow.read(table_id)
    if read is None:
        return None
    limit = _limit(read, principal)
    first = after.seq if after.index is not None else after.seq + 1
    if limit is not None and first > limit:
        return None
    moves = read.moves_from(first) if limit is not None else None
    if moves is not None:
        return shared_batch(read, moves, principal, after, limit)
    return await _db(catch_up, principal, table_id, after)


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


# -- streams ------------------------------------------------------------------------------


async def _table_events(
    principal: Principal, table_id: int, after: Position | None, framer: Framer, first: Batch | None
) -> AsyncIterator[bytes]:
    async with fanout.following() as follow:
        await follow.follow([table_id])  # subscribed before the first read: no change falls between
        turn_sent: tuple[Any, ...] | None = None
        opened = first.table if first is not None else None
        if after is None:  # a new viewer: the full state first
            body, batch = await _db(snapshot, principal, table_id)
            opened = batch.table
            if _spectator(opened, principal):
                await follow.spectate(table_id)
            follow.offer(batch.table)
            yield framer.event(str(batch.end), {"type": "state", "table": table_id, "state": body})
            after = batch.end
            if batch.your_turn:
                yield framer.event(str(after), batch.your_turn)
                turn_sent = batch.turn_key
        elif first is not None:
            if opened is not None and _spectator(opened, principal):
                await follow.spectate(table_id)
            follow.offer(first.table)
            if first.turn_key and first.end == after:
                turn_sent = first.turn_key  # resumed at a `your_turn` id: it was received already
        while True:
            follow.event.clear()  # set again by any newer shared read from here on
            if first is not None:
                next_, first = first, None
            else:
                next_ = await next_batch(follow, principal, table_id, after)
            if next_ is not None:
                batch = next_
                for position, event in batch.events:
                    yield framer.event(str(position), event)
                after = batch.end
                if batch.more:
                    first = await _db(catch_up, principal, table_id, after)
                    continue
                if batch.your_turn and batch.turn_key != turn_sent:
                    yield framer.event(str(after), batch.your_turn)
                    turn_sent = batch.turn_key
                if batch.over:
                    return
            await follow.wait(_until_keepalive(framer))
            beat = framer.keepalive()
            if beat:
                yield beat


def _spectator(table: Table, principal: Principal) -> bool:
    """A table stream of a player not seated at the table: one of the table's spectators (an
    app's streams are the operator's, not spectators)."""
    return principal.player is not None and reads.seat_of(table, principal) is None


def _player_tables(principal: Principal, known: dict[int, Position]) -> list[int]:
    """The player's tables worth following: every unfinished table they sit at, and the
    tables of their position (to deliver a table's last events)."""
    ids = set(reads.unfinished_tables_of(principal, MAX_TABLES)) | set(known)
    return sorted(ids)


def _player_snapshot(principal: Principal) -> tuple[list[dict[str, Any]], dict[int, Position], list[Batch]]:
    bodies, positions, batches = [], {}, []
    for table_id in _player_tables(principal, {}):
        body, batch = snapshot(principal, table_id)
        bodies.append(body)
        positions[table_id] = batch.end
        batches.append(batch)
    return bodies, positions, batches


def _player_catch_up(principal: Principal, positions: dict[int, Position]) -> list[Batch]:
    batches = []
    for table_id in _player_tables(principal, positions):
        try:
            batches.append(catch_up(principal, table_id, positions.get(table_id, Position(0))))
        except ServiceError as exc:
            if exc.code != "not_found":
                raise
            positions.pop(table_id, None)  # a position naming a table they cannot see
    return batches


async def _player_events(
    principal: Principal, positions: dict[int, Position] | None, framer: Framer
) -> AsyncIterator[bytes]:
    assert principal.player is not None
    async with fanout.following(principal.player.pk) as follow:  # the player's channel first
        turns: dict[int, tuple[Any, ...] | None] = {}
        own = positions is not None  # resuming: the first read is the stream's own
        if positions is None:
            bodies, positions, batches = await _db(_player_snapshot, principal)
            await follow.follow(positions)
            for batch in batches:
                follow.offer(batch.table)
            yield framer.event(format_player_position(positions), {"type": "tables", "tables": bodies})
            for batch in batches:
                if batch.your_turn:
                    yield framer.event(format_player_position(positions), batch.your_turn)
                    turns[batch.table.pk] = batch.turn_key
        while True:
            follow.event.clear()
            if own or follow.discover:  # resuming, a page behind, or a table not followed yet
                own = follow.discover = False
                batches = await _db(_player_catch_up, principal, dict(positions))
                await follow.follow({*positions, *(b.table.pk for b in batches)})
                for batch in batches:
                    follow.offer(batch.table)
            else:
                batches = []
                for table_id, position in list(positions.items()):
                    try:
                        found = await next_batch(follow, principal, table_id, position)
                    except ServiceError as exc:
                        if exc.code != "not_found":
                            raise
                        positions.pop(table_id, None)
                        continue
                    if found is not None:
                        batches.append(found)
            more = False
            for batch in batches:
                table_id = batch.table.pk
                for position, event in batch.events:
                    positions[table_id] = position
                    yield framer.event(format_player_position(positions), event)
                positions[table_id] = batch.end
                more = more or batch.more
                if batch.your_turn and batch.turn_key != turns.get(table_id):
                    yield framer.event(format_player_position(positions), batch.your_turn)
                    turns[table_id] = batch.turn_key
                if batch.over:  # its last events are out: stop following it
                    positions.pop(table_id, None)
                    turns.pop(table_id, None)
            if len(follow.tables) != len(positions) or set(positions) != follow.tables:
                await follow.follow(positions)
            if more:
                own = True
                continue
            await follow.wait(_until_keepalive(framer))
            beat = framer.keepalive()
            if beat:
                yield beat


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
        principal: Principal | None = await _db(principal_from_ticket, ticket, stream)
    else:
        principal = await _db(principal_from_header, header)
    if principal is None:
        raise ServiceError(
            "not_authenticated", "send 'Authorization: Bearer <key or token>' or a ?ticket=", kind="auth"
        )
    if principal.player is not None:
        messages.prefer(principal.player.language)  # its errors in the player's language
    await _db(count_against_limits, request, principal)  # opening a stream counts as a request
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


def _streaming(framer: Framer, body: AsyncIterator[bytes]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(body, content_type=framer.content_type)
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
        raw = _last_event_id(request)
        after = Position.parse(raw) if raw else None
        # Read once before answering, so that a bad table or position is a plain error answer.
        first = await _db(catch_up, principal, table_id, after) if after else None
        if after is None:
            metrics.stream_read("viewer")
            await _db(reads.table_for, principal, table_id)
    except ServiceError as exc:
        return _error(exc)
    except ratelimit.RateLimited as exc:
        return _limited(exc)
    if first is not None and not first.events and first.over:
        return HttpResponse(status=204)
    return _streaming(framer, _table_events(principal, table_id, after, framer, first))


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
    except ServiceError as exc:
        return _error(exc)
    except ratelimit.RateLimited as exc:
        return _limited(exc)
    return _streaming(framer, _player_events(principal, positions, framer))
