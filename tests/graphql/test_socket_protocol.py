"""GraphQL over WebSocket, frame by frame, on a live server: both protocols' rules, close codes,
authentication (headers, connection_init, stream tickets), caps, limits and liveness.

A raw client (the `websockets` library) sends exactly the frames a test names, so that every
refusal is seen as a client sees it: the protocol's close code with `<error code>: <detail>` as
its reason, or an `error` / `next` message whose errors carry `extensions.code`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
import redis
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from games.accounts import app_create, authenticate, player_create

pytestmark = [
    pytest.mark.needs_postgres,
    pytest.mark.needs_redis,
    pytest.mark.django_db(transaction=True),  # the servers must see committed rows
]
NEW, LEGACY = "graphql-transport-ws", "graphql-ws"
NO_CLOCKS = {"pass": None, "play": None, "moon": None}
TABLE_EVENTS = "subscription($t: Int!, $a: String) { tableEvents(tableId: $t, after: $a) { __typename id } }"


def ws_url(base: str) -> str:
    return base.replace("http://", "ws://") + "/graphql/"


@contextlib.asynccontextmanager
async def opened(
    base: str, protocol: str | None = NEW, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientConnection]:
    protocols = [protocol] if protocol else None
    async with connect(
        ws_url(base),
        subprotocols=protocols,
        additional_headers=headers,
        max_size=None,  # type: ignore[arg-type]
    ) as ws:
        yield ws


async def send(ws: ClientConnection, message: Any) -> None:
    await ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))


async def recv(ws: ClientConnection, timeout: float = 10) -> dict[str, Any]:
    return dict(json.loads(await asyncio.wait_for(ws.recv(), timeout)))


async def recv_legacy(ws: ClientConnection) -> dict[str, Any]:
    """The next legacy message but its `ka`s: a legacy server sends one whenever its period is up,
    which a slow run (a loaded machine) reaches in the middle of any exchange."""
    while (message := await recv(ws))["type"] == "ka":
        pass
    return message


async def closed_with(ws: ClientConnection, timeout: float = 10) -> tuple[int, str]:
    """The close code and reason the server closed with (messages before it are read and dropped)."""
    with contextlib.suppress(ConnectionClosed):
        while True:
            await asyncio.wait_for(ws.recv(), timeout)
    assert ws.close_code is not None
    return ws.close_code, ws.close_reason or ""


async def ready(base: str, token: str, protocol: str = NEW) -> ClientConnection:
    """A socket after connection_ack (the caller closes it)."""
    ws = await connect(ws_url(base), subprotocols=[protocol])  # type: ignore[list-item]
    await send(ws, {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
    assert (await recv(ws))["type"] == "connection_ack"
    if protocol == LEGACY:
        assert (await recv(ws))["type"] == "ka"
    return ws


def subscribe(op_id: str, query: str, protocol: str = NEW, **variables: Any) -> dict[str, Any]:
    kind = "subscribe" if protocol == NEW else "start"
    return {"type": kind, "id": op_id, "payload": {"query": query, "variables": variables}}


def codes(message: dict[str, Any]) -> list[str]:
    payload = message["payload"]
    errors = payload if isinstance(payload, list) else payload.get("errors", [payload])
    return [e["extensions"]["code"] for e in errors]


class World:
    """An app, two players, and a table of the first player with three people to come."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.app, self.key = app_create(name="sockets")
        (self.p1, self.token), (self.p2, self.other) = (
            player_create(app=self.app, name=n) for n in ("a", "b")
        )
        auth = {"Authorization": f"Bearer {self.token}"}
        body = {"clocks": NO_CLOCKS}
        self.table = int(httpx.post(f"{base}/api/v1/tables", json=body, headers=auth).json()["id"])
        self.table2 = int(httpx.post(f"{base}/api/v1/tables", json=body, headers=auth).json()["id"])

    def ticket(self, path: str, token: str | None = None) -> str:
        auth = {"Authorization": f"Bearer {token or self.token}"}
        r = httpx.post(f"{self.base}/api/v1/{path}", json={}, headers=auth)
        assert r.status_code in (200, 201), r.text
        return str(r.json()["ticket"])


