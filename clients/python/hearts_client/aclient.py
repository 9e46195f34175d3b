"""`AsyncHeartsClient`: the operations of `_resources` on httpx.AsyncClient, and streams, for asyncio."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable
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
from hearts_client._resources import Async, ClientResources
from hearts_client._socket import socket_url
from hearts_client.asocket import AsyncSocket
from hearts_client.client import api_base
from hearts_client.models import Event

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741 (an item of a page)


class AsyncHeartsClient(ClientResources[Async]):
    """`HeartsClient` for asyncio: the same resources and methods, each a coroutine
    (`await client.tables.join(table_id)`); streams and `list_all` pages are async iterators."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        retry: Retry | None = None,
        timeout: float = 30.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.retry = retry or Retry()
        self.token = token
        self._own = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout)
        self._http.base_url = httpx.URL(api_base(base_url) + "/")
        self._http.headers["User-Agent"] = USER_AGENT
        if token:
            self.use_token(token)
        self._attach_resources()

    @classmethod
    async def as_guest(cls, base_url: str, name: str, **kwargs: Any) -> AsyncHeartsClient:
        """A client with the token of a new guest player."""
        client = cls(base_url, **kwargs)
        client.use_token((await client.players.create_guest(name))["token"])
        return client

    def use_token(self, token: str) -> None:
        self.token = token
        self._http.headers["Authorization"] = f"Bearer {token}"

    async def aclose(self) -> None:
        if self._own:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncHeartsClient:
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self.aclose()

    # -- the transport: what `_resources` describes, run on httpx.AsyncClient --------------------

    async def _execute(self, call: Call[T]) -> T:
        call.path, call.retry = call.path.lstrip("/"), self.retry
        while True:
            try:
                response = await self._http.send(call.request(self._http))
            except httpx.TransportError as exc:
                step: Done | float = call.failed(exc)
            else:
                step = call.answered(response)
            if isinstance(step, Done):
                return step.value  # type: ignore[no-any-return]
            await asyncio.sleep(step)

    async def _pages(self, call: Call[Any] | None, items: Callable[[Any], list[I]]) -> AsyncIterator[I]:
        while call is not None:
            page = await self._execute(call)
            for item in items(page):
                yield item
            call = next_page(call, page)

    def _stream(self, state: StreamState) -> AsyncEventStream:
        return AsyncEventStream(self, state)

    def socket(self, *, ticket: str | None = None) -> AsyncSocket:
        """GraphQL over one WebSocket (`async with client.socket() as ws:`), as `HeartsClient.socket`."""
        url = socket_url(str(self._http.base_url))
        return AsyncSocket(url, None if ticket else self.token, ticket=ticket, retry=self.retry)


class AsyncEventStream:
    """`EventStream` for asyncio: typed events, resumed with `Last-Event-ID` after a drop."""

    def __init__(self, client: AsyncHeartsClient, state: StreamState) -> None:
        self.client, self.state = client, state

    @property
    def last_event_id(self) -> str | None:
        return self.state.last_event_id

    @property
    def reconnects(self) -> int:
        return self.state.reconnects

    async def __aiter__(self) -> AsyncGenerator[Event]:
        state, http = self.state, self.client._http
        while not state.finished:
            error: Exception | None = None
            wait: float | None = None
            try:
                async with http.stream(
                    "GET", state.path, headers=state.headers(), timeout=STREAM_TIMEOUT
                ) as response:
                    body = b"" if response.status_code == 200 else await response.aread()
                    wait = state.opened(response, body)
                    if wait is None:
                        async for sse in EventSource(response).aiter_sse():
                            event = state.event(sse)
                            if event is not None:
                                yield event
                            if state.finished:
                                return
            except STREAM_DROPS as exc:
                error = exc
            if state.finished:
                return
            if wait is None or error is not None:
                wait = state.dropped(error)
            await asyncio.sleep(wait)
