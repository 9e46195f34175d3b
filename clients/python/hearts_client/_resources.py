"""Every REST operation described once, grouped by resource, for the sync and the async client alike.

A resource method is a builder: it says what to send (method, path, body, query, headers) and how to
read the answer, as a `Call` (or, for a stream, a `StreamState`), and does no I/O. Its decorator
names the OpenAPI `operationId` it wraps and makes it a method of both clients: on `HeartsClient`
(a `Resource[Sync]`) it runs the call on httpx.Client and returns the answer, on
`AsyncHeartsClient` (a `Resource[Async]`) it returns a coroutine run on httpx.AsyncClient; the two
clients differ only in that transport. `operations(client)` lists what a client wraps, which
`tests/e2e/test_sdk_contract.py` holds against the document the service generates.
"""

from __future__ import annotations

import builtins
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from hearts_client._core import Call, StreamState
from hearts_client.models import (
    Action,
    ApiKey,
    ApiKeyPage,
    ApiKeyWithSecret,
    AppSettings,
    AuditPage,
    BotEndpoint,
    BotEndpointPage,
    BotEndpointWithSecret,
    Delivery,
    DeliveryDetail,
    DeliveryPage,
    DeliveryStatus,
    Device,
    DeviceKind,
    DevicePage,
    Erased,
    ExportJob,
    GameExport,
    Hand,
    HandReplay,
    HandReview,
    Hint,
    InvitePage,
    LeaderboardPage,
    Me,
    MoonChoice,
    MyTurns,
    PlayerRatings,
    PlayerToken,
    PushSettings,
    RatingHistoryPage,
    RatingSystem,
    RotatedApiKey,
    Scoresheet,
    SeatLevel,
    SpectatorDelay,
    Standings,
    StreamTicket,
    Table,
    TablePage,
    Token,
    Tournament,
    TournamentPage,
    TournamentTableRow,
    VapidKey,
    Webhook,
    WebhookPage,
    WebhookWithSecret,
    WebPushKeys,
)

if TYPE_CHECKING:
    from typing import Self

    from hearts_client.aclient import AsyncEventStream
    from hearts_client.client import EventStream

P = ParamSpec("P")
T = TypeVar("T")
I = TypeVar("I")  # noqa: E741 (an item of a page)
M = TypeVar("M")


class Sync:
    """The mode of `HeartsClient`'s resources: a method returns its answer."""


class Async:
    """The mode of `AsyncHeartsClient`'s resources: a method returns a coroutine of its answer."""


class Resource(Generic[M]):
    """A group of operations (one OpenAPI tag, more or less) bound to a client."""

    def __init__(self, client: Any) -> None:
        self._client = client


class Operation(Generic[P, T]):
    """A resource method that wraps the REST operation `operation_id`: `build` makes the call."""

    def __init__(self, operation_id: str, build: Callable[Concatenate[Any, P], Call[T]]) -> None:
        self.operation_id, self.build = operation_id, build

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(self, obj: Resource[Sync], owner: type | None = None) -> Callable[P, T]: ...
    @overload
    def __get__(
        self, obj: Resource[Async], owner: type | None = None
    ) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, obj: Resource[Any] | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        build = self.build

        def method(*args: Any, **kwargs: Any) -> Any:
            return obj._client._execute(build(obj, *args, **kwargs))

        return _bind(method, build)


class Pages(Generic[P, T, I]):
    """Every item of a cursor-paged operation: the pages of `operation`, followed through `next`."""

    def __init__(self, operation: Operation[P, T], items: Callable[[T], builtins.list[I]]) -> None:
        self.operation, self.items = operation, items
        self.operation_id = operation.operation_id

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(self, obj: Resource[Sync], owner: type | None = None) -> Callable[P, Iterator[I]]: ...
    @overload
    def __get__(self, obj: Resource[Async], owner: type | None = None) -> Callable[P, AsyncIterator[I]]: ...
    def __get__(self, obj: Resource[Any] | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        build, items = self.operation.build, self.items

        def method(*args: Any, **kwargs: Any) -> Any:
            return obj._client._pages(build(obj, *args, **kwargs), items)

        return _bind(method, build, f"Every item of every page of `{build.__name__}`, its `next` followed.")


class Stream(Generic[P]):
    """A resource method that opens the event stream `operation_id` (SSE, resumed after drops)."""

    def __init__(self, operation_id: str, build: Callable[Concatenate[Any, P], StreamState]) -> None:
        self.operation_id, self.build = operation_id, build

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(self, obj: Resource[Sync], owner: type | None = None) -> Callable[P, EventStream]: ...
    @overload
    def __get__(self, obj: Resource[Async], owner: type | None = None) -> Callable[P, AsyncEventStream]: ...
    def __get__(self, obj: Resource[Any] | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        build = self.build

        def method(*args: Any, **kwargs: Any) -> Any:
            return obj._client._stream(build(obj, *args, **kwargs))

        return _bind(method, build)


def operation(operation_id: str) -> Callable[[Callable[Concatenate[Any, P], Call[T]]], Operation[P, T]]:
    """`@operation("getTable")` on a builder: the method of both clients wrapping that operation."""
    return lambda build: Operation(operation_id, build)


def stream(operation_id: str) -> Callable[[Callable[Concatenate[Any, P], StreamState]], Stream[P]]:
    """`@stream("streamTableEvents")` on a builder of a stream's state."""
    return lambda build: Stream(operation_id, build)


def pages(operation: Operation[P, T], items: Callable[[T], builtins.list[I]]) -> Pages[P, T, I]:
    """`list_all = pages(list, lambda page: page["results"])`: an iterator over every page's items."""
    return Pages(operation, items)


def _bind(method: Callable[..., Any], build: Callable[..., Any], doc: str | None = None) -> Any:
    """`method` with the name, docstring and signature (less `self`) of the builder it runs."""
    functools.update_wrapper(method, build)
    del method.__wrapped__  # type: ignore[attr-defined]
    signature = inspect.signature(build)
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=builtins.list(signature.parameters.values())[1:], return_annotation=inspect.Signature.empty
    )
    if doc is not None:
        method.__doc__ = doc
    return method


def _write(
    path: str,
    body: dict[str, Any] | None = None,
    *,
    method: str = "POST",
    version: int | None = None,
    key: str | None = None,
    restale: bool = False,
) -> Call[Any]:
    """A write: an Idempotency-Key (`key`, or a new one) every retry reuses; If-Match when `version`."""
    return Call(method, path, body=body, write=True, version=version, key=key, restale=restale)


def _given(**values: Any) -> dict[str, Any]:
    """The arguments that were given (not None)."""
    return {k: v for k, v in values.items() if v is not None}


def _query(**values: Any) -> dict[str, str]:
    """Query parameters of the arguments given; booleans as `true` / `false`."""
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in _given(**values).items()}


