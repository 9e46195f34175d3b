"""The synchronous client, `HeartsClient`, on httpx: REST calls of a player or an app, and event streams."""

from __future__ import annotations

import time
from collections.abc import Generator
from types import TracebackType
from typing import Any, cast

import httpx
from httpx_sse import EventSource

from hearts_client._core import (
    STREAM_DROPS,
    STREAM_TIMEOUT,
    USER_AGENT,
    Call,
    Done,
    Retry,
    StreamState,
    deprecated_alias,
    renamed_warning,
)
from hearts_client._socket import socket_url
from hearts_client.errors import NotFound
from hearts_client.models import (
    Action,
    BotEndpoint,
    BotEndpointWithSecret,
    Event,
    GameExport,
    LeaderboardPage,
    Me,
    MoonChoice,
    PlayerRatings,
    PlayerToken,
    RatingHistoryPage,
    RatingSystem,
    Scoresheet,
    SeatLevel,
    SpectatorDelay,
    Standings,
    StreamTicket,
    Table,
    TablePage,
    Tournament,
    TournamentTableRow,
)
from hearts_client.socket import Socket


def api_base(base_url: str) -> str:
    """`http://host:8000` or `http://host:8000/api/v1`: the API's root either way."""
    base = base_url.rstrip("/")
    return base if base.endswith("/api/v1") else base + "/api/v1"


