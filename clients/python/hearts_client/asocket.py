"""`AsyncSocket`: GraphQL subscriptions, queries and mutations over one WebSocket, resumed after a drop.

`async with client.socket() as ws:` opens `ws(s)://<host>/graphql/` in `graphql-transport-ws`
(hearts_client._socket) and keeps it open: when the connection drops (or goes silent: the
websockets library's pings find a dead peer), it connects again with a backoff and subscribes
again to every open subscription with `after` = the id of the last message received, so an
iterator yields every event once, in order, as the SSE stream would. Queries, and mutations sent
with an idempotency key (every convenience method sends one), are sent again on the new socket;
a repeated key answers the first outcome, so nothing acts twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, cast

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.typing import Subprotocol

from hearts_client import _socket as proto
from hearts_client._core import _OVER, Retry, new_key
from hearts_client.errors import HeartsError, RateLimited, ServiceUnavailable, TransportError
from hearts_client.models import Action, Event, MoonChoice, Table

log = logging.getLogger("hearts_client")

_DONE = object()  # a queue's end: the operation completed


@dataclass
class _Op:
    """One operation of the socket: what to send, what came back, and (a subscription) where it is."""

    id: str
    query: str
    variables: dict[str, Any]
    subscription: bool
    resend: bool = True
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    sent_on: int = -1  # the connection it was last sent on
    after: str | None = None  # a subscription: the id of the last message received

    def payload(self) -> dict[str, Any]:
        variables = dict(self.variables)
        if self.subscription and self.after is not None:
            variables["after"] = self.after
        return {"query": self.query, "variables": variables}


class AsyncSocket:
    """GraphQL over one WebSocket, for a player's token, an app's key or a stream ticket.

    `subscribe_table_events(table_id)` and `subscribe_my_events()` yield the streams' events (the
    same dicts as `stream_table_events`, with their ids); `execute(query, variables)` runs any
    query or mutation and answers its `{"data", "errors"}`; `submit_action`, `pass_cards`, `play`,
    `choose_moon`, `join_table`, `leave_table`, `reclaim_seat` and `get_table` are the REST
    client's methods over the socket (the same arguments, answers and errors). `reconnects` counts
    the connections made again after a drop.
    """

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        ticket: str | None = None,
        retry: Retry | None = None,
        open_timeout: float = 10.0,
        ping_interval: float | None = 20.0,
        ping_timeout: float | None = 20.0,
    ) -> None:
        self.url, self.token, self.ticket = url, token, ticket
        self.retry = retry or Retry()
        self.open_timeout = open_timeout
        self.ping_interval, self.ping_timeout = ping_interval, ping_timeout
        self.reconnects = 0
        self._ops: dict[str, _Op] = {}
        self._ws: ClientConnection | None = None
        self._generation = 0
        self._connected = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None
        self._closed = False
        self._fatal: HeartsError | None = None
        self._pongs: set[asyncio.Future[None]] = set()

    # -- the connection -------------------------------------------------------------------------

    async def __aenter__(self) -> AsyncSocket:
        await self.connect()
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self.close()

    async def connect(self) -> None:
        """Open the socket (it then stays open, resuming after drops, until `close`)."""
        if self._runner is None:
            self._runner = asyncio.create_task(self._run())
        await self._ready()

    async def close(self) -> None:
        """Close the socket: every operation still open ends."""
        self._closed = True
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await self._ws.close()
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(BaseException):
                await self._runner
        for op in list(self._ops.values()):
            op.queue.put_nowait(_DONE)
        self._ops.clear()

    async def _ready(self) -> None:
        while not self._connected.is_set():
            if self._fatal is not None:
                raise self._fatal
            if self._closed:
                raise TransportError("transport_error", "the socket is closed")
            assert self._runner is not None
            waiter = asyncio.ensure_future(self._connected.wait())
            await asyncio.wait({waiter, self._runner}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            if self._runner.done() and not self._connected.is_set():
                if self._fatal is None:
                    self._fatal = TransportError("transport_error", "the socket ended")
                raise self._fatal

    async def _run(self) -> None:
        """Keep a connection: connect, acknowledge, send the open operations, read; after a drop,
        wait and start again (at most `retry.stream_attempts` failures in a row)."""
        failures = 0
        while not self._closed:
            cause: HeartsError
            try:
                async with connect(
                    self.url,
                    subprotocols=[Subprotocol(proto.PROTOCOL)],
                    open_timeout=self.open_timeout,
                    ping_interval=self.ping_interval,
                    ping_timeout=self.ping_timeout,
                    max_size=None,
                ) as ws:
                    await self._handshake(ws)
                    if failures or self._generation:
                        log.info("socket %s resumed (%d subscriptions)", self.url, self._subscriptions())
                    self._generation += 1
                    self._ws = ws
                    self._connected.set()
                    for op in list(self._ops.values()):
                        await self._send_op(op)
                    async for raw in ws:
                        if self._dispatch(raw):
                            failures = 0
                cause = TransportError("transport_error", "the server closed the socket")
                close = proto.closing(ws.close_code, ws.close_reason or "")
                if not close.retry:
                    self._fail(close.error)
                    return
                cause = close.error
            except ConnectionClosed as exc:
                frame = exc.rcvd
                close = proto.closing(frame.code if frame else None, frame.reason if frame else "")
                if not close.retry:
                    self._fail(close.error)
                    return
                cause = close.error
            except InvalidStatus as exc:
                status = exc.response.status_code
                cause = proto.coded_error(f"http_{status}", f"{self.url}: the handshake got {status}")
                if status < 500 and status != 429:
                    self._fail(cause)
                    return
            except HeartsError as exc:  # refused during connection_init
                if not isinstance(exc, RateLimited | ServiceUnavailable | TransportError):
                    self._fail(exc)
                    return
                cause = exc
            except (OSError, TimeoutError, InvalidHandshake) as exc:
                cause = TransportError("transport_error", f"{self.url}: {exc!r}")
            finally:
                self._connected.clear()
                self._ws = None
            if self._closed:
                return
            self._dropped(cause)
            failures += 1
            if failures >= self.retry.stream_attempts:
                self._fail(TransportError("transport_error", f"{self.url}: {cause}"))
                return
            self.reconnects += 1
            wait = self.retry.delay(failures)
            if isinstance(cause, RateLimited | ServiceUnavailable) and cause.retry_after is not None:
                wait = max(wait, cause.retry_after)
            log.info("socket %s lost (%s); resuming in %.2f s", self.url, cause, wait)
            await asyncio.sleep(wait)

    async def _handshake(self, ws: ClientConnection) -> None:
        init = {"type": "connection_init", "payload": proto.init_payload(self.token, self.ticket)}
        await ws.send(json.dumps(init))
        async with asyncio.timeout(self.open_timeout):
            while True:
                message = json.loads(await ws.recv())
                kind = message.get("type") if isinstance(message, dict) else None
                if kind == "connection_ack":
                    return
                if kind == "ping":
                    await ws.send(json.dumps({"type": "pong"}))

    def _subscriptions(self) -> int:
        return sum(op.subscription for op in self._ops.values())

    def _dispatch(self, raw: str | bytes) -> bool:
        """Hand one message to its operation; True when it shows the link works (a result or a ping)."""
        try:
            message = json.loads(raw)
        except ValueError:
            return False
        if not isinstance(message, dict):
            return False
        kind = message.get("type")
        if kind == "ping":
            if self._ws is not None:
                pong = asyncio.ensure_future(self._quietly(self._ws.send(json.dumps({"type": "pong"}))))
                self._pongs.add(pong)
                pong.add_done_callback(self._pongs.discard)
            return True
        op = self._ops.get(str(message.get("id")))
        if op is None or op.sent_on != self._generation:
            return False
        if kind == "next":
            payload = message.get("payload") or {}
            if op.subscription:
                data = payload.get("data") or {}
                item = next(iter(data.values()), None) if isinstance(data, dict) else None
                if isinstance(item, dict) and item.get("id"):
                    op.after = str(item["id"])  # received: a resubscription starts after it
            op.queue.put_nowait(("next", payload))
            return True
        if kind == "error":
            op.queue.put_nowait(("error", message.get("payload")))
            self._ops.pop(op.id, None)
        elif kind == "complete":
            op.queue.put_nowait(_DONE)
            self._ops.pop(op.id, None)
        return False

    @staticmethod
    async def _quietly(sending: Any) -> None:
        with contextlib.suppress(Exception):
            await sending

    def _dropped(self, cause: HeartsError) -> None:
        """The connection is gone: an operation that may not be sent again fails."""
        for op in list(self._ops.values()):
            if not op.resend and op.sent_on >= 0:
                self._ops.pop(op.id, None)
                op.queue.put_nowait(("raise", cause))

    def _fail(self, error: HeartsError) -> None:
        self._fatal = error
        for op in list(self._ops.values()):
            op.queue.put_nowait(("raise", error))
        self._ops.clear()

    async def _send_op(self, op: _Op) -> None:
        ws = self._ws
        if ws is None or op.sent_on == self._generation or op.id not in self._ops:
            return  # sent when the socket is back
        op.sent_on = self._generation
        message = {"type": "subscribe", "id": op.id, "payload": op.payload()}
        with contextlib.suppress(ConnectionClosed):  # the runner sends it again on the new socket
            await ws.send(json.dumps(message))

    async def _start(self, op: _Op) -> None:
        if self._fatal is not None:
            raise self._fatal
        if self._runner is None:
            await self.connect()
        self._ops[op.id] = op
        await self._send_op(op)

    async def _stop(self, op: _Op) -> None:
        if self._ops.pop(op.id, None) is not None and self._ws is not None and op.sent_on == self._generation:
            with contextlib.suppress(ConnectionClosed):
                await self._ws.send(json.dumps({"type": "complete", "id": op.id}))

    # -- operations -----------------------------------------------------------------------------

    async def execute(
        self, query: str, variables: dict[str, Any] | None = None, *, resend: bool | None = None
    ) -> dict[str, Any]:
        """Run a query or mutation on the socket: its answer, `{"data": ..., "errors": [...]}` (a
        refusal before it ran, such as a malformed query, raises). After a lost socket it is sent
        again when `resend` (by default: a query, or a mutation given an `idempotencyKey`), else
        TransportError is raised: it may or may not have acted."""
        if resend is None:
            resend = proto.is_resendable(query, variables)
        op = _Op(proto.next_id(), query, dict(variables or {}), subscription=False, resend=resend)
        await self._start(op)
        answer: dict[str, Any] | None = None
        try:
            while True:
                item = await op.queue.get()
                if item is _DONE:
                    break
                kind, value = item
                if kind == "raise":
                    raise value
                if kind == "error":
                    raise proto.graphql_error(value)
                answer = value
        finally:
            await self._stop(op)
        if answer is None:
            raise TransportError("transport_error", "the operation completed with no answer")
        return answer

    async def _mutate(self, name: str, query: str, variables: dict[str, Any]) -> Table:
        """A table mutation with the REST client's retry rules: a 429 or 503 waited out (the same
        idempotency key); its typed error raised as the REST call raises it."""
        failures = 0
        while True:
            try:
                payload = proto.payload_of(await self.execute(query, variables, resend=True), name)
                return proto.table_of(payload["table"])
            except (RateLimited, ServiceUnavailable) as exc:
                failures += 1
                wait = exc.retry_after if exc.retry_after is not None else self.retry.delay(failures)
                if failures >= self.retry.attempts or wait > self.retry.max_wait:
                    raise
                await asyncio.sleep(wait)

    @staticmethod
    def _table_args(
        table_id: int, version: int | None, idempotency_key: str | None, **more: Any
    ) -> dict[str, Any]:
        return {
            "tableId": table_id,
            "expectedVersion": version,
            "idempotencyKey": idempotency_key or new_key(),
            **more,
        }

    async def get_table(self, table_id: int) -> Table:
        """The table as `get_table` answers it (NotFound when you may not see it)."""
        failures = 0
        while True:
            try:
                answer = await self.execute(proto.GET_TABLE, {"id": table_id})
                break
            except (RateLimited, ServiceUnavailable) as exc:
                failures += 1
                wait = exc.retry_after if exc.retry_after is not None else self.retry.delay(failures)
                if failures >= self.retry.attempts or wait > self.retry.max_wait:
                    raise
                await asyncio.sleep(wait)
        if answer.get("errors"):
            raise proto.graphql_error(answer["errors"])
        table = (answer.get("data") or {}).get("table")
        if table is None:
            raise proto.coded_error("not_found", f"no table {table_id} you may see")
        return proto.table_of(table)

    async def submit_action(
        self, table_id: int, action: Action, *, version: int | None = None, idempotency_key: str | None = None
    ) -> Table:
        """Your seat's action as of `version` (the mutation `submitAction`); `stale_version` raises
        StaleVersion (its `version` is None over the socket: read the table)."""
        variables = self._table_args(table_id, version, idempotency_key, **proto.action_variables(action))
        return await self._mutate("submitAction", proto.SUBMIT_ACTION, variables)

    async def pass_cards(
        self,
        table_id: int,
        cards: list[str],
        *,
        version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Table:
        return await self.submit_action(
            table_id, {"type": "pass", "cards": cards}, version=version, idempotency_key=idempotency_key
        )

    async def play(
        self, table_id: int, card: str, *, version: int | None = None, idempotency_key: str | None = None
    ) -> Table:
        return await self.submit_action(
            table_id, {"type": "play", "card": card}, version=version, idempotency_key=idempotency_key
        )

    async def choose_moon(
        self,
        table_id: int,
        choice: MoonChoice,
        *,
        version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Table:
        return await self.submit_action(
            table_id, {"type": "moon", "choice": choice}, version=version, idempotency_key=idempotency_key
        )

    async def join_table(
        self,
        table_id: int,
        position: int | None = None,
        *,
        invite: str | None = None,
        version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Table:
        """Take a seat (the mutation `joinTable`)."""
        variables = self._table_args(table_id, version, idempotency_key, position=position, invite=invite)
        return await self._mutate("joinTable", proto.JOIN_TABLE, variables)

    async def leave_table(
        self, table_id: int, *, version: int | None = None, idempotency_key: str | None = None
    ) -> Table:
        variables = self._table_args(table_id, version, idempotency_key)
        return await self._mutate("leaveTable", proto.LEAVE_TABLE, variables)

    async def reclaim_seat(self, table_id: int, *, idempotency_key: str | None = None) -> Table:
        variables = self._table_args(table_id, None, idempotency_key)
        return await self._mutate("reclaimSeat", proto.RECLAIM_SEAT, variables)

    # -- subscriptions --------------------------------------------------------------------------

    def subscribe_table_events(self, table_id: int, *, after: str | None = None) -> AsyncSubscription:
        """A table's events (`tableEvents`): without `after` the `state` first; resumed after
        `after` when given. Ends after `table_finished`."""
        return AsyncSubscription(self, proto.TABLE_EVENTS, {"tableId": table_id}, after, table_stream=True)

    def subscribe_my_events(self, *, after: str | None = None) -> AsyncSubscription:
        """Player token: your events at all your tables (`myEvents`), `tables` first without `after`."""
        return AsyncSubscription(self, proto.MY_EVENTS, {}, after, table_stream=False)


class AsyncSubscription:
    """The events of one subscription; `async for` over it. `last_event_id` is the id of the last
    event yielded; `reconnects` how often the socket was connected again meanwhile."""

    def __init__(
        self,
        socket: AsyncSocket,
        query: str,
        variables: dict[str, Any],
        after: str | None,
        *,
        table_stream: bool,
    ) -> None:
        self.socket, self.table_stream = socket, table_stream
        self._op = _Op(proto.next_id(), query, variables, subscription=True, after=after)
        self.last_event_id = after
        self.finished = False
        self._started = socket.reconnects

    @property
    def reconnects(self) -> int:
        return self.socket.reconnects - self._started

    def __aiter__(self) -> AsyncGenerator[Event]:
        return self._events()

    async def _events(self) -> AsyncGenerator[Event]:
        op, socket = self._op, self.socket
        failures = 0
        await socket._start(op)
        try:
            while not self.finished:
                item = await op.queue.get()
                if item is _DONE:
                    return
                kind, value = item
                if kind == "raise":
                    raise value
                if kind == "error":
                    raise proto.graphql_error(value)
                if value.get("errors"):  # refused when it opened (a rate limit, a cap, not_found)
                    error = proto.graphql_error(value["errors"])
                    failures += 1
                    if not isinstance(error, RateLimited | ServiceUnavailable):
                        raise error
                    wait = (
                        error.retry_after if error.retry_after is not None else socket.retry.delay(failures)
                    )
                    if failures >= socket.retry.stream_attempts or wait > socket.retry.max_wait:
                        raise error
                    await socket._stop(op)
                    self._op = op = _Op(proto.next_id(), op.query, op.variables, True, after=op.after)
                    await asyncio.sleep(wait)
                    await socket._start(op)
                    continue
                data = value.get("data") or {}
                message = next(iter(data.values()), None)
                if not isinstance(message, dict):
                    continue
                failures = 0
                event = proto.event_of(message)
                self.last_event_id = cast(dict[str, Any], event).get("id", self.last_event_id)
                if self.table_stream and event["type"] == "table_finished":
                    self.finished = True
                if event["type"] == "state" and event["state"]["status"] in _OVER:
                    self.finished = True
                yield event
        finally:
            self.finished = True
            await socket._stop(op)

    async def close(self) -> None:
        """Stop the subscription (the socket stays open)."""
        self.finished = True
        self._op.queue.put_nowait(_DONE)
        await self.socket._stop(self._op)


__all__ = ["AsyncSocket", "AsyncSubscription"]