# -- resources -------------------------------------------------------------------------------------


class Players(Resource[M]):
    """Players and their tokens (tag `players`)."""

    @operation("createGuest")
    def create_guest(self, name: str) -> Call[PlayerToken]:
        """A self-service guest player and its token (no credentials needed)."""
        return _write("guests", {"name": name})

    @operation("createPlayer")
    def create(self, name: str, external_id: str = "") -> Call[PlayerToken]:
        """App key: a player for one of the app's users, and its token."""
        return _write("players", {"name": name, "external_id": external_id})

    @operation("createPlayerToken")
    def create_token(self, player_id: int, *, expires_in: int | None = None) -> Call[Token]:
        """App key: another token of one of the app's players (shown once); with `expires_in`, it
        works that many seconds (then 401 token_expired; `refresh_token` before then)."""
        return _write(f"players/{player_id}/tokens", _given(expires_in=expires_in))

    @operation("refreshToken")
    def refresh_token(self, *, expires_in: int | None = None) -> Call[PlayerToken]:
        """Player token: a new token for the one this client sends, which keeps working a minute
        more (docs/keys.md). Set the answer's `token` on the client (`client.token = ...`)."""
        return _write("tokens/refresh", _given(expires_in=expires_in))

    @operation("revokeToken")
    def revoke_token(self) -> Call[None]:
        """Revoke the token this client sends (its stream tickets stop too)."""
        return _write("tokens/revoke")

    @operation("erasePlayer")
    def erase(self, player_id: int) -> Call[Erased]:
        """App key: erase one of your players (docs/privacy.md#erasure): their tokens stop at
        once, their personal data goes, their games keep the seat under a pseudonym. A repeat
        answers the same."""
        return _write(f"players/{player_id}", method="DELETE")


class MeResource(Resource[M]):
    """Who the credentials belong to (tag `players`)."""

    @operation("getMe")
    def get(self) -> Call[Me]:
        """Who the credentials belong to, and the player's unfinished tables."""
        return Call("GET", "me")

    @operation("listMyTurns")
    def turns(self) -> Call[MyTurns]:
        """The tables where it is your turn (player token), soonest deadline first: each one's
        status, version, your seat, what you owe (pass, play, moon), deadline and clock."""
        return Call("GET", "me/turns")

    @operation("updateMe")
    def update(self, language: str | None) -> Call[Me]:
        """The language of your error details (en, mi, eu, ms, ky), over Accept-Language; None
        (or "") follows Accept-Language again."""
        return _write("me", {"language": language or ""}, method="PATCH")

    @operation("eraseMe")
    def erase(self) -> Call[Erased]:
        """Player token (a guest's too): erase yourself (docs/privacy.md#erasure); this client's
        token stops working at once."""
        return _write("me", method="DELETE")


def _action(table_id: int, action: Action, version: int | None, key: str | None) -> Call[Table]:
    return _write(f"tables/{table_id}/actions", dict(action), version=version, key=key)