def test_graphql_transport_ws_closes_with_its_codes_and_never_crashes(web: Callable[..., str]) -> None:
    base = web(GRAPHQL_WS_INIT_SECONDS="1")
    world = World(base)
    good = {"type": "connection_init", "payload": {"Authorization": f"Bearer {world.token}"}}

    async def case(first: list[Any], protocol: str | None = NEW, **kw: Any) -> tuple[int, str]:
        async with opened(base, protocol, **kw) as ws:
            for message in first:
                await send(ws, message)
            return await closed_with(ws)

    async def run() -> None:
        assert (await case([], protocol=None))[0] == 4406
        code, reason = await case([], protocol="graphql-whatever")
        assert code == 4406 and reason.startswith("invalid_request")
        assert (await case([subscribe("1", TABLE_EVENTS, t=world.table)]))[0] == 4401  # before the ack
        assert (await case([good, good]))[0] == 4429  # a second connection_init
        for bad in ["not json", "[1, 2]", '{"type": 5}', '"x"', "{" * 5000, {"type": "what"}]:
            code, reason = await case([good, bad])
            assert code == 4400 and reason.startswith("invalid_request"), (bad, code, reason)
        assert (await case([good, b"\x00\x01binary"]))[0] == 4400
        assert (await case([good, {"type": "subscribe", "id": 5, "payload": {}}]))[0] == 4400
        assert (await case([good, {"type": "subscribe", "id": "1"}]))[0] == 4400
        code, reason = await case([good, json.dumps({"type": "ping", "payload": "x" * 70_000})])
        assert code == 1009 and reason.startswith("request_too_large")
        code, reason = await case([])  # no connection_init within GRAPHQL_WS_INIT_SECONDS
        assert code == 4408 and reason.startswith("not_authenticated")
        bad_token = {"type": "connection_init", "payload": {"Authorization": "Bearer nope"}}
        code, reason = await case([bad_token])
        assert code == 4403 and reason.startswith("authentication_failed")
        assert (await case([{"type": "connection_init", "payload": {"Authorization": 5}}]))[0] == 4403
        code, reason = await case([], headers={"Authorization": "Bearer nope"})
        assert code == 4403 and reason.startswith("authentication_failed")
        # A running id used again.
        async with opened(base) as ws:
            await send(ws, good)
            assert (await recv(ws))["type"] == "connection_ack"
            await send(ws, subscribe("1", TABLE_EVENTS, t=world.table))
            assert (await recv(ws))["payload"]["data"]["tableEvents"]["__typename"] == "TableStateEvent"
            await send(ws, subscribe("1", TABLE_EVENTS, t=world.table))
            code, reason = await closed_with(ws)
            assert code == 4409 and reason.startswith("invalid_request")
        # Refusals of one operation answer `error` (before it runs) or `next` with errors, and the
        # socket goes on: ping still answered, a good operation still runs.
        async with opened(base, headers={"Authorization": f"Bearer {world.token}"}) as ws:
            await send(ws, {"type": "connection_init"})
            assert (await recv(ws))["type"] == "connection_ack"
            await send(ws, subscribe("a", "subscription { nope }"))
            assert (answer := await recv(ws))["type"] == "error" and codes(answer) == ["invalid_query"]
            deep = (
                '{ __type(name: "Table") { fields { type { '
                + "ofType { " * 30
                + "name"
                + " }" * 30
                + " } } } }"
            )
            await send(ws, subscribe("b", deep))
            assert codes(await recv(ws)) == ["query_too_deep"]
            await send(ws, subscribe("c", TABLE_EVENTS, t="x"))
            assert codes(await recv(ws)) == ["invalid_variables"]
            await send(ws, subscribe("d", TABLE_EVENTS, t=999999))
            answer = await recv(ws)
            assert answer["type"] == "next" and codes(answer) == ["not_found"]
            assert await recv(ws) == {"type": "complete", "id": "d"}
            await send(ws, subscribe("e", TABLE_EVENTS, t=world.table, a="nonsense"))
            assert codes(await recv(ws)) == ["invalid_last_event_id"]
            assert (await recv(ws))["type"] == "complete"
            aliases = "{ " + " ".join(f"a{i}: me {{ kind }}" for i in range(40)) + " }"
            await send(ws, subscribe("f", aliases))
            assert codes(await recv(ws)) == ["too_many_aliases"]
            await send(ws, {"type": "ping", "payload": {"n": 1}})
            assert await recv(ws) == {"type": "pong", "payload": {"n": 1}}
            await send(ws, subscribe("g", "{ me { kind } }"))
            assert await recv(ws) == {
                "type": "next",
                "id": "g",
                "payload": {"data": {"me": {"kind": "player"}}},
            }
            assert await recv(ws) == {"type": "complete", "id": "g"}
            await send(ws, {"type": "complete", "id": "never-started"})  # nothing to stop: ignored
            await send(ws, subscribe("h", "{ me { kind } }"))
            assert (await recv(ws))["id"] == "h"

    asyncio.run(run())
    assert httpx.get(f"{base}/healthz").status_code == 200
    metrics = httpx.get(f"{base}/metrics").text
    assert 'code="internal_error"' not in metrics


