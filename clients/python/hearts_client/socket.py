"""`Socket`: the synchronous face of `AsyncSocket` (hearts_client.asocket).

One socket, one background thread running an event loop: the thread keeps the connection (pings
answered, resumed after a drop), the calling thread waits on its results. `with client.socket()
as ws:` gives the same methods as `AsyncSocket`, without `await`, and plain iterators over the
subscriptions.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Coroutine, Generator
from types import TracebackType
from typing import Any, TypeVar

from hearts_client._core import Retry
from hearts_client.asocket import AsyncSocket, AsyncSubscription
from hearts_client.models import Action, Event, MoonChoice, Table

T = TypeVar("T")


class Socket:
    """GraphQL over one WebSocket, synchronously (see `AsyncSocket` for what each method does)."""

    def __init__(
        self, url: str, token: str | None = None, *, ticket: str | None = None, retry: Retry | None = None
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="hearts-socket", daemon=True)
        self._async: AsyncSocket | None = None
        self._args = (url, token, ticket, retry)

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    @property
    def sockets(self) -> AsyncSocket:
        """The AsyncSocket this one drives (on its own thread's loop)."""
        assert self._async is not None, "open the socket first: `with client.socket() as ws:`"
        return self._async

    @property
    def reconnects(self) -> int:
        return self.sockets.reconnects

    @property
    def retry(self) -> Retry:
        return self.sockets.retry

    def connect(self) -> None:
        if self._async is not None:
            return
        self._thread.start()
        url, token, ticket, retry = self._args

        async def make() -> AsyncSocket:
            return AsyncSocket(url, token, ticket=ticket, retry=retry)

        self._async = self._call(make())
        try:
            self._call(self._async.connect())
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._async is not None and self._thread.is_alive():
            self._call(self._async.close())
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
        if not self._loop.is_closed() and not self._loop.is_running():
            self._loop.close()

    def __enter__(self) -> Socket:
        self.connect()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    # -- operations -------------------------------------------------------------------------------

    def execute(
        self, query: str, variables: dict[str, Any] | None = None, *, resend: bool | None = None
    ) -> dict[str, Any]:
        return self._call(self.sockets.execute(query, variables, resend=resend))

    def get_table(self, table_id: int) -> Table:
        return self._call(self.sockets.get_table(table_id))

    def submit_action(
        self, table_id: int, action: Action, *, version: int | None = None, idempotency_key: str | None = None
    ) -> Table:
        return self._call(
            self.sockets.submit_action(table_id, action, version=version, idempotency_key=idempotency_key)
        )

    def pass_cards(
        self,
        table_id: int,
        cards: list[str],
        *,
        version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Table:
        return self._call(
            self.sockets.pass_cards(table_id, cards, version=version, idempotency_key=idempotency_key)
        )

    def play(
        self, table_id: int, card: str, *, version: int | None = None, idempotency_key: str | None = None
    ) -> Table:
        return self._call(self.sockets.play(table_id, card, version=version, idempotency_key=idempotency_key))

    def choose_moon(
        self,
        table_id: int,
        choice: MoonChoice,
        *,
        version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Table:
        return self._call(
            self.sockets.choose_moon(table_id, choice, version=version, idempotency_key=idempotency_key)
        )

    def join_table(
        self,
        table_id: int,
        position: int | None = None,
        *,
        invite: str | None = None,
        version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Table:
        return self._call(
            self.sockets.join_table(
                table_id, position, invite=invite, version=version, idempotency_key=idempotency_key
            )
        )

    def leave_table(
        self, table_id: int, *, version: int | None = None, idempotency_key: str | None = None
    ) -> Table:
        return self._call(
            self.sockets.leave_table(table_id, version=version, idempotency_key=idempotency_key)
        )

    def reclaim_seat(self, table_id: int, *, idempotency_key: str | None = None) -> Table:
        return self._call(self.sockets.reclaim_seat(table_id, idempotency_key=idempotency_key))

    def subscribe_table_events(self, table_id: int, *, after: str | None = None) -> Subscription:
        return Subscription(self, self.sockets.subscribe_table_events(table_id, after=after))

    def subscribe_my_events(self, *, after: str | None = None) -> Subscription:
        return Subscription(self, self.sockets.subscribe_my_events(after=after))


async def _next(events: AsyncGenerator[Event]) -> Event:
    return await anext(events)


async def _close(events: AsyncGenerator[Event]) -> None:
    await events.aclose()


class Subscription:
    """A subscription's events; iterate over it (see `AsyncSubscription`)."""

    def __init__(self, socket: Socket, subscription: AsyncSubscription) -> None:
        self.socket, self.subscription = socket, subscription

    @property
    def last_event_id(self) -> str | None:
        return self.subscription.last_event_id

    @property
    def reconnects(self) -> int:
        return self.subscription.reconnects

    def __iter__(self) -> Generator[Event]:
        events = self.subscription.__aiter__()
        try:
            while True:
                try:
                    yield self.socket._call(_next(events))
                except StopAsyncIteration:
                    return
        finally:
            if self.socket._thread.is_alive():
                self.socket._call(_close(events))

    def close(self) -> None:
        """Stop the subscription (the socket stays open)."""
        self.socket._call(self.subscription.close())


__all__ = ["Socket", "Subscription"]
