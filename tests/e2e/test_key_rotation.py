"""Scoped keys on a real server: a key rotated while clients are busy loses no request (each client
switches to the new key at its own moment, the old one working through the overlap), and event
streams and GraphQL subscriptions opened with an app key need tables:read (docs/keys.md)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from games import accounts
from games.models import ApiKey
from tests.graphql.test_socket_protocol import NEW, TABLE_EVENTS, codes, recv, send, subscribe, ws_url

pytestmark = [
    pytest.mark.slow,
    pytest.mark.needs_postgres,
    pytest.mark.needs_redis,
    pytest.mark.django_db(transaction=True),  # the server must see committed rows
]

CLIENTS = 3


class Fleet:
    """Client threads, each a process of the app making requests in a loop with the key it was
    last given; `switch_at[i]` is how many requests after a rotation client i picks the new key."""

    def __init__(self, base: str, key: str) -> None:
        self.base = base
        self.key = key  # the app's current key: what a deploy would hand out
        self.seen: list[str] = [key] * CLIENTS
        self.answers: list[list[tuple[int, str]]] = [[] for _ in range(CLIENTS)]
        self.stop = threading.Event()
        self.rotated = threading.Event()

    def run(self, i: int) -> None:
        after_rotation = 0
        with httpx.Client(base_url=self.base, timeout=10) as http:
            while not self.stop.is_set():
                if self.rotated.is_set():
                    after_rotation += 1
                    if after_rotation > 5 * i:  # client 0 at once, the others later
                        self.seen[i] = self.key
                key = self.seen[i]
                r = http.get("/api/v1/tables", headers={"Authorization": f"Bearer {key}"})
                self.answers[i].append((r.status_code, key))


def test_a_key_rotated_under_traffic_loses_no_request(web: Callable[..., str]) -> None:
    base = web(RATE_LIMITS_ENABLED="0")  # the clients request as fast as they can
    app, old = accounts.app_create(name="rotating", scopes=["tables:read", "keys:write"])
    old_row = app.api_keys.get()
    fleet = Fleet(base, old)
    threads = [threading.Thread(target=fleet.run, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)
        r = httpx.post(
            f"{base}/api/v1/app/keys/{old_row.pk}/rotate",
            json={"overlap_seconds": 600},
            headers={"Authorization": f"Bearer {old}"},
        )
        assert r.status_code == 201, r.text
        fleet.key = r.json()["secret"]
        fleet.rotated.set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(
            sum(1 for _, k in answers if k == fleet.key) < 5 for answers in fleet.answers
        ):
            time.sleep(0.1)
    finally:
        fleet.stop.set()
        for t in threads:
            t.join(30)
    for i, answers in enumerate(fleet.answers):
        refused = [(status, key[:12]) for status, key in answers if status != 200]
        assert not refused, f"client {i} lost requests: {refused[:5]}"
        used = [key for _, key in answers]
        assert used[0] == old and used[-1] == fleet.key, f"client {i} did not switch keys"
    # Both keys were used; after the overlap (ended here by revoking) only the new one works.
    old_row.refresh_from_db()
    new_row = ApiKey.objects.get(replaces=old_row)
    assert old_row.last_used_at is not None and new_row.last_used_at is not None
    assert old_row.replaced_by_id == new_row.pk and old_row.expires_at is not None
    ApiKey.objects.filter(pk=old_row.pk).update(revoked_at=old_row.expires_at)
    r = httpx.get(f"{base}/api/v1/tables", headers={"Authorization": f"Bearer {old}"})
    assert (r.status_code, r.json()["code"]) == (401, "key_revoked")


def _table(base: str, key: str) -> int:
    r = httpx.post(
        f"{base}/api/v1/tables",
        json={"clocks": {"pass": None, "play": None, "moon": None}},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def test_streams_and_subscriptions_of_an_app_key_need_tables_read(web: Callable[..., str]) -> None:
    base = web()
    app, admin = accounts.app_create(name="streams")
    table_id = _table(base, admin)
    reader = accounts.key_create(app, scopes=["tables:read"])[1]
    other = accounts.key_create(app, scopes=["webhooks:read"])[1]

    r = httpx.get(f"{base}/api/v1/tables/{table_id}/stream", headers={"Authorization": f"Bearer {other}"})
    assert (r.status_code, r.json()["code"], r.json()["scope"]) == (403, "missing_scope", "tables:read")
    with httpx.stream(
        "GET",
        f"{base}/api/v1/tables/{table_id}/stream",
        params={"format": "ndjson"},
        headers={"Authorization": f"Bearer {reader}"},
        timeout=10,
    ) as stream:
        assert stream.status_code == 200
        first: Any = json.loads(next(stream.iter_lines()))
        assert first["type"] == "state"

    async def subscribed(key: str) -> dict[str, Any]:
        async with connect(ws_url(base), subprotocols=[NEW]) as ws:  # type: ignore[list-item]
            await send(ws, {"type": "connection_init", "payload": {"Authorization": f"Bearer {key}"}})
            assert (await recv(ws))["type"] == "connection_ack"
            await send(ws, subscribe("1", TABLE_EVENTS, t=table_id))
            return await recv(ws)

    refused = asyncio.run(subscribed(other))
    assert codes(refused) == ["missing_scope"]
    accepted = asyncio.run(subscribed(reader))
    assert accepted["payload"]["data"]["tableEvents"]["__typename"] == "TableStateEvent"