def test_the_legacy_protocol_answers_errors_and_goes_on(web: Callable[..., str]) -> None:
    base = web()
    world = World(base)

    async def run() -> None:
        async with opened(base, LEGACY) as ws:
            assert ws.subprotocol == LEGACY
            await send(ws, subscribe("1", TABLE_EVENTS, LEGACY, t=world.table))  # before connection_init
            assert (answer := await recv(ws))["type"] == "error" and codes(answer) == ["not_authenticated"]
            await send(ws, "not json")
            assert (answer := await recv(ws))["type"] == "error" and codes(answer) == ["invalid_request"]
            await send(ws, {"type": "whatever"})
            assert codes(await recv(ws)) == ["invalid_request"]
            await send(ws, {"type": "connection_init", "payload": {"authorization": f"Bearer {world.token}"}})
            assert [(await recv(ws))["type"], (await recv(ws))["type"]] == ["connection_ack", "ka"]
            await send(ws, subscribe("1", TABLE_EVENTS, LEGACY, t=world.table))
            first = await recv_legacy(ws)
            assert (
                first["type"] == "data"
                and first["payload"]["data"]["tableEvents"]["__typename"] == "TableStateEvent"
            )
            await send(ws, subscribe("1", TABLE_EVENTS, LEGACY, t=world.table))  # the same id: replaces it
            again = await recv_legacy(ws)
            assert again["payload"]["data"]["tableEvents"]["__typename"] == "TableStateEvent"
            await send(ws, {"type": "stop", "id": "1"})
            await send(ws, subscribe("2", "{ me { kind } }", LEGACY))
            assert await recv_legacy(ws) == {
                "type": "data",
                "id": "2",
                "payload": {"data": {"me": {"kind": "player"}}},
            }
            assert await recv_legacy(ws) == {"type": "complete", "id": "2"}
            await send(ws, {"type": "connection_terminate"})
            assert (await closed_with(ws))[0] == 1000
        async with opened(base, LEGACY) as ws:
            await send(ws, {"type": "connection_init", "payload": {"Authorization": "Bearer nope"}})
            answer = await recv_legacy(ws)
            assert answer["type"] == "connection_error" and codes(answer) == ["authentication_failed"]
            assert (await closed_with(ws))[0] == 1011

    asyncio.run(run())


def test_a_ticket_opens_its_own_stream_and_nothing_else(web: Callable[..., str]) -> None:
    base = web()
    world = World(base)
    ticket = world.ticket(f"tables/{world.table}/stream-tickets")

    async def with_ticket(value: Any) -> ClientConnection:
        ws = await connect(ws_url(base), subprotocols=[NEW])  # type: ignore[list-item]
        await send(ws, {"type": "connection_init", "payload": {"ticket": value}})
        return ws

    async def run() -> None:
        ws = await with_ticket(ticket)
        assert (await recv(ws))["type"] == "connection_ack"
        await send(ws, subscribe("1", TABLE_EVENTS, t=world.table))
        assert (await recv(ws))["payload"]["data"]["tableEvents"]["__typename"] == "TableStateEvent"
        await send(ws, subscribe("2", TABLE_EVENTS, t=world.table2))
        assert codes(await recv(ws)) == ["ticket_invalid"]
        assert (await recv(ws)) == {"type": "complete", "id": "2"}
        await send(ws, subscribe("3", "subscription { myEvents { id } }"))
        assert codes(await recv(ws)) == ["ticket_invalid"]
        assert (await recv(ws))["type"] == "complete"
        await send(ws, subscribe("4", "{ me { kind } }"))
        assert (answer := await recv(ws))["type"] == "error" and codes(answer) == ["permission_denied"]
        await ws.close()
        for bad in [ticket[:-3] + "abc", "x", 5]:
            ws = await with_ticket(bad)
            code, reason = await closed_with(ws)
            assert code == 4403 and reason.startswith("ticket_invalid"), (bad, code, reason)
        mine = await with_ticket(world.ticket("me/stream-tickets"))
        assert (await recv(mine))["type"] == "connection_ack"
        await send(mine, subscribe("1", "subscription { myEvents { __typename id } }"))
        assert (await recv(mine))["payload"]["data"]["myEvents"]["__typename"] == "MyTablesEvent"
        await mine.close()

    asyncio.run(run())