class Tables(Resource[M]):
    """Tables: creating, seating, playing, and their history (tags `tables`, `play`, `history`)."""

    @operation("createTable")
    def create(
        self,
        *,
        options: dict[str, Any] | None = None,
        bots: dict[int, SeatLevel] | None = None,
        clocks: dict[str, int | None] | None = None,
        visibility: str | None = None,
        invited: builtins.list[int] | None = None,
        spectator_delay: SpectatorDelay | None = None,
        rated: bool | None = None,
        hints: bool | None = None,
        bot_think_ms: int | None = None,
        bot_pace_ms: int | None = None,
        idempotency_key: str | None = None,
    ) -> Call[Table]:
        """A new table; `bots` seats bots at once ({1: "basic"}); it starts when every seat is taken.
        `visibility` is public (default), unlisted or private; `invited` names players who may join
        a private table without a code; `spectator_delay` ({"seconds": N} or {"tricks": N}) keeps
        spectators that far behind; a `rated` table's game updates its people's ratings; a
        `hints` one lets its seated players ask for hints (never rated; docs/hints.md).
        `bot_think_ms` (10 to 5000) is the time strong and expert bots think per move instead of
        their fixed budgets; `bot_pace_ms` (0 to 2000) the delay before each bot card (left out: the
        server's default, 0 at a bot-only table)."""
        body: dict[str, Any] = {
            "options": options or {},
            "bots": {str(k): v for k, v in (bots or {}).items()},
            "clocks": clocks or {},
        }
        body |= _given(
            visibility=visibility,
            invited=invited,
            spectator_delay=spectator_delay,
            rated=rated,
            hints=hints,
            bot_think_ms=bot_think_ms,
            bot_pace_ms=bot_pace_ms,
        )
        return _write("tables", body, key=idempotency_key)

    @operation("getTable")
    def get(self, table_id: int) -> Call[Table]:
        return Call("GET", f"tables/{table_id}")

    @operation("getTable")
    def get_if_changed(self, table_id: int, version: int) -> Call[Table | None]:
        """The table, or None while it is still at `version` (a 304 to `If-None-Match: W/"<version>"`,
        the table's ETag; no body is sent)."""
        return Call("GET", f"tables/{table_id}", etag=f'W/"{version}"')

    @operation("joinTable")
    def join(
        self,
        table_id: int,
        position: int | None = None,
        *,
        invite: str | None = None,
        version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Call[Table]:
        """Take a seat (the lowest open one without `position`; `invite`: a private table's code);
        a full table starts by itself."""
        body = _given(position=position, invite=invite)
        return _write(f"tables/{table_id}/join", body, version=version, key=idempotency_key, restale=True)

    @operation("leaveTable")
    def leave(
        self, table_id: int, *, version: int | None = None, idempotency_key: str | None = None
    ) -> Call[Table]:
        return _write(f"tables/{table_id}/leave", {}, version=version, key=idempotency_key, restale=True)

    @operation("addBot")
    def add_bot(
        self,
        table_id: int,
        level: SeatLevel = "basic",
        position: int | None = None,
        *,
        version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Call[Table]:
        body = {"level": level} | _given(position=position)
        return _write(f"tables/{table_id}/bots", body, version=version, key=idempotency_key, restale=True)

    @operation("startTable")
    def start(
        self,
        table_id: int,
        fill_with: SeatLevel = "basic",
        *,
        version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Call[Table]:
        """Start now, with bots of level `fill_with` in the open seats."""
        body = {"fill_with": fill_with}
        return _write(f"tables/{table_id}/start", body, version=version, key=idempotency_key, restale=True)

    @operation("abandonTable")
    def abandon(
        self, table_id: int, *, version: int | None = None, idempotency_key: str | None = None
    ) -> Call[Table]:
        """App key: close an unfinished table for good."""
        return _write(f"tables/{table_id}/abandon", {}, version=version, key=idempotency_key, restale=True)

    @operation("restoreTable")
    def restore(self, table_id: int) -> Call[Table]:
        """App key: bring an archived table of yours back into the database (docs/data.md#restoring);
        an archived table answers its export, transcript and hands without it."""
        return _write(f"tables/{table_id}/restore")

    @operation("reclaimSeat")
    def reclaim_seat(self, table_id: int, *, idempotency_key: str | None = None) -> Call[Table]:
        """ "I'm back": a seat marked away is yours again."""
        return _write(f"tables/{table_id}/back", {}, key=idempotency_key)

    @operation("requestRematch")
    def rematch(self, table_id: int, *, idempotency_key: str | None = None) -> Call[Table]:
        """After a finished game: ask for a rematch, or accept the one asked for. When every person
        has, the answer's `rematch["table"]` is the new table (seats moved one place on)."""
        return _write(f"tables/{table_id}/rematch", {}, key=idempotency_key)

    @operation("submitAction")
    def act(
        self, table_id: int, action: Action, *, version: int | None = None, idempotency_key: str | None = None
    ) -> Call[Table]:
        """Your seat's action on the table as of `version`. A 409 `stale_version` is raised, never
        retried: decide again on what the table shows now (`StaleVersion.version`)."""
        return _action(table_id, action, version, idempotency_key)

    @operation("submitAction")
    def pass_cards(
        self,
        table_id: int,
        cards: builtins.list[str],
        *,
        version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Call[Table]:
        return _action(table_id, {"type": "pass", "cards": cards}, version, idempotency_key)

    @operation("submitAction")
    def play(
        self, table_id: int, card: str, *, version: int | None = None, idempotency_key: str | None = None
    ) -> Call[Table]:
        return _action(table_id, {"type": "play", "card": card}, version, idempotency_key)

    @operation("submitAction")
    def choose_moon(
        self,
        table_id: int,
        choice: MoonChoice,
        *,
        version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Call[Table]:
        return _action(table_id, {"type": "moon", "choice": choice}, version, idempotency_key)

    @operation("getScoresheet")
    def scoresheet(self, table_id: int) -> Call[Scoresheet]:
        return Call("GET", f"tables/{table_id}/scoresheet")

    @operation("listTableEvents")
    def events(self, table_id: int, after: int = 0) -> Call[dict[str, Any]]:
        """The events after sequence `after` (`{"events", "version", "more"}`); poll with after=version."""
        return Call("GET", f"tables/{table_id}/events", params={"after": str(after)})

    @operation("listMoves")
    def moves(self, table_id: int, after: int = 0) -> Call[dict[str, Any]]:
        return Call("GET", f"tables/{table_id}/moves", params={"after": str(after)})

    @operation("getTableHint")
    def hint(self, table_id: int, *, level: str | None = None) -> Call[Hint]:
        """On your turn at a table created with hints: the move the bot `level` (basic, strong,
        expert; default strong) would make and every legal action's estimated points for the rest
        of the hand, from your seat's view only (422 `hints_not_allowed` with `reason` off, rated
        or tournament; docs/hints.md). A 503 while it is computed is retried after its Retry-After."""
        return Call("GET", f"tables/{table_id}/hint", params=_query(level=level))

    @operation("getHandReview")
    def review(
        self, table_id: int, hand: int, *, seat: int | None = None, level: str | None = None
    ) -> Call[HandReview]:
        """Hand `hand` reviewed for `seat` (default: yours): per trick your card, a bot's card from
        the same view and the estimated points lost, and your pass. Your own seat once the hand is
        over; every seat once the game is over (422 `review_not_allowed` otherwise). A 503 while
        it is computed is retried after its Retry-After."""
        return Call("GET", f"tables/{table_id}/hands/{hand}/review", params=_query(seat=seat, level=level))

    @operation("exportGame")
    def export(self, table_id: int) -> Call[GameExport]:
        """A finished game's whole document: options, seats, every hand's record and every move
        (422 `not_finished` before the end)."""
        return Call("GET", f"tables/{table_id}/export")

    @operation("getTranscript")
    def transcript(self, table_id: int) -> Call[str]:
        """A finished game as plain text, for people."""
        return Call("GET", f"tables/{table_id}/transcript", text=True)

    @operation("listTables")
    def list(
        self,
        *,
        status: str | None = None,
        open_seats: bool | None = None,
        mine: bool | None = None,
        cursor: str | None = None,
    ) -> Call[TablePage]:
        """One page of tables (`next` names the following page's address)."""
        return Call(
            "GET", "tables", params=_query(status=status, open_seats=open_seats, mine=mine, cursor=cursor)
        )

    list_all = pages(list, lambda page: page["results"])


class Hands(Resource[M]):
    """A table's hands: each deal's commitment, and once over its seed and record (tag `history`)."""

    @operation("listHands")
    def list(self, table_id: int) -> Call[builtins.list[Hand]]:
        return Call("GET", f"tables/{table_id}/hands", unwrap="hands")

    @operation("getHand")
    def get(self, table_id: int, number: int) -> Call[HandReplay]:
        """Hand `number` (from 1) with its moves the caller may see, and its record once over."""
        return Call("GET", f"tables/{table_id}/hands/{number}")


class Invites(Resource[M]):
    """Invite codes of private tables (docs/lobby.md)."""

    @operation("createInvite")
    def create(
        self, table_id: int, *, expires_in: int | None = None, uses: int | None = None
    ) -> Call[dict[str, Any]]:
        """A new invite code of the table (shown once): {code, hint, table, expires_at, uses_left}."""
        return _write(f"tables/{table_id}/invites", _given(expires_in=expires_in, uses=uses))

    @operation("revokeInvite")
    def revoke(self, table_id: int, code: str) -> Call[None]:
        """Refuse this code from now on."""
        return _write(f"tables/{table_id}/invites/{code}", method="DELETE")

    @operation("getInviteTable")
    def get_table(self, code: str) -> Call[Table]:
        """The table a usable code joins, as a spectator sees it."""
        return Call("GET", f"invites/{code}")

    @operation("joinByInvite")
    def join(self, code: str, position: int | None = None) -> Call[Table]:
        """Take a seat at the code's table with the code alone."""
        return _write(f"invites/{code}/join", _given(position=position))

    @operation("listInvites")
    def list(self, table_id: int) -> Call[builtins.list[dict[str, Any]]]:
        """The table's usable codes, by hint (never the codes): the first page, which holds them all
        at the default page size (a table has at most 20); `list_all` follows every page."""
        return Call("GET", f"tables/{table_id}/invites", unwrap="invites")

    @operation("listInvites")
    def page(self, table_id: int, *, cursor: str | None = None) -> Call[InvitePage]:
        """One page of the table's usable codes, oldest first (`next` names the following page)."""
        return Call("GET", f"tables/{table_id}/invites", params=_query(cursor=cursor))

    list_all = pages(page, lambda page: page["invites"])


class QuickPlay(Resource[M]):
    """The quick-play queue (docs/lobby.md)."""

    @operation("quickPlay")
    def join(
        self,
        *,
        options: dict[str, Any] | None = None,
        clocks: dict[str, int | None] | None = None,
        bot_level: SeatLevel | None = "basic",
        wait_seconds: int = 20,
        idempotency_key: str | None = None,
    ) -> Call[Table]:
        """A seat at a waiting table with these criteria, or a new one; after `wait_seconds` bots of
        `bot_level` fill the open seats (None: the table closes)."""
        body = {
            "options": options or {},
            "clocks": clocks or {},
            "bot_level": bot_level,
            "wait_seconds": wait_seconds,
        }
        return _write("quick-play", body, key=idempotency_key)

    @operation("getQuickPlay")
    def get(self) -> Call[Table | None]:
        """The table where you wait in quick play, or None."""
        return Call("GET", "quick-play", none_on="not_waiting")

    @operation("leaveQuickPlay")
    def leave(self, *, idempotency_key: str | None = None) -> Call[Table]:
        """Leave the quick-play queue (404 `not_waiting` when you are not in it)."""
        return _write("quick-play", method="DELETE", key=idempotency_key)


class Streams(Resource[M]):
    """Event streams and their tickets (tag `streams`; docs/streams.md)."""

    @stream("streamTableEvents")
    def table(self, table_id: int, *, last_event_id: str | None = None) -> StreamState:
        """A table's events, resumed after `last_event_id` when given; it ends after `table_finished`."""
        return StreamState(f"tables/{table_id}/stream", self._client.retry, last_event_id)

    @stream("streamMyEvents")
    def mine(self, *, last_event_id: str | None = None) -> StreamState:
        """Player token: your events at all your tables, resumed after `last_event_id` when given."""
        return StreamState("me/stream", self._client.retry, last_event_id, table_stream=False)

    @operation("createTableStreamTicket")
    def table_ticket(self, table_id: int) -> Call[StreamTicket]:
        """A 60-second ticket that opens the table's stream for a client that cannot send
        `Authorization`, such as a browser's EventSource: hand it `url`. (This client's own streams
        send the header and need none.)"""
        return _write(f"tables/{table_id}/stream-tickets", {})

    @operation("createPlayerStreamTicket")
    def my_ticket(self) -> Call[StreamTicket]:
        """Player token: a 60-second ticket that opens your own stream (all your tables)."""
        return _write("me/stream-tickets", {})


class Ratings(Resource[M]):
    """Ratings and leaderboards (docs/ratings.md)."""

    @operation("getRatingSystem")
    def system(self) -> Call[RatingSystem]:
        """The rating model, the families and the bots' published ratings."""
        return Call("GET", "ratings")

    @operation("getPlayerRatings")
    def player(self, player_id: int) -> Call[PlayerRatings]:
        """A player's rating in each family they played rated games in."""
        return Call("GET", f"players/{player_id}/ratings")

    @operation("getLeaderboard")
    def leaderboard(self, family: str, *, cursor: str | None = None) -> Call[LeaderboardPage]:
        """A page of your app's leaderboard in one family (like "classic-4"), best score first."""
        return Call("GET", "leaderboard", params=_query(family=family, cursor=cursor))

    @operation("getRatingHistory")
    def history(
        self, player_id: int, *, family: str | None = None, cursor: str | None = None
    ) -> Call[RatingHistoryPage]:
        """A page of a player's rating changes, newest first (of one family, when given)."""
        return Call("GET", f"players/{player_id}/rating-history", params=_query(family=family, cursor=cursor))

    leaderboard_all = pages(leaderboard, lambda page: page["results"])
    history_all = pages(history, lambda page: page["results"])


class Tournaments(Resource[M]):
    """An app's duplicate tournaments (docs/tournaments.md)."""

    @operation("createTournament")
    def create(
        self,
        entrants: builtins.list[dict[str, Any]],
        deal_sets: int,
        *,
        options: dict[str, Any] | None = None,
        clocks: dict[str, int | None] | None = None,
        seed: str | None = None,
        name: str = "",
        idempotency_key: str | None = None,
    ) -> Call[Tournament]:
        """App key: a duplicate tournament, answered at once with status `starting` while a task
        creates and starts its tables (`tables_created`), then `running`. `entrants` are
        {"player": id} or {"bot": level}; `seed` makes the deals those of
        `python -m bots.tournament --seed`."""
        body = {"entrants": entrants, "deal_sets": deal_sets, "name": name}
        body |= _given(options=options, clocks=clocks, seed=seed)
        return _write("tournaments", body, key=idempotency_key)

    @operation("getTournament")
    def get(self, tournament_id: int) -> Call[Tournament]:
        return Call("GET", f"tournaments/{tournament_id}")

    @operation("getTournamentStandings")
    def standings(self, tournament_id: int) -> Call[Standings]:
        """Ranked by points relative to the others who held the same cards, with 95% intervals."""
        return Call("GET", f"tournaments/{tournament_id}/standings")

    @operation("listTournamentTables")
    def tables(self, tournament_id: int) -> Call[builtins.list[TournamentTableRow]]:
        """Its tables so far: ordinary tables (`tables.get`, `streams.table`, `tables.export`)."""
        return Call("GET", f"tournaments/{tournament_id}/tables", unwrap="results")

    @operation("listTournaments")
    def list(self) -> Call[builtins.list[Tournament]]:
        """App key: its newest tournaments, the first page (`list_all` follows every page)."""
        return Call("GET", "tournaments", unwrap="results")

    @operation("listTournaments")
    def page(self, *, cursor: str | None = None) -> Call[TournamentPage]:
        """App key: one page of its tournaments, newest first (`next` names the following page)."""
        return Call("GET", "tournaments", params=_query(cursor=cursor))

    list_all = pages(page, lambda page: page["results"])


class Bots(Resource[M]):
    """Bots an app brings (docs/bots-byo.md)."""

    @operation("registerBot")
    def register(self, name: str, url: str, *, timeout_ms: int | None = None) -> Call[BotEndpointWithSecret]:
        """App key: a bot endpoint that seats name as the level `ext:<name>`; the answer holds its
        signing secret (`whsec_...`), shown this once."""
        return _write("bots", {"name": name, "url": url} | _given(timeout_ms=timeout_ms))

    @operation("getBot")
    def get(self, bot_id: int) -> Call[BotEndpoint]:
        return Call("GET", f"bots/{bot_id}")

    @operation("updateBot")
    def update(
        self,
        bot_id: int,
        *,
        name: str | None = None,
        url: str | None = None,
        timeout_ms: int | None = None,
        enabled: bool | None = None,
    ) -> Call[BotEndpoint]:
        """Change what is given; `enabled=False` stops calling it (its seats' moves fall back)."""
        body = _given(name=name, url=url, timeout_ms=timeout_ms, enabled=enabled)
        return _write(f"bots/{bot_id}", body, method="PATCH")

    @operation("deleteBot")
    def delete(self, bot_id: int) -> Call[None]:
        return _write(f"bots/{bot_id}", method="DELETE")

    @operation("rotateBotSecret")
    def rotate_secret(self, bot_id: int) -> Call[BotEndpointWithSecret]:
        """A new signing secret, shown this once; the old one stops at once."""
        return _write(f"bots/{bot_id}/secret", {})

    @operation("listBots")
    def list(self) -> Call[builtins.list[BotEndpoint]]:
        """App key: your bots with their counters (calls, answered, fallbacks by reason): the first
        page, which holds them all at the default `bots` quota (20); `list_all` follows every page."""
        return Call("GET", "bots", unwrap="results")

    @operation("listBots")
    def page(self, *, cursor: str | None = None) -> Call[BotEndpointPage]:
        """App key: one page of your bots, oldest first (`next` names the following page)."""
        return Call("GET", "bots", params=_query(cursor=cursor))

    list_all = pages(page, lambda page: page["results"])


class Webhooks(Resource[M]):
    """An app's webhook endpoints and their deliveries (docs/webhooks.md)."""

    @operation("createWebhook")
    def create(
        self, url: str, *, event_types: builtins.list[str] | None = None, description: str | None = None
    ) -> Call[WebhookWithSecret]:
        """App key: an endpoint for the public events of `event_types` (default every type, `["*"]`);
        the answer holds its signing secret, shown this once."""
        return _write("webhooks", {"url": url} | _given(event_types=event_types, description=description))

    @operation("getWebhook")
    def get(self, webhook_id: int) -> Call[Webhook]:
        return Call("GET", f"webhooks/{webhook_id}")

    @operation("updateWebhook")
    def update(
        self,
        webhook_id: int,
        *,
        url: str | None = None,
        event_types: builtins.list[str] | None = None,
        description: str | None = None,
        active: bool | None = None,
    ) -> Call[Webhook]:
        """Change what is given; `active=False` makes no new deliveries (pending ones fail)."""
        body = _given(url=url, event_types=event_types, description=description, active=active)
        return _write(f"webhooks/{webhook_id}", body, method="PATCH")

    @operation("deleteWebhook")
    def delete(self, webhook_id: int) -> Call[None]:
        """Delete the endpoint and its deliveries."""
        return _write(f"webhooks/{webhook_id}", method="DELETE")

    @operation("rotateWebhookSecret")
    def rotate_secret(self, webhook_id: int) -> Call[WebhookWithSecret]:
        """A new signing secret, shown this once; the old one stops signing at once."""
        return _write(f"webhooks/{webhook_id}/secret")

    @operation("listDeliveries")
    def deliveries(
        self, webhook_id: int, *, status: DeliveryStatus | None = None, cursor: str | None = None
    ) -> Call[DeliveryPage]:
        """A page of the endpoint's deliveries, newest first (of one `status`, when given)."""
        return Call("GET", f"webhooks/{webhook_id}/deliveries", params=_query(status=status, cursor=cursor))

    @operation("getDelivery")
    def get_delivery(self, webhook_id: int, delivery_id: str) -> Call[DeliveryDetail]:
        """One delivery with its `body` and its latest attempts (`log`)."""
        return Call("GET", f"webhooks/{webhook_id}/deliveries/{delivery_id}")

    @operation("redeliver")
    def redeliver(self, webhook_id: int, delivery_id: str) -> Call[Delivery]:
        """Pending again and due now, with a fresh set of attempts."""
        return _write(f"webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver")

    @operation("listWebhooks")
    def list(self) -> Call[builtins.list[Webhook]]:
        """App key: its endpoints (never their secrets): the first page (`list_all` follows every page)."""
        return Call("GET", "webhooks", unwrap="results")

    @operation("listWebhooks")
    def page(self, *, cursor: str | None = None) -> Call[WebhookPage]:
        """App key: one page of its endpoints, oldest first (`next` names the following page)."""
        return Call("GET", "webhooks", params=_query(cursor=cursor))

    list_all = pages(page, lambda page: page["results"])

    deliveries_all = pages(deliveries, lambda page: page["results"])


def _device(
    kind: DeviceKind,
    token: str,
    keys: WebPushKeys | None,
    topic: str | None,
    label: str | None,
    expires_at: str | None,
) -> dict[str, Any]:
    return {"kind": kind, "token": token} | _given(keys=keys, topic=topic, label=label, expires_at=expires_at)


class Devices(Resource[M]):
    """The phones and browsers a player is pushed to (docs/push.md): a player's own with their token,
    or (the `_for` methods) one of an app's players' with the app key."""

    @operation("registerDevice")
    def register(
        self,
        kind: DeviceKind,
        token: str,
        *,
        keys: WebPushKeys | None = None,
        topic: str | None = None,
        label: str | None = None,
        expires_at: str | None = None,
    ) -> Call[Device]:
        """Player token: a device of yours. `token` is the FCM registration token, the APNs device
        token (hex; `topic`: the bundle id, else the app's) or the Web Push endpoint (with its
        `keys`); `expires_at` (ISO 8601, at most a year ahead) stops its pushes. The same token again
        is the same device, updated (and moved to you if another player had it)."""
        return _write("me/devices", _device(kind, token, keys, topic, label, expires_at))

    @operation("listMyDevices")
    def list(self) -> Call[builtins.list[Device]]:
        """Player token: your devices, oldest first (never their tokens, only `token_hint`): the
        first page (`list_all` follows every page)."""
        return Call("GET", "me/devices", unwrap="results")

    @operation("listMyDevices")
    def page(self, *, cursor: str | None = None) -> Call[DevicePage]:
        """Player token: one page of your devices, oldest first (`next` names the following page)."""
        return Call("GET", "me/devices", params=_query(cursor=cursor))

    list_all = pages(page, lambda page: page["results"])

    @operation("deleteDevice")
    def delete(self, device_id: int) -> Call[None]:
        """Player token: remove one of your devices."""
        return _write(f"me/devices/{device_id}", method="DELETE")

    @operation("registerPlayerDevice")
    def register_for(
        self,
        player_id: int,
        kind: DeviceKind,
        token: str,
        *,
        keys: WebPushKeys | None = None,
        topic: str | None = None,
        label: str | None = None,
        expires_at: str | None = None,
    ) -> Call[Device]:
        """App key: a device of one of your players, as `register` does for a player."""
        return _write(f"players/{player_id}/devices", _device(kind, token, keys, topic, label, expires_at))

    @operation("listPlayerDevices")
    def list_for(self, player_id: int) -> Call[builtins.list[Device]]:
        """App key: one of your players' devices: the first page (`list_all_for` follows every page)."""
        return Call("GET", f"players/{player_id}/devices", unwrap="results")

    @operation("listPlayerDevices")
    def page_for(self, player_id: int, *, cursor: str | None = None) -> Call[DevicePage]:
        """App key: one page of one of your players' devices, oldest first."""
        return Call("GET", f"players/{player_id}/devices", params=_query(cursor=cursor))

    list_all_for = pages(page_for, lambda page: page["results"])

    @operation("deletePlayerDevice")
    def delete_for(self, player_id: int, device_id: int) -> Call[None]:
        """App key: remove a device of one of your players."""
        return _write(f"players/{player_id}/devices/{device_id}", method="DELETE")


class Push(Resource[M]):
    """An app's push credentials (FCM, APNs) and the VAPID key browsers subscribe with (docs/push.md)."""

    @operation("getPushSettings")
    def get_settings(self) -> Call[PushSettings]:
        """App key: your FCM and APNs keys' public fields (None: not set) and your VAPID key."""
        return Call("GET", "app/push")

    @operation("setFcmCredential")
    def set_fcm(self, service_account: dict[str, Any]) -> Call[PushSettings]:
        """App key: your FCM service account, the JSON key file's object as Google's console
        downloads it (`json.load(file)`); its private key is stored encrypted, never shown again."""
        return _write("app/push/fcm", {"service_account": service_account}, method="PUT")

    @operation("setApnsCredential")
    def set_apns(
        self, key_id: str, team_id: str, topic: str, private_key: str, *, sandbox: bool = False
    ) -> Call[PushSettings]:
        """App key: your APNs token key: the .p8 file's text, its key id, your team id, and the bundle
        id pushes go to; `sandbox` for APNs's development server."""
        body = {
            "key_id": key_id,
            "team_id": team_id,
            "topic": topic,
            "private_key": private_key,
            "sandbox": sandbox,
        }
        return _write("app/push/apns", body, method="PUT")

    @operation("deleteFcmCredential")
    def delete_fcm(self) -> Call[None]:
        """App key: remove your FCM service account."""
        return _write("app/push/fcm", method="DELETE")

    @operation("deleteApnsCredential")
    def delete_apns(self) -> Call[None]:
        """App key: remove your APNs key."""
        return _write("app/push/apns", method="DELETE")

    def delete(self, provider: str) -> Any:
        """App key: remove your `fcm` or `apns` credential: `delete_fcm()` or `delete_apns()` (on
        `AsyncHeartsClient`, a coroutine to await)."""
        resource: Any = self  # a Resource[Sync] or a Resource[Async]: the method's answer is its mode's
        if provider == "fcm":
            return resource.delete_fcm()
        if provider == "apns":
            return resource.delete_apns()
        raise ValueError(f"provider is fcm or apns, not {provider!r}")

    @operation("getVapidKey")
    def vapid_key(self) -> Call[VapidKey]:
        """The VAPID public key to subscribe a browser with (PushManager.subscribe's
        applicationServerKey): your app's, or the service's own for a guest (no credentials needed)."""
        return Call("GET", "push/vapid-key")


class Exports(Resource[M]):
    """A player's data export (tag `privacy`, docs/privacy.md#export)."""

    @operation("createMyExport")
    def create_my_export(self) -> Call[ExportJob]:
        """Player token: an export of all your data; `done` at once for a player of few tables,
        else `pending` (read it with `get_export` until done). One a minute per player."""
        return _write("me/exports")

    @operation("createPlayerExport")
    def create_player_export(self, player_id: int) -> Call[ExportJob]:
        """App key: an export of one of your players' data, as `create_my_export` makes it."""
        return _write(f"players/{player_id}/exports")

    @operation("getExport")
    def get_export(self, export_id: str) -> Call[ExportJob]:
        """An export job (its player's token or their app's key)."""
        return Call("GET", f"exports/{export_id}")

    @operation("downloadExport")
    def download_export(self, export_id: str) -> Call[dict[str, Any]]:
        """A done export's document, parsed (format `hearts-player-export/1`)."""
        return Call("GET", f"exports/{export_id}/document")

    @operation("getExportSchema")
    def schema(self) -> Call[dict[str, Any]]:
        """The JSON Schema of the export document (no credentials needed)."""
        return Call("GET", "exports/schema")


class AppResource(Resource[M]):
    """The calling app's own settings (tag `apps`, docs/data.md#archives-and-retention)."""

    @operation("getApp")
    def get(self) -> Call[AppSettings]:
        """App key: your app's settings."""
        return Call("GET", "app")

    @operation("updateApp")
    def update(self, *, retention_days: int | None) -> Call[AppSettings]:
        """App key: how many days your finished tables stay in the database before they move to
        the archive, where they still export and verify (None: the service's default)."""
        return _write("app", {"retention_days": retention_days}, method="PATCH")

    @operation("listAuditEntries")
    def audit(self, *, cursor: str | None = None) -> Call[AuditPage]:
        """App key: a page of your app's configuration changes, newest first (docs/audit.md)."""
        return Call("GET", "app/audit", params=_query(cursor=cursor))

    audit_all = pages(audit, lambda page: page["results"])


class Keys(Resource[M]):
    """The app's API keys (tag `apps`, docs/keys.md): each with scopes; rotated with an overlap."""

    @operation("createApiKey")
    def create(
        self, scopes: builtins.list[str], *, name: str = "", expires_at: str | None = None
    ) -> Call[ApiKeyWithSecret]:
        """App key (keys:write): a new key with `scopes` (at most the calling key's); its `secret`
        is in this answer only."""
        return _write("app/keys", {"scopes": scopes, "name": name} | _given(expires_at=expires_at))

    @operation("revokeApiKey")
    def revoke(self, key_id: int) -> Call[ApiKey]:
        """App key (keys:write): the key stops working at once."""
        return _write(f"app/keys/{key_id}/revoke")

    @operation("rotateApiKey")
    def rotate(self, key_id: int, *, overlap_seconds: int | None = None) -> Call[RotatedApiKey]:
        """App key (keys:write): a new key with the same name and scopes; the old one works for
        `overlap_seconds` more (default a day), then expires. Switch `client.token` to the new
        `secret` before then."""
        return _write(f"app/keys/{key_id}/rotate", _given(overlap_seconds=overlap_seconds))

    @operation("listApiKeys")
    def list(self) -> Call[builtins.list[ApiKey]]:
        """App key (keys:read): the first page of your keys, newest first (never their secrets)."""
        return Call("GET", "app/keys", unwrap="results")

    @operation("listApiKeys")
    def page(self, *, cursor: str | None = None) -> Call[ApiKeyPage]:
        """App key (keys:read): one page of your keys (`next` names the following page)."""
        return Call("GET", "app/keys", params=_query(cursor=cursor))

    list_all = pages(page, lambda page: page["results"])


class ClientResources(Generic[M]):
    """The resources of a client, one attribute each: `client.tables.join(...)`."""

    players: Players[M]
    me: MeResource[M]
    tables: Tables[M]
    hands: Hands[M]
    invites: Invites[M]
    quick_play: QuickPlay[M]
    streams: Streams[M]
    ratings: Ratings[M]
    tournaments: Tournaments[M]
    bots: Bots[M]
    webhooks: Webhooks[M]
    devices: Devices[M]
    push: Push[M]
    exports: Exports[M]
    app: AppResource[M]
    keys: Keys[M]

    def _attach_resources(self) -> None:
        for name, kind in RESOURCES.items():
            setattr(self, name, kind(self))


RESOURCES: dict[str, type[Resource[Any]]] = {
    "players": Players,
    "me": MeResource,
    "tables": Tables,
    "hands": Hands,
    "invites": Invites,
    "quick_play": QuickPlay,
    "streams": Streams,
    "ratings": Ratings,
    "tournaments": Tournaments,
    "bots": Bots,
    "webhooks": Webhooks,
    "devices": Devices,
    "push": Push,
    "exports": Exports,
    "app": AppResource,
    "keys": Keys,
}


def operations(client: ClientResources[Any]) -> dict[str, builtins.list[str]]:
    """Every operationId the client wraps, with the methods (`tables.join`) that wrap it."""
    wrapped: dict[str, builtins.list[str]] = {}
    for name in RESOURCES:
        resource = type(getattr(client, name))
        for attribute, value in vars(resource).items():
            if isinstance(value, Operation | Pages | Stream):
                wrapped.setdefault(value.operation_id, []).append(f"{name}.{attribute}")
    return wrapped


__all__ = [
    "RESOURCES",
    "Async",
    "ClientResources",
    "Operation",
    "Pages",
    "Resource",
    "Stream",
    "Sync",
    "operations",
]
