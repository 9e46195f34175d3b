"""`HeartsClient`, the synchronous client: the operations of `_resources` on httpx.Client, and streams."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator
from types import TracebackType
from typing import Any, TypeVar

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
    next_page,
)
from hearts_client._resources import ClientResources, Sync
from hearts_client._socket import socket_url
from hearts_client.models import Event
from hearts_client.socket import Socket

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741 (an item of a page)


def api_base(base_url: str) -> str:
    """`http://host:8000` or `http://host:8000/api/v1`: the API's root either way."""
    base = base_url.rstrip("/")
    return base if base.endswith("/api/v1") else base + "/api/v1"


class HeartsClient(ClientResources[Sync]):
    """A player's (player token) or an app's (API key) client of the REST API, its operations
    grouped by resource: `client.tables.create(...)`, `client.tables.join(table_id)`,
    `client.webhooks.list()`, `client.streams.table(table_id)` (docs/clients.md).

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
        self._attach_resources()

    @classmethod
    def as_guest(cls, base_url: str, name: str, **kwargs: Any) -> HeartsClient:
        """A client with the token of a new guest player."""
        client = cls(base_url, **kwargs)
        client.use_token(client.players.create_guest(name)["token"])
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

    # -- the transport: what `_resources` describes, run on httpx.Client -------------------------

    def _execute(self, call: Call[T]) -> T:
        call.path, call.retry = call.path.lstrip("/"), self.retry
        while True:
            try:
                response = self._http.send(call.request(self._http))
            except httpx.TransportError as exc:
                step: Done | float = call.failed(exc)
            else:
                step = call.answered(response)
            if isinstance(step, Done):
                return step.value  # type: ignore[no-any-return]
            time.sleep(step)

    def _pages(self, call: Call[Any] | None, items: Callable[[Any], list[I]]) -> Iterator[I]:
        while call is not None:
            page = self._execute(call)
            yield from items(page)
            call = next_page(call, page)

    def _stream(self, state: StreamState) -> EventStream:
        return EventStream(self, state)

    # -- one socket: GraphQL subscriptions, queries and mutations (docs/clients.md) ---------------

    def socket(self, *, ticket: str | None = None) -> Socket:
        """GraphQL over one WebSocket at `/graphql/`, as this client's token (or a stream `ticket`:
        then only that ticket's stream): `with client.socket() as ws:`, then
        `ws.subscribe_table_events(table_id)`, `ws.subscribe_my_events()` (the streams' events,
        resumed after a dropped socket), `ws.submit_action(...)`, `ws.execute(query, variables)`."""
        url = socket_url(str(self._http.base_url))
        return Socket(url, None if ticket else self.token, ticket=ticket, retry=self.retry)


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