def test_caps_on_sockets_and_subscriptions_answer_the_protocol_code_and_the_error_code(
    web: Callable[..., str],
) -> None:
    base = web(GRAPHQL_WS_SOCKETS_PER_TOKEN="2", GRAPHQL_WS_SUBSCRIPTIONS_PER_TOKEN="3")
    world = World(base)

    async def run() -> None:
        first, second = await ready(base, world.token), await ready(base, world.token, LEGACY)
        third = await connect(ws_url(base), subprotocols=[NEW])  # type: ignore[list-item]
        await send(third, {"type": "connection_init", "payload": {"Authorization": f"Bearer {world.token}"}})
        code, reason = await closed_with(third)
        assert code == 4429 and reason.startswith("too_many_sockets"), (code, reason)
        legacy = await connect(ws_url(base), subprotocols=[LEGACY])  # type: ignore[list-item]
        await send(legacy, {"type": "connection_init", "payload": {"Authorization": f"Bearer {world.token}"}})
        answer = await recv(legacy)
        assert answer["type"] == "connection_error" and codes(answer) == ["too_many_sockets"]
        assert answer["payload"]["extensions"]["code"] == "too_many_sockets"
        other = await ready(base, world.other)  # another token has its own cap
        for n in range(3):
            await send(first, subscribe(str(n), TABLE_EVENTS, t=world.table))
            assert (await recv(first))["type"] == "next"
        await send(second, subscribe("x", TABLE_EVENTS, LEGACY, t=world.table))
        answer = await recv(second)
        assert answer["type"] == "data" and codes(answer) == ["too_many_subscriptions"]
        error = answer["payload"]["errors"][0]["extensions"]
        assert error["limit"] == 3 and error["scope"] == "token"
        assert await recv(second) == {"type": "complete", "id": "x"}
        await send(first, {"type": "complete", "id": "0"})  # one ends: its place is free again
        await asyncio.sleep(0.5)
        await send(second, subscribe("y", TABLE_EVENTS, LEGACY, t=world.table))
        assert (await recv(second))["payload"]["data"]["tableEvents"]["__typename"] == "TableStateEvent"
        await first.close()
        await asyncio.sleep(0.5)
        again = await ready(base, world.token)  # a closed socket's place is free again
        for ws in (second, other, again):
            await ws.close()

    asyncio.run(run())


