"""GraphQL over a WebSocket at /graphql/: subscriptions, queries and mutations on one socket, two protocols.

The server speaks the protocol the client asks for in `Sec-WebSocket-Protocol`:
`graphql-transport-ws` (the current one, as the `graphql-ws` JavaScript library defines it) or the
legacy `graphql-ws` (subscriptions-transport-ws, Apollo Kotlin's default); neither: close 4406.
Every operation goes through the HTTP endpoint's own checks (`HeartsGraphQLView.prepare`: depth,
cost, aliases, variables) and execution (`run_prepared`: rate limits per root field, idempotency
keys and expectedVersion in the mutations, coded errors), so no limit is escaped by changing
transport. Subscriptions are games/graphql/subscriptions.py over the streams' fan-out hub.

Authentication: the `Authorization` header of the handshake where a client can send one, or the
`connection_init` payload (`{"Authorization": "Bearer ..."}`, `{"headers": {"Authorization": ...}}`,
`{"token": ...}`), or a stream ticket (`{"ticket": ...}`: then only that ticket's stream may be
subscribed, nothing else). Caps per token and per app on open sockets and subscriptions
(games/infra/sockets.py). Liveness: a `graphql-transport-ws` client is pinged after PING_SECONDS of
silence and closed when nothing (no pong) comes back within PONG_SECONDS; the legacy protocol has
server `ka` messages only, so the ASGI server's WebSocket pings (uvicorn --ws-ping-interval) find a
dead peer there. Close codes and their reasons (`<error code>: <detail>`) are in docs/graphql.md.

Why not a library: the existing implementations for a graphql-core schema (ariadne's ASGI handlers,
strawberry's, channels-graphql-ws) each execute operations their own way (their own context, error
formatting, validation and no per-root-field rate limit), and the point here is that the socket
runs exactly the HTTP endpoint's pipeline; the two protocols themselves are a few message types.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import time
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils import translation
from graphql import DocumentNode, ExecutionResult, GraphQLError, GraphQLSchema, OperationType, execute
from graphql.execution import create_source_event_stream

from games import accounts, quotas
from games.accounts import Principal
from games.errors import ServiceError
from games.graphql.view import HeartsGraphQLView, Refused, _charge_request, _coded
from games.infra import metrics, ratelimit, sockets
from games.live.fanout import db as _db

log = logging.getLogger(__name__)

TRANSPORT_WS = "graphql-transport-ws"
LEGACY_WS = "graphql-ws"
PROTOCOLS = (TRANSPORT_WS, LEGACY_WS)  # preferred first, when a client offers both

# Close codes of graphql-transport-ws (the legacy protocol reuses the ones that make sense there).
BAD_REQUEST, UNAUTHORIZED, FORBIDDEN = 4400, 4401, 4403
SUBPROTOCOL_NOT_ACCEPTABLE, INIT_TIMEOUT, SUBSCRIBER_EXISTS, TOO_MANY = 4406, 4408, 4409, 4429
GOING_AWAY, MESSAGE_TOO_BIG, LEGACY_CONNECTION_ERROR = 1001, 1009, 1011


def _setting(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


@dataclass
class Operation:
    """One operation of a socket: its task, and for a subscription its cap entry."""

    task: asyncio.Task[None]
    entry: str | None = None


class Closed(Exception):
    """The socket is closing: stop reading."""


@dataclass(eq=False)  # hashable by identity: the sweeper keeps a set of them
class Socket:
    """One WebSocket connection at /graphql/."""

    scope: dict[str, Any]
    receive: Any
    send_raw: Any
    protocol: str = ""
    principal: Principal | None = None
    bearer: str | None = None
    ticket_stream: str | None = None  # set when authenticated by a stream ticket
    init_seen: bool = False
    acked: bool = False
    closing: bool = False
    ops: dict[str, Operation] = field(default_factory=dict)
    entry: str = field(default_factory=lambda: f"{os.getpid()}-{uuid.uuid4().hex}")
    held: list[sockets.Scope] = field(default_factory=list)  # the socket's own cap entry
    sub_scopes: list[sockets.Scope] | None = None  # its subscriptions' caps and stream quotas, once read
    last_heard: float = field(default_factory=time.monotonic)
    opened: float = field(default_factory=time.monotonic)
    pinged: float = 0.0  # when the last `ping` went out
    phase: float = field(default_factory=lambda: random.uniform(0.5, 1.0))  # of `every`, for pings
    kept_alive: float = field(default_factory=time.monotonic)  # when the last legacy `ka` went out
    send_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    meta: dict[str, Any] = field(default_factory=dict)

    # -- the connection ---------------------------------------------------------------------

    async def run(self) -> None:
        first = await self.receive()
        if first["type"] != "websocket.connect":
            return
        self.meta = _meta(self.scope)
        offered = [p.strip() for p in self.scope.get("subprotocols") or ()]
        self.protocol = next((p for p in PROTOCOLS if p in offered), "")
        await self.send_raw(
            {"type": "websocket.accept", **({"subprotocol": self.protocol} if self.protocol else {})}
        )
        metrics.socket_opened(self.protocol or "none")
        try:
            if not self.protocol:
                await self.close(
                    SUBPROTOCOL_NOT_ACCEPTABLE, "invalid_request", "use graphql-transport-ws or graphql-ws"
                )
                return
            header = self.meta.get("HTTP_AUTHORIZATION", "")
            if header and not await self.authenticate({"Authorization": header}):
                return
            _sweeper().sockets.add(self)
            while not self.closing:
                message = await self.receive()
                kind = message["type"]
                if kind == "websocket.disconnect":
                    break
                if kind != "websocket.receive":
                    continue
                self.last_heard = time.monotonic()
                await self.on_frame(message)
        except Closed:
            pass
        finally:
            self.closing = True
            _sweeper().sockets.discard(self)
            tasks = [op.task for op in self.ops.values()]
            await self.release()
            await asyncio.gather(*tasks, return_exceptions=True)
            metrics.socket_closed(self.protocol or "none")

    async def release(self) -> None:
        """Let go of everything the socket holds, at once: its operations (their subscriptions leave
        the hub) and its place under the caps. Idempotent; called as soon as the socket closes, not
        when a peer that may be gone answers the close."""
        for op in list(self.ops.values()):
            op.task.cancel()
        held, self.held = self.held, []
        if held:
            await _db(sockets.release, held, self.entry)

    async def send(self, message: dict[str, Any]) -> None:
        if self.closing:
            return
        text = json.dumps(message, separators=(",", ":"))
        async with self.send_lock:
            with contextlib.suppress(Exception):  # the peer is gone: the reader sees the disconnect
                await self.send_raw({"type": "websocket.send", "text": text})

    async def close(self, code: int, error: str | None, detail: str) -> None:
        """Close with this code; the reason is `<error code>: <detail>` for a refusal, else the
        detail alone (at most 123 bytes)."""
        if self.closing:
            return
        self.closing = True
        await self.release()
        reason = (f"{error}: {detail}" if error else detail).encode()[:123].decode(errors="ignore")
        if error:
            metrics.refused(error, "graphql-ws")
        with contextlib.suppress(Exception):
            async with self.send_lock:
                await self.send_raw({"type": "websocket.close", "code": code, "reason": reason})

    def held_entries(self) -> list[tuple[list[sockets.Scope], str]]:
        """The socket's places under the caps and its subscriptions', to refresh."""
        held = [(self.held, self.entry)] if self.held else []
        return held + [(self._sub_scopes(), op.entry) for op in self.ops.values() if op.entry]

    def tick(self, now: float, every: float, wait: float, init: float) -> Coroutine[Any, Any, None] | None:
        """The sweeper's visit, what is due now (None: nothing, the usual case): close a socket that
        never sent connection_init; graphql-transport-ws: ping a quiet client, close one that stays
        silent (half-open); legacy: a `ka` every `every` seconds (its clients answer nothing: the
        ASGI server's WebSocket pings find a dead peer there)."""
        if self.closing:
            return None
        if not self.init_seen:
            if now - self.opened >= init:
                return self.close(INIT_TIMEOUT, "not_authenticated", "connection_init was not sent in time")
            return None
        if self.protocol == LEGACY_WS:
            if self.acked and now - self.kept_alive >= every:
                self.kept_alive = now
                return self.send({"type": "ka"})
            return None
        silent = now - self.last_heard
        if silent >= every + wait:
            return self.close(GOING_AWAY, None, f"no pong within {wait:g} s of a ping")
        # Each socket waits a little more or less than `every` (its own phase): sockets opened
        # together are not all pinged in the same round, whose pongs would then stall the loop.
        if silent >= every * self.phase and self.pinged <= self.last_heard:
            self.pinged = now
            return self.send({"type": "ping"})
        return None

    # -- messages -----------------------------------------------------------------------------

    async def on_frame(self, frame: dict[str, Any]) -> None:
        text = frame.get("text")
        if text is None:
            raw = frame.get("bytes") or b""
            if self.protocol == TRANSPORT_WS:
                await self.close(BAD_REQUEST, "invalid_request", "messages are JSON text frames")
                return
            text = raw.decode("utf-8", errors="replace")
        if len(text) > settings.GRAPHQL_WS_MAX_MESSAGE:
            limit = settings.GRAPHQL_WS_MAX_MESSAGE
            await self.close(MESSAGE_TOO_BIG, "request_too_large", f"a message is at most {limit} bytes")
            return
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):
            message = None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            await self.bad_message(None, "a message is a JSON object with a string `type`")
            return
        if self.protocol == TRANSPORT_WS:
            await self.on_transport_ws(message)
        else:
            await self.on_legacy(message)

    async def bad_message(self, op_id: Any, detail: str) -> None:
        if self.protocol == TRANSPORT_WS:
            await self.close(BAD_REQUEST, "invalid_request", detail)
        else:  # the legacy protocol answers an `error` and goes on
            error = _error("invalid_request", detail)
            await self.send(
                {"type": "error", **({"id": op_id} if isinstance(op_id, str) else {}), "payload": error}
            )

    async def on_transport_ws(self, message: dict[str, Any]) -> None:
        kind, op_id = message["type"], message.get("id")
        if kind == "connection_init":
            if self.init_seen:
                await self.close(TOO_MANY, "invalid_request", "too many initialisation requests")
                return
            self.init_seen = True
            if await self.authenticate(message.get("payload")):
                self.acked = True
                await self.send({"type": "connection_ack"})
        elif kind == "ping":
            pong: dict[str, Any] = {"type": "pong"}
            if isinstance(message.get("payload"), dict):
                pong["payload"] = message["payload"]
            await self.send(pong)
        elif kind == "pong":
            pass
        elif kind == "subscribe":
            if not self.acked:
                await self.close(UNAUTHORIZED, "not_authenticated", "subscribe only after connection_ack")
                return
            if not isinstance(op_id, str) or not op_id or not isinstance(message.get("payload"), dict):
                await self.bad_message(op_id, "subscribe needs a string id and a payload object")
                return
            if op_id in self.ops:
                await self.close(
                    SUBSCRIBER_EXISTS, "invalid_request", f"subscriber for {op_id[:40]} already exists"
                )
                return
            await self.start(op_id, message["payload"])
        elif kind == "complete":
            if isinstance(op_id, str):
                await self.stop(op_id)
            else:
                await self.bad_message(op_id, "complete needs a string id")
        else:
            await self.bad_message(op_id, f"unknown message type {kind[:40]!r}")

    async def on_legacy(self, message: dict[str, Any]) -> None:
        kind, op_id = message["type"], message.get("id")
        if kind == "connection_init":
            if self.init_seen:
                await self.bad_message(None, "connection_init was sent already")
                return
            self.init_seen = True
            if await self.authenticate(message.get("payload")):
                self.acked = True
                self.kept_alive = time.monotonic()  # a `ka` follows the ack: the period counts from it
                await self.send({"type": "connection_ack"})
                await self.send({"type": "ka"})
        elif kind == "start":
            if not isinstance(op_id, str) or not op_id or not isinstance(message.get("payload"), dict):
                await self.bad_message(op_id, "start needs a string id and a payload object")
                return
            if not self.acked:
                error = _error("not_authenticated", "start only after connection_ack")
                await self.send({"type": "error", "id": op_id, "payload": error})
                return
            if op_id in self.ops:  # the protocol's rule: a start with a running id replaces it
                await self.stop(op_id)
            await self.start(op_id, message["payload"])
        elif kind == "stop":
            if isinstance(op_id, str):
                await self.stop(op_id)
        elif kind == "connection_terminate":
            await self.close(1000, None, "terminated by the client")
            raise Closed
        else:
            await self.bad_message(op_id, f"unknown message type {kind[:40]!r}")

    # -- authentication ---------------------------------------------------------------------

    async def authenticate(self, payload: Any) -> bool:
        """Set the caller from a connection_init payload (or the handshake's header); close the
        socket and answer False when it is refused."""
        try:
            await _db(self._authenticate, payload if isinstance(payload, dict) else {})
        except ServiceError as exc:
            code = TOO_MANY if exc.code == "too_many_sockets" else FORBIDDEN
            await self.refuse(code, exc.code, exc.detail, **exc.details)
            return False
        except ratelimit.RateLimited as exc:
            await self.refuse(TOO_MANY, "rate_limited", exc.body()["detail"])
            return False
        return True

    def _authenticate(self, payload: dict[str, Any]) -> None:
        header = _header_of(payload)
        ticket = payload.get("ticket")
        if ticket is not None:
            if header or self.principal is not None:
                raise ServiceError("ticket_invalid", "send a ticket or a bearer token, not both", kind="auth")
            if not isinstance(ticket, str):
                raise ServiceError("ticket_invalid", "not a stream ticket", kind="auth")
            self.ticket_stream = accounts.ticket_stream(ticket)
            self.principal = accounts.principal_from_ticket(ticket, self.ticket_stream)
        elif header:
            principal = accounts.principal_from_header(header)
            assert principal is not None
            if self.principal is not None and principal.credential != self.principal.credential:
                msg = "the handshake's Authorization names another key or token"
                raise ServiceError("authentication_failed", msg, kind="auth")
            self.principal, self.bearer = principal, accounts.bearer_secret(header)
        if not self.held:  # opening a socket counts as one request, as opening a stream does
            if self.principal is not None:
                ratelimit.check_principal(self.principal)
            else:
                ratelimit.check_address(self.meta.get("REMOTE_ADDR", ""))
            scopes = _scopes("sockets", self.principal, self.meta.get("REMOTE_ADDR", ""))
            full = sockets.acquire(scopes, self.entry)
            if full is not None:
                raise _cap("too_many_sockets", full)
            self.held = scopes

    async def refuse(self, code: int, error: str, detail: str, **details: Any) -> None:
        if self.protocol == LEGACY_WS:
            payload = _error(error, detail)
            payload["extensions"].update(details)
            await self.send({"type": "connection_error", "payload": payload})
            code = LEGACY_CONNECTION_ERROR if code != TOO_MANY else code
        await self.close(code, error, detail)

    # -- operations ---------------------------------------------------------------------------

    def context(self) -> OperationContext:
        return OperationContext(self)

    def _sub_scopes(self) -> list[sockets.Scope]:
        return self.sub_scopes or []

    def _read_sub_scopes(self) -> list[sockets.Scope]:
        """A subscription's places: the subscription caps, and the stream quotas (games/quotas.py)
        it shares with the caller's event streams."""
        assert self.principal is not None
        return _scopes("subscriptions", self.principal) + quotas.stream_scopes(self.principal)

    async def start(self, op_id: str, payload: dict[str, Any]) -> None:
        query, variables, name = payload.get("query"), payload.get("variables"), payload.get("operationName")
        if not isinstance(query, str) or not query.strip():
            await self.op_error(op_id, [_error("invalid_request", "query must be a non-empty string")])
            return
        if variables is not None and not isinstance(variables, dict):
            await self.op_error(op_id, [_error("invalid_variables", "variables must be an object")])
            return
        if name is not None and not isinstance(name, str):
            await self.op_error(op_id, [_error("invalid_request", "operationName must be a string")])
            return
        task = asyncio.create_task(self._operation(op_id, query, variables, name))
        self.ops[op_id] = Operation(task)
        task.add_done_callback(lambda _: self._done(op_id, task))

    def _done(self, op_id: str, task: asyncio.Task[None]) -> None:
        op = self.ops.get(op_id)
        if op is not None and op.task is task:
            del self.ops[op_id]
            if op.entry is not None:
                scopes, entry = self._sub_scopes(), op.entry
                released = asyncio.get_running_loop().create_task(_db(sockets.release, scopes, entry))
                _background.add(released)  # held until done: the loop keeps only weak references
                released.add_done_callback(_background.discard)

    async def stop(self, op_id: str) -> None:
        op = self.ops.get(op_id)
        if op is not None:
            op.task.cancel()
            with contextlib.suppress(BaseException):
                await op.task

    async def op_error(self, op_id: str, errors: list[dict[str, Any]]) -> None:
        """Errors before execution (validation, variables, refusals): `error` in both protocols."""
        for error in errors:
            metrics.refused(error.get("extensions", {}).get("code", "invalid_query"), "graphql-ws")
        if self.protocol == TRANSPORT_WS:
            await self.send({"type": "error", "id": op_id, "payload": errors})
        else:
            await self.send({"type": "error", "id": op_id, "payload": errors[0]})

    async def next(self, op_id: str, body: dict[str, Any]) -> None:
        await self.send(
            {"type": "next" if self.protocol == TRANSPORT_WS else "data", "id": op_id, "payload": body}
        )

    async def complete(self, op_id: str) -> None:
        await self.send({"type": "complete", "id": op_id})

    async def _operation(
        self, op_id: str, query: str, variables: dict[str, Any] | None, name: str | None
    ) -> None:
        view = _view()
        context = self.context()
        ticketed = self.ticket_stream is not None
        try:
            # One trip to a worker thread: checked, and for a query or mutation run, as over HTTP.
            kind, found = await _db(
                context.in_language, _prepare_and_run, view, context, query, variables, name, ticketed
            )
            if kind == "errors":
                await self.op_error(op_id, found)
                return
            if kind == "subscription":
                await self._subscription(op_id, view, context, found, variables, name)
            else:
                await self.next(op_id, found)
            await self.complete(op_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("GraphQL socket operation failed")
            await self.op_error(op_id, [_error("internal_error", "internal error")])

    async def _subscription(
        self,
        op_id: str,
        view: HeartsGraphQLView,
        context: OperationContext,
        document: DocumentNode,
        variables: dict[str, Any] | None,
        name: str | None,
    ) -> None:
        schema = _graphql_schema(view)
        try:
            await _db(context.in_language, _charge_request, context)  # opening one counts as a request
        except ratelimit.RateLimited as exc:
            await self.next(
                op_id, {"data": None, "errors": [view.format_error(GraphQLError("", original_error=exc))]}
            )
            return
        if self.principal is not None:
            if self.sub_scopes is None:
                self.sub_scopes = await _db(self._read_sub_scopes)
            scopes, entry = self._sub_scopes(), f"{self.entry}:{op_id}"
            full = await _db(sockets.acquire, scopes, entry)
            if full is not None:
                refusal = _cap("too_many_subscriptions", full)
                error = view.format_error(GraphQLError("", original_error=refusal))
                error["extensions"].update(refusal.details)  # limit and scope, as the socket cap's
                await self.next(op_id, {"data": None, "errors": [error]})
                return
            self.ops[op_id].entry = entry
        metrics.subscription_opened()
        try:
            source = await create_source_event_stream(
                schema, document, context_value=context, variable_values=variables, operation_name=name
            )
            if isinstance(source, ExecutionResult):
                await self.next(op_id, _formatted(view, source))
                return
            try:
                async for event in source:
                    if event.get("type") in ("state", "tables"):  # their Table fields may read the database
                        body = await _db(
                            context.in_language, _event_body, view, context, document, event, variables, name
                        )
                    else:  # built from the event's dict alone: no thread hop
                        body = _event_body(view, context, document, event, variables, name)
                    await self.next(op_id, body)
            finally:
                await source.aclose()  # type: ignore[attr-defined]  # the resolvers' async generators have it
        finally:
            metrics.subscription_closed()


def _prepare_and_run(
    view: HeartsGraphQLView,
    context: OperationContext,
    query: str,
    variables: dict[str, Any] | None,
    name: str | None,
    ticketed: bool,
) -> tuple[str, Any]:
    """An operation checked as the HTTP endpoint checks it, then run when it is a query or a
    mutation: ("errors", [...]) refused before it runs, ("subscription", document) to subscribe,
    or ("result", body)."""
    try:
        prepared = view.prepare(query, variables, name)
    except Refused as exc:
        return "errors", [_error(exc.code, exc.message)]
    if isinstance(prepared, dict):
        return "errors", prepared["errors"]
    document, operation = prepared
    if operation.operation == OperationType.SUBSCRIPTION:
        return "subscription", document
    if ticketed:
        detail = "a ticket opens one stream: send a bearer token in connection_init for queries and mutations"
        return "errors", [_error("permission_denied", detail)]
    body, _, _ = _run_once(view, context, document, variables, name)
    return "result", body


def _run_once(
    view: HeartsGraphQLView,
    context: OperationContext,
    document: DocumentNode,
    variables: Any,
    name: str | None,
) -> tuple[dict[str, Any], int, dict[str, str]]:
    """A query or mutation over the socket, as the HTTP view runs it: an operation that runs no root
    field still counts once against the rate limits, and one over the limit is refused."""
    body, status, headers = view.run_prepared(context, document, variables, name)
    if not context.operations_counted:
        try:
            _charge_request(context)
        except ratelimit.RateLimited as exc:
            return (
                {"data": None, "errors": [view.format_error(GraphQLError("", original_error=exc))]},
                429,
                {},
            )
    return body, status, headers


def _event_body(
    view: HeartsGraphQLView,
    context: OperationContext,
    document: DocumentNode,
    event: dict[str, Any],
    variables: Any,
    name: str | None,
) -> dict[str, Any]:
    result = execute(
        _graphql_schema(view),
        document,
        root_value=event,
        context_value=context,
        variable_values=variables,
        operation_name=name,
    )
    assert isinstance(result, ExecutionResult)
    return _formatted(view, result)


def _graphql_schema(view: HeartsGraphQLView) -> GraphQLSchema:
    """The view's executable schema (graphene-django's GraphQLView sets `schema` when it is built)."""
    assert view.schema is not None
    schema: GraphQLSchema = view.schema.graphql_schema
    return schema


def _formatted(view: HeartsGraphQLView, result: ExecutionResult) -> dict[str, Any]:
    body: dict[str, Any] = {"data": result.data}
    if result.errors:
        body["errors"] = [view.format_error(e) for e in result.errors]
    return body


class OperationContext(HttpRequest):
    """What one operation of a socket runs as (`info.context`): the socket's caller, address and
    language, and the rate-limit bookkeeping the HTTP view keeps on its request."""

    def __init__(self, socket: Socket) -> None:
        super().__init__()
        self.socket = socket
        self.method = "POST"
        self.path = self.path_info = "/graphql/"
        self.META = dict(socket.meta)
        self.principal = socket.principal
        self.bearer = socket.bearer
        self.operations_counted = 0

    def allow_stream(self, stream: str) -> None:
        """A socket opened with a stream ticket subscribes to that stream only."""
        wanted = self.socket.ticket_stream
        if wanted is not None and wanted != stream:
            raise ServiceError("ticket_invalid", "this ticket opens another stream", kind="auth")

    def in_language(self, fn: Any, *args: Any) -> Any:
        """Run `fn` with the operation's language active: the player's own, else Accept-Language."""
        player = self.principal.player if self.principal is not None else None
        language = (player.language if player is not None else "") or translation.get_language_from_request(
            self
        )
        with translation.override(language):
            return fn(*args)


def _cap(code: str, full: sockets.Scope) -> ServiceError:
    quota = quotas.quota_of_scope(full)
    if quota is not None:  # a stream quota, shared with the event streams
        return quotas.exceeded(quota, full[1])
    name, limit = full
    what = "sockets" if code == "too_many_sockets" else "subscriptions"
    per = next((p for p in ("app", "address") if f":{p}:" in name), "token")
    return ServiceError(code, f"at most {limit} open {what} per {per}", kind="rules", limit=limit, scope=per)


def _scopes(kind: str, principal: Principal | None, address: str = "") -> list[sockets.Scope]:
    """The caps an entry counts against: its token's and its app's (an anonymous socket: its address's)."""
    if principal is None:
        return [(sockets.key(kind, f"address:{address}"), int(settings.GRAPHQL_WS_SOCKETS_PER_ADDRESS))]
    per_token = int(getattr(settings, f"GRAPHQL_WS_{kind.upper()}_PER_TOKEN"))
    per_app = int(getattr(settings, f"GRAPHQL_WS_{kind.upper()}_PER_APP"))
    out = [(sockets.key(kind, f"token:{principal.credential}"), per_token)]
    if principal.app is not None:
        out.append((sockets.key(kind, f"app:{principal.app.pk}"), per_app))
    return out


def _header_of(payload: dict[str, Any]) -> str:
    """An `Authorization` value from a connection_init payload, in the shapes clients send:
    `{"Authorization": "Bearer x"}` (any case), `{"headers": {"Authorization": ...}}`, `{"token": "x"}`."""
    headers = payload.get("headers")
    sources = [payload, headers] if isinstance(headers, dict) else [payload]
    for source in sources:
        for name, value in source.items():
            if isinstance(name, str) and name.lower() == "authorization":
                if not isinstance(value, str):
                    raise ServiceError("authentication_failed", "Authorization must be a string", kind="auth")
                return value
    token = payload.get("token")
    if token is None:
        return ""
    if not isinstance(token, str) or not token:
        raise ServiceError("authentication_failed", "token must be a non-empty string", kind="auth")
    return f"Bearer {token}"


def _meta(scope: dict[str, Any]) -> dict[str, Any]:
    """The handshake as WSGI-style META: the client's address and its headers."""
    meta: dict[str, Any] = {}
    client = scope.get("client")
    if client:
        meta["REMOTE_ADDR"] = client[0]
    for raw_name, raw_value in scope.get("headers") or ():
        name = raw_name.decode("latin-1").upper().replace("-", "_")
        meta[f"HTTP_{name}"] = raw_value.decode("latin-1")
    return meta


def _error(code: str, message: str) -> dict[str, Any]:
    return _coded(message, code)  # the HTTP endpoint's coded error (games/graphql/view.py)


_views: list[HeartsGraphQLView] = []
_background: set[asyncio.Task[Any]] = set()


def _view() -> HeartsGraphQLView:
    if not _views:
        _views.append(HeartsGraphQLView())
    return _views[0]


class Sweeper:
    """One task per event loop (web process) for all its sockets: liveness, the connection_init
    deadline and the refresh of their places under the caps in one Redis round trip, instead of two
    timers per socket (2,000 sockets woke 400 times a second) and a refresh each."""

    def __init__(self) -> None:
        self.sockets: set[Socket] = set()
        self.task: asyncio.Task[None] | None = None
        self.refreshed = time.monotonic()

    def ensure(self) -> None:
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self.run())

    async def run(self) -> None:
        while True:
            every = _setting("GRAPHQL_WS_PING_SECONDS", 10)
            wait = _setting("GRAPHQL_WS_PONG_SECONDS", 10)
            init = _setting("GRAPHQL_WS_INIT_SECONDS", 10)
            await asyncio.sleep(min(every, wait, init) / 20)  # small rounds, each with a few sockets due
            if not self.sockets:
                continue
            now = time.monotonic()
            try:
                due = [
                    c for c in (s.tick(now, every, wait, init) for s in list(self.sockets)) if c is not None
                ]
                if due:
                    await asyncio.gather(*due, return_exceptions=True)
                if now - self.refreshed >= sockets.REFRESH:
                    self.refreshed = now
                    held = [entry for s in list(self.sockets) for entry in s.held_entries()]
                    await _db(sockets.refresh, held)
            except Exception:  # never let the sweeper die: the next round tries again
                log.exception("GraphQL socket sweeper failed")


_sweepers: dict[asyncio.AbstractEventLoop, Sweeper] = {}


def _sweeper() -> Sweeper:
    """The running event loop's sweeper (started with its first socket)."""
    loop = asyncio.get_running_loop()
    found = _sweepers.get(loop)
    if found is None:
        for old in [old for old in _sweepers if old.is_closed()]:
            del _sweepers[old]
        found = _sweepers[loop] = Sweeper()
    found.ensure()
    return found


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The ASGI application of WebSockets at /graphql/ (hearts_service/asgi.py routes them here)."""
    await Socket(scope, receive, send).run()
