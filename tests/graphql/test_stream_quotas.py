"""The stream quotas across processes (games/quotas.py): event streams and GraphQL subscriptions of
one token share `streams_per_token`, counted in Redis by two web processes; a full quota refuses a
stream with 429 and a subscription with a quota_exceeded error; a closed stream frees its place."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx

from tests.graphql.test_socket_protocol import TABLE_EVENTS, World, codes, ready, recv, send, subscribe


def test_streams_and_subscriptions_share_the_token_quota_across_web_processes(
    web: Callable[..., str],
) -> None:
    one, two = web(QUOTA_STREAMS_PER_TOKEN="2"), web(QUOTA_STREAMS_PER_TOKEN="2")
    world = World(one)
    auth = {"Authorization": f"Bearer {world.token}"}

    async def run() -> None:
        async with httpx.AsyncClient(timeout=10) as client:
            async with client.stream("GET", f"{one}/api/v1/me/stream?format=ndjson", headers=auth) as stream:
                assert stream.status_code == 200
                socket = await ready(two, world.token)  # the other process
                await send(socket, subscribe("1", TABLE_EVENTS, t=world.table))
                assert (await recv(socket))["type"] == "next"  # two places taken: the quota is full
                await send(socket, subscribe("2", TABLE_EVENTS, t=world.table))
                answer = await recv(socket)
                assert codes(answer) == ["quota_exceeded"]
                extensions = answer["payload"]["errors"][0]["extensions"]
                assert (extensions["quota"], extensions["limit"]) == ("streams_per_token", 2)
                assert await recv(socket) == {"type": "complete", "id": "2"}
                refused = await client.get(f"{two}/api/v1/tables/{world.table}/stream", headers=auth)
                assert refused.status_code == 429
                assert refused.json() | {"detail": ""} == {
                    "code": "quota_exceeded",
                    "quota": "streams_per_token",
                    "limit": 2,
                    "detail": "",
                }
                url, theirs = (
                    f"{two}/api/v1/tables/{world.table}/stream",
                    {"Authorization": f"Bearer {world.other}"},
                )
                async with client.stream("GET", url, headers=theirs) as other:
                    assert other.status_code == 200  # another token of the app has its own places
            for attempt in range(50):  # the stream closed: its place comes free
                await asyncio.sleep(0.2)
                await send(socket, subscribe(f"retry{attempt}", TABLE_EVENTS, t=world.table))
                answer = await recv(socket)
                if answer["type"] == "next" and "errors" not in answer["payload"]:
                    break
                await recv(socket)  # the refusal's complete
            else:
                raise AssertionError("the closed stream's place never came free")
            await socket.close()

    asyncio.run(run())