class HeartsClient:
    """A player's (player token) or an app's (API key) client of the REST API.

    Writes send an `Idempotency-Key` (pass `idempotency_key=` to choose it; a new one per call
    otherwise, reused by that call's retries) and `If-Match` when given a `version`. Failures are
    retried as `Retry` says; refusals raise `HeartsError` subclasses with the API's `code`.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        retry: Retry | None = None,
        timeout: float = 30.0,
        http: httpx.Client | None = None,
    ) -> None:
        self.retry = retry or Retry()
        self.token = token
        self._own = http is None
        self._http = http or httpx.Client(timeout=timeout)
        self._http.base_url = httpx.URL(api_base(base_url) + "/")
        self._http.headers["User-Agent"] = USER_AGENT
        if token:
            self._http.headers["Authorization"] = f"Bearer {token}"

    @classmethod
    def as_guest(cls, base_url: str, name: str, **kwargs: Any) -> HeartsClient:
        """A client with the token of a new guest player."""
        client = cls(base_url, **kwargs)
        client.use_token(client.create_guest(name)["token"])
        return client

    def use_token(self, token: str) -> None:
        self.token = token
        self._http.headers["Authorization"] = f"Bearer {token}"

    def close(self) -> None:
        if self._own:
            self._http.close()

    def __enter__(self) -> HeartsClient:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    # -- the calls -----------------------------------------------------------------------------

    def _run(self, call: Call) -> Any:
        call.path = call.path.lstrip("/")
        while True:
            try:
                response = self._http.send(call.request(self._http))
            except httpx.TransportError as exc:
                step: Done | float = call.failed(exc)
            else:
                step = call.answered(response)
            if isinstance(step, Done):
                return step.value
            time.sleep(step)

    def _write(self, path: str, body: dict[str, Any], **kwargs: Any) -> Any:
        return self._run(Call("POST", path, self.retry, body=body, write=True, **kwargs))

    def create_guest(self, name: str) -> PlayerToken:
        """A self-service guest player and its token (no credentials needed)."""
        return cast(PlayerToken, self._write("guests", {"name": name}))

    def create_player(self, name: str, external_id: str = "") -> PlayerToken:
        """App key: a player for one of the app's users, and its token."""
        return cast(PlayerToken, self._write("players", {"name": name, "external_id": external_id}))

    def create_table(
        self,
        *,
        options: dict[str, Any] | None = None,
        bots: dict[int, SeatLevel] | None = None,
        clocks: dict[str, int | None] | None = None,
        visibility: str | None = None,
        invited: list[int] | None = None,
        spectator_delay: SpectatorDelay | None = None,
        rated: bool | None = None,
        bot_think_ms: int | None = None,
        bot_pace_ms: int | None = None,
        idempotency_key: str | None = None,
    ) -> Table:
        """A new table; `bots` seats bots at once ({1: "basic"}); it starts when every seat is taken.
        `visibility` is public (default), unlisted or private; `invited` names players who may join
        a private table without a code; `spectator_delay` ({"seconds": N} or {"tricks": N}) keeps
        spectators that far behind; a `rated` table's game updates its people's ratings.
        `bot_think_ms` (10 to 5000) is the time strong and expert
        bots think per move instead of their fixed budgets; `bot_pace_ms` (0 to 2000) the delay
        before each bot card (left out: the server's default, 0 at a bot-only table)."""
        body: dict[str, Any] = {
            "options": options or {},
            "bots": {str(k): v for k, v in (bots or {}).items()},
        }
        body["clocks"] = clocks or {}
        if visibility is not None:
            body["visibility"] = visibility
        if invited is not None:
            body["invited"] = invited
        if spectator_delay is not None:  # {"seconds": N} or {"tricks": N}
            body["spectator_delay"] = spectator_delay
        if rated is not None:  # its finished game updates its people's ratings (docs/ratings.md)
            body["rated"] = rated
        if bot_think_ms is not None:  # 10 to 5000 ms per move; none: the bots' fixed budgets
            body["bot_think_ms"] = bot_think_ms
        if bot_pace_ms is not None:  # 0 to 2000 ms before each bot card; none: the server's default
            body["bot_pace_ms"] = bot_pace_ms
        return cast(Table, self._write("tables", body, key=idempotency_key))

    def create_invite(
        self, table_id: int, *, expires_in: int | None = None, uses: int | None = None
    ) -> dict[str, Any]:
        """A new invite code of the table (shown once): {code, hint, table, expires_at, uses_left}."""
        body = {k: v for k, v in (("expires_in", expires_in), ("uses", uses)) if v is not None}
        return cast(dict[str, Any], self._write(f"tables/{table_id}/invites", body))

    def list_invites(self, table_id: int) -> list[dict[str, Any]]:
        """The table's usable codes, by hint (never the codes)."""
        answer = self._run(Call("GET", f"tables/{table_id}/invites", self.retry))
        return cast(list[dict[str, Any]], answer["invites"])

    def revoke_invite(self, table_id: int, code: str) -> None:
        """Refuse this code from now on."""
        self._run(Call("DELETE", f"tables/{table_id}/invites/{code}", self.retry, write=True))

    def create_tournament(
        self,
        entrants: list[dict[str, Any]],
        deal_sets: int,
        *,
        options: dict[str, Any] | None = None,
        clocks: dict[str, int | None] | None = None,
        seed: str | None = None,
        name: str = "",
        idempotency_key: str | None = None,
    ) -> Tournament:
        """App key: a duplicate tournament, its tables started. `entrants` are {"player": id} or
        {"bot": level}; `seed` makes the deals those of `python -m bots.tournament --seed`."""
        body: dict[str, Any] = {"entrants": entrants, "deal_sets": deal_sets, "name": name}
        for field, value in (("options", options), ("clocks", clocks), ("seed", seed)):
            if value is not None:
                body[field] = value
        return cast(Tournament, self._write("tournaments", body, key=idempotency_key))

    def list_tournaments(self) -> list[Tournament]:
        """App key: its tournaments, newest first."""
        return cast(list[Tournament], self._run(Call("GET", "tournaments", self.retry))["results"])

    def get_tournament(self, tournament_id: int) -> Tournament:
        return cast(Tournament, self._run(Call("GET", f"tournaments/{tournament_id}", self.retry)))

    def get_tournament_standings(self, tournament_id: int) -> Standings:
        """Ranked by points relative to the others who held the same cards, with 95% intervals."""
        return cast(Standings, self._run(Call("GET", f"tournaments/{tournament_id}/standings", self.retry)))

    def list_tournament_tables(self, tournament_id: int) -> list[TournamentTableRow]:
        """Its tables so far: ordinary tables (`get_table`, `stream`, `export`)."""
        answer = self._run(Call("GET", f"tournaments/{tournament_id}/tables", self.retry))
        return cast(list[TournamentTableRow], answer["results"])

    def get_invite_table(self, code: str) -> Table:
        """The table a usable code joins, as a spectator sees it."""
        return cast(Table, self._run(Call("GET", f"invites/{code}", self.retry)))

    def join_by_invite(self, code: str, position: int | None = None) -> Table:
        """Take a seat at the code's table with the code alone."""
        body = {} if position is None else {"position": position}
        return cast(Table, self._write(f"invites/{code}/join", body))

    def update_me(self, language: str | None) -> Me:
        """The language of your error details (en, mi, eu, ms, ky), over Accept-Language; None
        (or "") follows Accept-Language again."""
        body = {"language": language or ""}
        return cast(Me, self._run(Call("PATCH", "me", self.retry, body=body, write=True)))

    # -- bots the app brings (docs/bots-byo.md) ------------------------------------------------

    def register_bot(self, name: str, url: str, *, timeout_ms: int | None = None) -> BotEndpointWithSecret:
        """App key: a bot endpoint that seats name as the level `ext:<name>`; the answer holds
        its signing secret (`whsec_...`), shown this once."""
        body: dict[str, Any] = {"name": name, "url": url}
        if timeout_ms is not None:
            body["timeout_ms"] = timeout_ms
        return cast(BotEndpointWithSecret, self._write("bots", body))

    def list_bots(self) -> list[BotEndpoint]:
        """App key: your bots with their counters (calls, answered, fallbacks by reason)."""
        return cast(list[BotEndpoint], (self._run(Call("GET", "bots", self.retry)))["results"])

    def get_bot(self, bot_id: int) -> BotEndpoint:
        return cast(BotEndpoint, self._run(Call("GET", f"bots/{bot_id}", self.retry)))

    def update_bot(
        self,
        bot_id: int,
        *,
        name: str | None = None,
        url: str | None = None,
        timeout_ms: int | None = None,
        enabled: bool | None = None,
    ) -> BotEndpoint:
        """Change what is given; `enabled=False` stops calling it (its seats' moves fall back)."""
        changes = {"name": name, "url": url, "timeout_ms": timeout_ms, "enabled": enabled}
        body = {k: v for k, v in changes.items() if v is not None}
        return cast(
            BotEndpoint, self._run(Call("PATCH", f"bots/{bot_id}", self.retry, body=body, write=True))
        )

    def delete_bot(self, bot_id: int) -> None:
        self._run(Call("DELETE", f"bots/{bot_id}", self.retry, write=True))

    def rotate_bot_secret(self, bot_id: int) -> BotEndpointWithSecret:
        """A new signing secret, shown this once; the old one stops at once."""
        return cast(BotEndpointWithSecret, self._write(f"bots/{bot_id}/secret", {}))

    def list_tables(
        self,
        *,
        status: str | None = None,
        open_seats: bool | None = None,
        mine: bool | None = None,
        cursor: str | None = None,
    ) -> TablePage:
        params = {
            k: str(v).lower()
            for k, v in [("status", status), ("open_seats", open_seats), ("mine", mine)]
            if v is not None
        }
        if cursor:
            params["cursor"] = cursor
        return cast(TablePage, self._run(Call("GET", "tables", self.retry, params=params)))

    def get_rating_system(self) -> RatingSystem:
        """The rating model, the families and the bots' published ratings."""
        return cast(RatingSystem, self._run(Call("GET", "ratings", self.retry)))

    def get_leaderboard(self, family: str, *, cursor: str | None = None) -> LeaderboardPage:
        """A page of your app's leaderboard in one family (like "classic-4"), best score first."""
        params = {"family": family, **({"cursor": cursor} if cursor else {})}
        return cast(LeaderboardPage, self._run(Call("GET", "leaderboard", self.retry, params=params)))

    def get_player_ratings(self, player_id: int) -> PlayerRatings:
        """A player's rating in each family they played rated games in."""
        return cast(PlayerRatings, self._run(Call("GET", f"players/{player_id}/ratings", self.retry)))

    def get_rating_history(
        self, player_id: int, *, family: str | None = None, cursor: str | None = None
    ) -> RatingHistoryPage:
        """A page of a player's rating changes, newest first (of one family, when given)."""
        params = {k: v for k, v in (("family", family), ("cursor", cursor)) if v}
        call = Call("GET", f"players/{player_id}/rating-history", self.retry, params=params)
        return cast(RatingHistoryPage, self._run(call))

    def get_table(self, table_id: int) -> Table:
        return cast(Table, self._run(Call("GET", f"tables/{table_id}", self.retry)))

    def get_table_if_changed(self, table_id: int, version: int) -> Table | None:
        """The table, or None while it is still at `version` (a 304 to `If-None-Match: W/"<version>"`,
        the table's ETag; no body is sent)."""
        call = Call("GET", f"tables/{table_id}", self.retry, etag=f'W/"{version}"')
        return cast(Table | None, self._run(call))

    def export_game(self, table_id: int) -> GameExport:
        """A finished game's whole document: options, seats, every hand's record and every move
        (422 `not_finished` before the end)."""
        return cast(GameExport, self._run(Call("GET", f"tables/{table_id}/export", self.retry)))

    def get_transcript(self, table_id: int) -> str:
        """A finished game as plain text, for people."""
        return cast(str, self._run(Call("GET", f"tables/{table_id}/transcript", self.retry, text=True)))

    def get_me(self) -> Me:
        """Who the credentials belong to, and the player's unfinished tables."""
        return cast(Me, self._run(Call("GET", "me", self.retry)))

    def create_table_stream_ticket(self, table_id: int) -> StreamTicket:
        """A 60-second ticket that opens the table's stream for a client that cannot send
        `Authorization`, such as a browser's EventSource: hand it `url`. (This client's own streams
        send the header and need none.)"""
        return cast(StreamTicket, self._write(f"tables/{table_id}/stream-tickets", {}))

    def create_player_stream_ticket(self) -> StreamTicket:
        """Player token: a 60-second ticket that opens your own stream (all your tables)."""
        return cast(StreamTicket, self._write("me/stream-tickets", {}))

    def stream_ticket(self, table_id: int | None = None) -> StreamTicket:
        """Deprecated: `create_table_stream_ticket` or, without `table_id`,
        `create_player_stream_ticket` (kept until 2027-06-01)."""
        renamed_warning("stream_ticket", "create_table_stream_ticket or create_player_stream_ticket")
        if table_id is None:
            return self.create_player_stream_ticket()
        return self.create_table_stream_ticket(table_id)

    def join_table(
        self,
        table_id: int,
        position: int | None = None,
        *,
        invite: str | None = None,
        version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Table:
        """Take a seat (the lowest open one without `position`); a full table starts by itself."""
        body: dict[str, Any] = {} if position is None else {"position": position}
        if invite is not None:  # a private table's invite code
            body["invite"] = invite
        return cast(
            Table,
            self._write(f"tables/{table_id}/join", body, version=version, key=idempotency_key, restale=True),
        )

    def leave_table(
        self, table_id: int, *, version: int | None = None, idempotency_key: str | None = None
    ) -> Table:
        return cast(
            Table,
            self._write(f"tables/{table_id}/leave", {}, version=version, key=idempotency_key, restale=True),
        )

    def add_bot(
        self,
        table_id: int,
        level: SeatLevel = "basic",
        position: int | None = None,
        *,
        version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Table:
        body: dict[str, Any] = {"level": level} | ({} if position is None else {"position": position})
        return cast(
            Table,
            self._write(f"tables/{table_id}/bots", body, version=version, key=idempotency_key, restale=True),
        )

    def start_table(
        self,
        table_id: int,
        fill_with: SeatLevel = "basic",
        *,
        version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Table:
        """Start now, with bots of level `fill_with` in the open seats."""
        return cast(
            Table,
            self._write(
                f"tables/{table_id}/start",
                {"fill_with": fill_with},
                version=version,
                key=idempotency_key,
                restale=True,
            ),
        )

    def abandon_table(
        self, table_id: int, *, version: int | None = None, idempotency_key: str | None = None
    ) -> Table:
        """App key: close an unfinished table for good."""
        return cast(
            Table,
            self._write(f"tables/{table_id}/abandon", {}, version=version, key=idempotency_key, restale=True),
        )

    def reclaim_seat(self, table_id: int, *, idempotency_key: str | None = None) -> Table:
        """ "I'm back": a seat marked away is yours again."""
        return cast(Table, self._write(f"tables/{table_id}/back", {}, key=idempotency_key))

    def request_rematch(self, table_id: int, *, idempotency_key: str | None = None) -> Table:
        """After a finished game: ask for a rematch, or accept the one asked for. When every person
        has, the answer's `rematch["table"]` is the new table (seats moved one place on)."""
        return cast(Table, self._write(f"tables/{table_id}/rematch", {}, key=idempotency_key))

    def quick_play(
        self,
        *,
        options: dict[str, Any] | None = None,
        clocks: dict[str, int | None] | None = None,
        bot_level: SeatLevel | None = "basic",
        wait_seconds: int = 20,
        idempotency_key: str | None = None,
    ) -> Table:
        """A seat at a waiting table with these criteria, or a new one; after `wait_seconds` bots of
        `bot_level` fill the open seats (None: the table closes). Follow it with `stream`."""
        body = {
            "options": options or {},
            "clocks": clocks or {},
            "bot_level": bot_level,
            "wait_seconds": wait_seconds,
        }
        return cast(Table, self._write("quick-play", body, key=idempotency_key))

    def get_quick_play(self) -> Table | None:
        """The table where you wait in quick play, or None."""
        try:
            return cast(Table, self._run(Call("GET", "quick-play", self.retry)))
        except NotFound:
            return None

    def leave_quick_play(self, *, idempotency_key: str | None = None) -> Table:
        """Leave the quick-play queue (404 `not_waiting` when you are not in it)."""
        return cast(
            Table, self._run(Call("DELETE", "quick-play", self.retry, write=True, key=idempotency_key))
        )

    def submit_action(
        self, table_id: int, action: Action, *, version: int | None = None, idempotency_key: str | None = None
    ) -> Table:
        """Your seat's action on the table as of `version`. A 409 `stale_version` is raised, never
        retried: decide again on what the table shows now (`StaleVersion.version`)."""
        return cast(
            Table,
            self._write(f"tables/{table_id}/actions", dict(action), version=version, key=idempotency_key),
        )

    def pass_cards(
        self,
        table_id: int,
        cards: list[str],
        *,
        version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Table:
        return self.submit_action(
            table_id, {"type": "pass", "cards": cards}, version=version, idempotency_key=idempotency_key
        )

    def play(
        self, table_id: int, card: str, *, version: int | None = None, idempotency_key: str | None = None
    ) -> Table:
        return self.submit_action(
            table_id, {"type": "play", "card": card}, version=version, idempotency_key=idempotency_key
        )

    def choose_moon(
        self,
        table_id: int,
        choice: MoonChoice,
        *,
        version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Table:
        return self.submit_action(
            table_id, {"type": "moon", "choice": choice}, version=version, idempotency_key=idempotency_key
        )

    def get_scoresheet(self, table_id: int) -> Scoresheet:
        return cast(Scoresheet, self._run(Call("GET", f"tables/{table_id}/scoresheet", self.retry)))

    def list_table_events(self, table_id: int, after: int = 0) -> dict[str, Any]:
        """The events after sequence `after` (`{"events", "version", "more"}`); poll with after=version."""
        params = {"after": str(after)}
        return cast(
            dict[str, Any], self._run(Call("GET", f"tables/{table_id}/events", self.retry, params=params))
        )

    def list_moves(self, table_id: int, after: int = 0) -> dict[str, Any]:
        params = {"after": str(after)}
        return cast(
            dict[str, Any], self._run(Call("GET", f"tables/{table_id}/moves", self.retry, params=params))
        )

    # -- streams -------------------------------------------------------------------------------

    def stream_table_events(self, table_id: int, *, last_event_id: str | None = None) -> EventStream:
        """A table's events, resumed after `last_event_id` when given."""
        return self._stream(table_id, last_event_id)

    def stream_my_events(self, *, last_event_id: str | None = None) -> EventStream:
        """Player token: your events at all your tables, resumed after `last_event_id` when given."""
        return self._stream(None, last_event_id)

    def stream(self, table_id: int | None = None, *, last_event_id: str | None = None) -> EventStream:
        """Deprecated: `stream_table_events` or, without `table_id`, `stream_my_events` (kept until
        2027-06-01)."""
        renamed_warning("stream", "stream_table_events or stream_my_events")
        return self._stream(table_id, last_event_id)

    # -- one socket: GraphQL subscriptions, queries and mutations (docs/clients.md) ---------------

    def socket(self, *, ticket: str | None = None) -> Socket:
        """GraphQL over one WebSocket at `/graphql/`, as this client's token (or a stream `ticket`:
        then only that ticket's stream): `with client.socket() as ws:`, then
        `ws.subscribe_table_events(table_id)`, `ws.subscribe_my_events()` (the streams' events,
        resumed after a dropped socket), `ws.submit_action(...)`, `ws.execute(query, variables)`."""
        url = socket_url(str(self._http.base_url))
        return Socket(url, None if ticket else self.token, ticket=ticket, retry=self.retry)

    def _stream(self, table_id: int | None, last_event_id: str | None) -> EventStream:
        """A table's events (`table_id`) or, without it, the player's events at all their tables;
        resumed after `last_event_id` when given."""
        path = f"tables/{table_id}/stream" if table_id is not None else "me/stream"
        return EventStream(
            self, StreamState(path, self.retry, last_event_id, table_stream=table_id is not None)
        )

    # -- old names, deprecated (docs/clients.md#method-names): kept until 2027-06-01 --------------

    set_language = deprecated_alias(update_me)
    me = deprecated_alias(get_me)
    join = deprecated_alias(join_table)
    leave = deprecated_alias(leave_table)
    start = deprecated_alias(start_table)
    abandon = deprecated_alias(abandon_table)
    back = deprecated_alias(reclaim_seat)
    rematch = deprecated_alias(request_rematch)
    act = deprecated_alias(submit_action)
    waiting = deprecated_alias(get_quick_play)
    invites = deprecated_alias(list_invites)
    tournaments = deprecated_alias(list_tournaments)
    tournament = deprecated_alias(get_tournament)
    tournament_standings = deprecated_alias(get_tournament_standings)
    tournament_tables = deprecated_alias(list_tournament_tables)
    invite_table = deprecated_alias(get_invite_table)
    bots = deprecated_alias(list_bots)
    rating_system = deprecated_alias(get_rating_system)
    leaderboard = deprecated_alias(get_leaderboard)
    player_ratings = deprecated_alias(get_player_ratings)
    rating_history = deprecated_alias(get_rating_history)
    export = deprecated_alias(export_game)
    transcript = deprecated_alias(get_transcript)
    scoresheet = deprecated_alias(get_scoresheet)
    events = deprecated_alias(list_table_events)
    moves = deprecated_alias(list_moves)


class EventStream:
    """Iterates over a stream's typed events, reconnecting after a dropped connection with
    `Last-Event-ID` = the last event's id (nothing missed, nothing repeated). A table stream ends
    after `table_finished`; a player stream runs until you stop iterating."""

    def __init__(self, client: HeartsClient, state: StreamState) -> None:
        self.client, self.state = client, state
        self._response: httpx.Response | None = None

    @property
    def last_event_id(self) -> str | None:
        return self.state.last_event_id

    @property
    def reconnects(self) -> int:
        return self.state.reconnects

    def __iter__(self) -> Generator[Event]:
        state, http = self.state, self.client._http
        while not state.finished:
            error: Exception | None = None
            wait: float | None = None
            try:
                with http.stream(
                    "GET", state.path, headers=state.headers(), timeout=STREAM_TIMEOUT
                ) as response:
                    self._response = response
                    wait = state.opened(response, b"" if response.status_code == 200 else response.read())
                    if wait is None:
                        for sse in EventSource(response).iter_sse():
                            event = state.event(sse)
                            if event is not None:
                                yield event
                            if state.finished:
                                return
            except STREAM_DROPS as exc:
                error = exc
            finally:
                self._response = None
            if state.finished:
                return
            if wait is None or error is not None:
                wait = state.dropped(error)
            time.sleep(wait)

    def close(self) -> None:
        """Stop reading (from another thread too): the iteration ends with its connection closed."""
        self.state.finished = True
        if self._response is not None:
            self._response.close()
