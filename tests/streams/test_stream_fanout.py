"""Stream fan-out on a live server: one subscription and one read per change for a process's streams.

Every stream of a table in one web process shares one Redis pub/sub connection and one database
read per change, each still redacted for its own viewer; and streams survive Redis going away."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from django.db import connection

pytestmark = [
    pytest.mark.needs_postgres,
    pytest.mark.needs_redis,
    pytest.mark.django_db(transaction=True),  # the servers must see committed rows
]
REVEALING = {"cards_dealt", "cards_received", "cards_passed"}  # a seat's own cards, to that seat only
NO_CLOCKS = {"pass": None, "play": None, "moon": None}


def _guest(base: str, name: str) -> dict[str, str]:
    token = httpx.post(f"{base}/api/v1/guests", json={"name": name}).json()["token"]
    return {"Authorization": f"Bearer {token}"}


def _table_of_four(base: str) -> tuple[int, list[dict[str, str]]]:
    """A table of four people (no bots, no clocks: nothing moves unless the test acts)."""
    people = [_guest(base, f"p{i}") for i in range(4)]
    table = httpx.post(f"{base}/api/v1/tables", json={"clocks": NO_CLOCKS}, headers=people[0]).json()
    for auth in people:
        r = httpx.post(f"{base}/api/v1/tables/{table['id']}/join", json={}, headers=auth)
        assert r.status_code == 200, r.text
    return int(table["id"]), people


def _act(base: str, table_id: int, auth: dict[str, str]) -> int:
    """The seat's first legal action (a pass of its first three cards, or its first legal card);
    answers the table's new version."""
    game = httpx.get(f"{base}/api/v1/tables/{table_id}", headers=auth).json()
    legal, version = game["game"]["legal_actions"], game["version"]
    if legal["type"] == "pass":
        body = {"type": "pass", "cards": legal["from"][: legal["count"]]}
    else:
        body = {"type": "play", "card": legal["cards"][0]}
    r = httpx.post(
        f"{base}/api/v1/tables/{table_id}/actions", json={**body, "expected_version": version}, headers=auth
    )
    assert r.status_code == 200, r.text
    return int(r.json()["version"])


def _to_act(base: str, table_id: int, people: list[dict[str, str]]) -> dict[str, str]:
    game = httpx.get(f"{base}/api/v1/tables/{table_id}", headers=people[0]).json()["game"]
    return people[game["to_act"][0]]