def test_limits_apply_over_the_socket_as_over_http(web: Callable[..., str]) -> None:
    base = web(RATE_LIMIT_TOKEN="12/minute")
    world = World(base)
    version = int(
        httpx.get(
            f"{base}/api/v1/tables/{world.table}", headers={"Authorization": f"Bearer {world.token}"}
        ).json()["version"]
    )
    bot = (
        'mutation($t: Int!, $v: Int, $k: String) { addBot(tableId: $t, level: "random", expectedVersion: $v, '
        "idempotencyKey: $k) { replayed errors { code } table { version } } }"
    )

    async def result(ws: ClientConnection) -> dict[str, Any]:
        answer = await recv(ws)
        assert await recv(ws) == {"type": "complete", "id": answer["id"]}
        return answer

    async def run() -> None:
        ws = await ready(base, world.token)
        # A version the table is not at (not -1: a version below 0 is invalid_input, as in REST).
        await send(ws, subscribe("1", bot, t=world.table, v=version + 1))
        assert (await result(ws))["payload"]["data"]["addBot"]["errors"] == [{"code": "stale_version"}]
        await send(ws, subscribe("2", bot, t=world.table, v=version, k="one"))
        added = (await result(ws))["payload"]["data"]["addBot"]
        assert added["errors"] == [] and added["replayed"] is False
        await send(ws, subscribe("3", bot, t=world.table, v=version, k="one"))  # the same key: answered again
        assert (await result(ws))["payload"]["data"]["addBot"] == {**added, "replayed": True}
        limited = []
        for n in range(12):
            await send(ws, subscribe(f"q{n}", "{ me { kind } }"))
            answer = await recv(ws)
            if answer["type"] == "next" and "errors" in answer["payload"]:
                limited.append(codes(answer))
            await recv(ws)  # complete
        assert limited and all(c == ["rate_limited"] for c in limited), limited
        await send(ws, subscribe("s", TABLE_EVENTS, t=world.table))  # opening a subscription counts too
        assert codes(await recv(ws)) == ["rate_limited"]
        await ws.close()

    asyncio.run(run())
    # Over HTTP, a subscription is refused: it needs the socket.
    r = httpx.post(
        f"{base}/graphql/",
        json={"query": "subscription { myEvents { id } }"},
        headers={"Authorization": f"Bearer {world.other}"},
    )
    assert r.status_code == 405 and r.json()["errors"][0]["extensions"]["code"] == "method_not_allowed"


class Relay:
    """A TCP relay between a client and the server that can be frozen: both connections stay open
    and nothing passes any more, as when a phone loses its network (a half-open connection)."""

    def __init__(self, target: int) -> None:
        self.target, self.frozen = target, asyncio.Event()
        self.server: asyncio.AbstractServer | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            while not self.frozen.is_set():
                data = await src.read(65536)
                if not data or self.frozen.is_set():
                    break
                dst.write(data)
                await dst.drain()
            await asyncio.Event().wait()  # frozen: hold both sockets open, pass nothing

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True)


def _held(client: redis.Redis, credential: str, kinds: tuple[str, ...] = ("sockets", "subscriptions")) -> int:
    """The places a token holds under the caps (games/infra/sockets.py), not expired."""
    now = time.time()
    keys = [f"hearts:ws:{kind}:token:{credential}" for kind in kinds]
    return sum(int(client.zcount(key, now, "+inf")) for key in keys)  # type: ignore[arg-type]


def test_a_half_open_socket_is_noticed_and_released_within_30_seconds(
    web: Callable[..., str], redis_url: str
) -> None:
    """Defaults: graphql-transport-ws pings after 10 s of silence and closes 10 s later; the legacy
    protocol's peer is found by the server's WebSocket pings (uvicorn --ws-ping-interval 10
    --ws-ping-timeout 5, then up to 10 s of closing handshake). Either way, its subscription and its
    places under the caps go."""
    base = web()
    world = World(base)
    port = int(base.rsplit(":", 1)[1])
    client = redis.Redis.from_url(redis_url)
    principal = authenticate(world.token)
    assert principal is not None
    credential = principal.credential

    async def run() -> float:
        relay = Relay(port)
        relay_port = await relay.start()
        relayed = f"http://127.0.0.1:{relay_port}"
        sockets = [await ready(relayed, world.token, protocol) for protocol in (NEW, LEGACY)]
        for ws, protocol in zip(sockets, (NEW, LEGACY), strict=True):
            await send(ws, subscribe("1", TABLE_EVENTS, protocol, t=world.table))
            await recv(ws)
        assert _held(client, credential, ("sockets",)) == 2
        assert _held(client, credential, ("subscriptions",)) == 2
        relay.frozen.set()
        started = time.monotonic()
        while _held(client, credential) and time.monotonic() - started < 40:
            await asyncio.sleep(0.5)
        return time.monotonic() - started

    took = asyncio.run(run())
    print(f"half-open sockets released after {took:.1f} s")
    assert _held(client, credential) == 0, "a half-open socket still holds its places"
    assert took <= 30, took
    metrics = httpx.get(f"{base}/metrics").text
    opened_n = re.search(r'hearts_graphql_subscriptions_total\{event="opened"\} (\S+)', metrics)
    closed_n = re.search(r'hearts_graphql_subscriptions_total\{event="closed"\} (\S+)', metrics)
    assert opened_n and closed_n and float(opened_n[1]) == float(closed_n[1]) == 2