class Reader(threading.Thread):
    """Follows one NDJSON stream in a thread, keeping every event but keep-alives."""

    def __init__(self, base: str, path: str, auth: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.url, self.auth = f"{base}{path}?format=ndjson", auth
        self.events: list[dict[str, Any]] = []
        self.error: BaseException | None = None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            timeout = httpx.Timeout(10, read=60)
            with httpx.stream("GET", self.url, headers=self.auth, timeout=timeout) as response:
                assert response.status_code == 200, response.read()
                for line in response.iter_lines():
                    if self.done.is_set():
                        return
                    if line and json.loads(line)["type"] != "keepalive":
                        self.events.append(json.loads(line))
        except BaseException as exc:  # reported by the test
            self.error = exc

    def reached(self, version: int) -> bool:
        """Whether an event of move `version` (or a later state) has arrived."""
        assert self.error is None, self.error
        return any(_seq(e) >= version for e in self.events)


def _seq(event: dict[str, Any]) -> int:
    if event["type"] == "tables":
        return min((t["version"] for t in event["tables"]), default=0)
    if event["type"] == "state":
        return int(event["state"]["version"])
    return int(event["seq"])


def _until(check: Callable[[], bool], seconds: float, what: str) -> float:
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > seconds:
            raise AssertionError(f"not within {seconds}s: {what}")
        time.sleep(0.02)
    return time.monotonic() - start


def _reads(base: str) -> dict[str, float]:
    text = httpx.get(f"{base}/metrics").text
    return {
        k: float(v) for k, v in re.findall(r'^hearts_stream_reads_total\{kind="(\w+)"\} (\S+)$', text, re.M)
    }


def _hub_connections(client: redis.Redis, db: int | None) -> list[dict[str, Any]]:
    """The Redis clients of the streams' hubs (named hearts-streams-<pid>), on this database."""
    clients = client.client_list()
    return [
        c
        for c in clients
        if str(c.get("name", "")).startswith("hearts-streams-") and (db is None or int(c["db"]) == db)
    ]


def _rest_events(base: str, table_id: int, auth: dict[str, str], after: int) -> list[dict[str, Any]]:
    page = httpx.get(f"{base}/api/v1/tables/{table_id}/events?after={after}", headers=auth).json()
    assert not page["more"]
    return list(page["events"])


def _logged(reader: Reader) -> list[dict[str, Any]]:
    """A stream's events of the move log, without the stream's own fields."""
    skip = {"state", "tables", "your_turn"}
    return [
        {k: v for k, v in e.items() if k not in ("id", "table")}
        for e in reader.events
        if e["type"] not in skip
    ]


@pytest.fixture
def readers() -> Iterator[list[Reader]]:
    started: list[Reader] = []
    yield started
    for reader in started:
        reader.done.set()


def test_every_viewer_of_a_table_shares_one_read_per_change_and_one_subscription(
    web: Callable[..., str], redis_url: str, readers: list[Reader]
) -> None:
    # Polling every 30 s: only wake-ups deliver here, and no poll read falls into the counts.
    base = web(STREAM_POLL_SECONDS="30", STREAM_KEEPALIVE_SECONDS="1")
    table_id, people = _table_of_four(base)
    spectator = _guest(base, "spectator")
    path = f"/api/v1/tables/{table_id}/stream"
    viewers = {  # name -> (reader, the token whose REST events it must equal, seat)
        "seat0": (Reader(base, path, people[0]), people[0], 0),
        "seat1": (Reader(base, path, people[1]), people[1], 1),
        "seat2": (Reader(base, path, people[2]), people[2], 2),
        "spectator": (Reader(base, path, spectator), spectator, None),
        "player3": (Reader(base, "/api/v1/me/stream", people[3]), people[3], 3),
    }
    more = [Reader(base, path, spectator) for _ in range(10)]  # more streams, still one subscription
    for reader, _, _ in viewers.values():
        readers.append(reader)
    readers.extend(more)
    for reader in readers:
        reader.start()
    start_version = int(httpx.get(f"{base}/api/v1/tables/{table_id}", headers=spectator).json()["version"])
    _until(lambda: all(r.reached(start_version) for r in readers), 10, "every stream's first state")

    db = redis.Redis.from_url(redis_url)
    hubs = _hub_connections(db, db.connection_pool.connection_kwargs.get("db", 0))
    assert len(hubs) == 1, hubs  # one pub/sub connection for 15 streams
    assert int(hubs[0]["sub"]) >= 2  # the table's channel and player 3's (and the hub's own)

    # Each change (the four passes, then plays) is taken once for all 15 streams of this process: on
    # PostgreSQL from its wake-up, which carries it (games.changes), without a read; on SQLite (whose
    # writes do not make the change's text) by one shared read.
    carried = connection.vendor == "postgresql"
    version = start_version
    for _ in range(7):
        before = _reads(base)
        version = _act(base, table_id, _to_act(base, table_id, people))
        _until(lambda v=version: all(r.reached(v) for r in readers), 5, f"every stream at version {version}")
        time.sleep(0.2)  # a second read would have happened by now
        after = _reads(base)
        taken = {k: after.get(k, 0) - before.get(k, 0) for k in ("shared", "carried")}
        assert taken == ({"shared": 0, "carried": 1} if carried else {"shared": 1, "carried": 0}), taken
        assert after.get("viewer", 0) == before.get("viewer", 0), (before, after)

    # Each viewer's events are exactly its REST events: its own cards only, none of another seat's.
    for name, (reader, auth, seat) in viewers.items():
        logged = _logged(reader)
        assert logged == _rest_events(base, table_id, auth, start_version), name
        for event in logged:
            if event["type"] in REVEALING:
                assert event["seat"] == seat, f"{name} saw {event}"
        turns = [e for e in reader.events if e["type"] == "your_turn"]
        assert all(t["seat"] == seat for t in turns), name
        assert seat is None or seat == 3 or turns, name  # a seated viewer is told when to act
    assert not [e for e in _logged(viewers["spectator"][0]) if e["type"] in REVEALING]
    assert len(_hub_connections(db, db.connection_pool.connection_kwargs.get("db", 0))) == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _redis_server(port: int, log: Path) -> subprocess.Popen[bytes]:
    cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(cmd, stdout=open(log, "ab"), stderr=subprocess.STDOUT)  # noqa: SIM115
    client = redis.Redis(port=port, socket_connect_timeout=0.2)
    _until(lambda: _pings(client), 10, "redis-server starting")
    return proc


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


def test_streams_poll_while_redis_is_away_and_resubscribe_when_it_is_back(
    web: Callable[..., str], redis_url: str, readers: list[Reader], tmp_path: Path
) -> None:
    """The server's Redis is one of this test's own (redis-server on a free port), stopped and
    started again mid-stream; no event is missed or repeated."""
    port = _free_port()
    own = _redis_server(port, tmp_path / "redis.log")
    try:
        own_url = f"redis://127.0.0.1:{port}/0"
        base = web(REDIS_URL=own_url, STREAM_POLL_SECONDS="1", STREAM_KEEPALIVE_SECONDS="1")
        table_id, people = _table_of_four(base)
        path = f"/api/v1/tables/{table_id}/stream"
        for auth in people[:2]:
            readers.append(Reader(base, path, auth))
        readers.append(Reader(base, "/api/v1/me/stream", people[2]))
        for reader in readers:
            reader.start()
        start = int(httpx.get(f"{base}/api/v1/tables/{table_id}", headers=people[0]).json()["version"])
        _until(lambda: all(r.reached(start) for r in readers), 10, "first states")
        client = redis.Redis(port=port, socket_connect_timeout=0.5)
        _until(lambda: bool(_hub_connections(client, None)), 5, "the hub subscribed")

        version = _act(base, table_id, _to_act(base, table_id, people))
        _until(lambda: all(r.reached(version) for r in readers), 3, "a move through Redis")

        own.kill()
        own.wait()
        for _ in range(2):  # Redis is away: the poll (1 s) delivers
            version = _act(base, table_id, _to_act(base, table_id, people))
            _until(lambda v=version: all(r.reached(v) for r in readers), 6, "a move while Redis is away")

        own = _redis_server(port, tmp_path / "redis.log")
        # The hub's connection is named (and listed) before its SUBSCRIBE lands: wait for the channels.
        _until(lambda: any(int(c["sub"]) >= 3 for c in _hub_connections(client, None)), 15, "the hub back")
        hub = _hub_connections(client, None)
        assert len(hub) == 1 and int(hub[0]["sub"]) >= 3, hub  # table, player 2, the hub's own
        for _ in range(2):
            version = _act(base, table_id, _to_act(base, table_id, people))
            _until(lambda v=version: all(r.reached(v) for r in readers), 3, "a move after Redis is back")

        for reader, auth in zip(readers, people[:3], strict=True):
            assert _logged(reader) == _rest_events(base, table_id, auth, start)
    finally:
        own.kill()
        own.wait()
