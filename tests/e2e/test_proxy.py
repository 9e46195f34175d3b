"""Three web processes behind nginx, no stickiness, one killed mid-hand: clients resume exactly.

The proxy is Debian's nginx run by the test with deploy/nginx.conf (the same directives; its upstream
pointed at three uvicorn processes on the test database and Redis, `tests.deploy.test_deploy.nginx_config`).
Four people play through the proxy over REST, which spreads their requests over the three processes
round-robin; a follower connected through the proxy (a GraphQL subscription over WebSocket with gql's
WebsocketsTransport, or an SSE stream with httpx-sse) gets every event, whichever process served the
move. Then the process holding the follower's connection is killed (SIGKILL) mid-hand while the moves
go on; the follower reconnects through the proxy to another process and resumes with `after: <last
id>` (or Last-Event-ID), and what it received in all equals the table's event log for its seat: none
lost, none repeated. Each process's streams are woken by Redis only (their database poll slowed to
30 s), so every event of a move served elsewhere crossed processes through the fan-out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from gql import Client, gql
from gql.transport.websockets import WebsocketsTransport
from httpx_sse import connect_sse

from tests.deploy.test_deploy import nginx_binary, nginx_config
from tests.live import WS_FLAGS, _free_port, _spawn, _stop, _test_db_env

pytestmark = [
    pytest.mark.needs_postgres,
    pytest.mark.needs_redis,
    pytest.mark.django_db(transaction=True),  # the servers must see committed rows
]
NO_CLOCKS = {"pass": None, "play": None, "moon": None}
STREAM_ONLY = {"TableStateEvent", "YourTurnEvent", "state", "your_turn"}
SUBSCRIPTION = gql(
    "subscription($t: Int!, $after: String) { tableEvents(tableId: $t, after: $after) "
    "{ __typename id ... on Event { seq type } } }"
)
KILL_AFTER_PLAYS = 10  # mid-hand: the passes and ten cards played
MOVES_WHILE_AWAY = 3  # moves made right after the kill, before the follower is back


@dataclass
class Backend:
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def metric(self, pattern: str) -> float:
        """The sum of this process's own samples (read directly, not through the proxy) whose
        line matches `pattern` (a regex over `name{labels}`)."""
        text = httpx.get(f"{self.url}/metrics", timeout=5).text
        total = 0.0
        for line in text.splitlines():
            if not line.startswith("#") and " " in line:
                name, value = line.rsplit(" ", 1)
                if re.search(pattern, name):
                    total += float(value)
        return total

    def actions_served(self) -> float:
        route, post = r'(?=.*route="[^"]*/actions")', r'(?=.*method="POST")'
        return self.metric(r"^hearts_http_request_duration_seconds_count\{" + route + post)

    def served(self, route: str) -> float:
        """Requests this process answered whose route ends with `route`."""
        return self.metric(r'^hearts_http_request_duration_seconds_count\{(?=.*route="[^"]*' + route + '")')

    def open_sockets(self) -> float:
        return self.metric(r'^hearts_graphql_sockets_total\{.*event="opened"') - self.metric(
            r'^hearts_graphql_sockets_total\{.*event="closed"'
        )

    def stream_opens(self) -> float:
        return self.metric(r'^hearts_stream_reads_total\{kind="viewer"')


@dataclass
class Cluster:
    backends: list[Backend]
    base: str  # the proxy
    nginx_log: Path
    advice: Backend  # the advice replica: the hint and review requests (deploy/nginx.conf)

    def alive(self) -> list[Backend]:
        return [b for b in self.backends if b.proc.poll() is None]


@pytest.fixture
def cluster(redis_url: str, tmp_path: Path, transactional_db: None) -> Iterator[Cluster]:
    """Three uvicorn processes (as the `web` fixture starts them: the test database and Redis), a
    fourth as the advice replica, and Debian's nginx in front of them with deploy/nginx.conf; all
    stopped at the end."""
    nginx = nginx_binary()
    env = {k: v for k, v in _test_db_env(redis_url).items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env.update(STREAM_POLL_SECONDS="30", STREAM_KEEPALIVE_SECONDS="1")  # deliveries through Redis only
    client = redis.Redis.from_url(redis_url)  # fresh rate-limit windows, as the `web` fixture does
    for key in client.scan_iter("hearts:rl:*"):
        client.delete(key)
    client.close()
    procs: list[subprocess.Popen[bytes]] = []
    backends = []
    try:
        for i in range(4):
            port = _free_port()
            cmd = [sys.executable, "-m", "uvicorn", "hearts_service.asgi:application", "--port", str(port)]
            cmd += ["--lifespan", "off", "--proxy-headers", *WS_FLAGS]  # as the image runs it
            proc = _spawn(cmd, env, tmp_path / f"web{i}.log")
            procs.append(proc)
            backends.append(Backend(port, proc))
        prefix = tmp_path / "nginx"
        prefix.mkdir()
        listen = _free_port()
        advice = backends.pop()
        servers = [f"127.0.0.1:{b.port}" for b in backends]
        conf = nginx_config(
            prefix, listen=f"127.0.0.1:{listen}", servers=servers, advice=[f"127.0.0.1:{advice.port}"]
        )
        log = tmp_path / "nginx.log"
        command = [nginx, "-p", str(prefix), "-c", str(conf), "-e", "stderr", "-g", "daemon off;"]
        procs.append(_spawn(command, env, log))
        base = f"http://127.0.0.1:{listen}"
        for url in [b.url for b in [*backends, advice]] + [base]:
            _until(lambda u=url: _answers(u), 30, f"{url} answering: {_logs(tmp_path)}")
        yield Cluster(backends, base, log, advice)
    finally:
        _stop(procs, graceful=False)  # nothing to keep: open streams would hold a graceful stop 10 s


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def _logs(tmp_path: Path) -> str:
    return "\n".join(f"{p.name}: {p.read_text()[-2000:]}" for p in sorted(tmp_path.glob("*.log")))


def _until(check: Callable[[], bool], seconds: float, what: str) -> float:
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > seconds:
            raise AssertionError(f"not within {seconds}s: {what}")
        time.sleep(0.02)
    return time.monotonic() - start


# -- the people, acting through the proxy ------------------------------------------------------


def _guest(base: str, name: str) -> tuple[str, dict[str, str]]:
    token = httpx.post(f"{base}/api/v1/guests", json={"name": name}).json()["token"]
    return token, {"Authorization": f"Bearer {token}"}


def _table_of_four(base: str) -> tuple[int, list[tuple[str, dict[str, str]]]]:
    """A table of four people (no bots, no clocks: nothing moves unless the test acts)."""
    people = [_guest(base, f"p{i}") for i in range(4)]
    table = httpx.post(f"{base}/api/v1/tables", json={"clocks": NO_CLOCKS}, headers=people[0][1]).json()
    for _, auth in people:
        r = httpx.post(f"{base}/api/v1/tables/{table['id']}/join", json={}, headers=auth)
        assert r.status_code == 200, r.text
    return int(table["id"]), people


BAD_GATEWAYS: list[str] = []  # the 502s the proxy answered (none expected: it retries another process)


def _send(method: str, url: str, **kwargs: Any) -> httpx.Response:
    """One request through the proxy; a 502 (the proxy found no process) would be retried, as a
    client would (the actions carry an Idempotency-Key, so a retry never acts twice), and counted."""
    for _ in range(20):
        r = httpx.request(method, url, timeout=10, **kwargs)
        if r.status_code != 502:
            return r
        BAD_GATEWAYS.append(f"{method} {url}")
        time.sleep(0.1)
    return r


class Play:
    """The four people of a table, each acting in turn through the proxy with their own token."""

    def __init__(self, base: str, table_id: int, people: list[tuple[str, dict[str, str]]]) -> None:
        self.base, self.table_id, self.people = base, table_id, people
        url = f"{base}/api/v1/tables/{table_id}"
        self.seat = int(_send("GET", url, headers=people[0][1]).json()["game"]["to_act"][0])

    def act(self) -> tuple[int, dict[str, Any], str]:
        """The seat to act takes its first legal action (two requests: its view, its action); answers
        the new version, the game as it sees it, and the action's type."""
        auth = self.people[self.seat][1]
        mine = _send("GET", f"{self.base}/api/v1/tables/{self.table_id}", headers=auth).json()
        legal, version = mine["game"]["legal_actions"], mine["version"]
        if legal["type"] == "pass":
            body: dict[str, Any] = {"type": "pass", "cards": legal["from"][: legal["count"]]}
        elif legal["type"] == "moon":
            body = {"type": "moon", "choice": legal["choices"][0]}
        else:
            body = {"type": "play", "card": legal["cards"][0]}
        url = f"{self.base}/api/v1/tables/{self.table_id}/actions"
        headers = {**auth, "Idempotency-Key": str(uuid.uuid4())}
        r = _send("POST", url, json={**body, "expected_version": version}, headers=headers)
        assert r.status_code == 200, r.text
        game = r.json()["game"]
        if game["to_act"]:
            self.seat = int(game["to_act"][0])
        return int(r.json()["version"]), game, str(body["type"])


def _rest_events(base: str, table_id: int, auth: dict[str, str], after: int) -> list[dict[str, Any]]:
    page = httpx.get(f"{base}/api/v1/tables/{table_id}/events?after={after}", headers=auth).json()
    assert not page["more"]
    return list(page["events"])


def _event_ids(base: str, table_id: int, auth: dict[str, str], after: int) -> list[str]:
    """The stream ids of the seat's events after `after`, from the table's log (GraphQL's `events`)."""
    query = (
        "query($t: Int!, $a: Int!) { table(id: $t) "
        "{ events(after: $a) { more events { ... on StreamEvent { id } } } } }"
    )
    variables = {"t": table_id, "a": after}
    answer = httpx.post(f"{base}/graphql/", json={"query": query, "variables": variables}, headers=auth)
    page = answer.json()["data"]["table"]["events"]
    assert not page["more"]
    return [e["id"] for e in page["events"]]


# -- the followers ---------------------------------------------------------------------------------


class Follower(threading.Thread):
    """Follows the table through the proxy, reconnecting (with the last id received) whenever its
    connection breaks; keeps every message in order."""

    def __init__(self, base: str, token: str, table_id: int) -> None:
        super().__init__(daemon=True)
        self.base, self.token, self.table_id = base, token, table_id
        self.messages: list[dict[str, Any]] = []  # {"id", "kind", "seq", "type"}
        self.connections = 0
        self.drops: list[str] = []
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self.resume = threading.Event()  # cleared: after a drop, wait to reconnect until it is set
        self.resume.set()

    @property
    def last_id(self) -> str | None:
        return self.messages[-1]["id"] if self.messages else None

    def reached(self, version: int) -> bool:
        assert self.error is None, self.error
        return any(m["seq"] >= version for m in list(self.messages))

    def logged(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["kind"] not in STREAM_ONLY]


class SubscriptionFollower(Follower):
    """A GraphQL subscription (`tableEvents`) over WebSocket, gql's WebsocketsTransport at its defaults."""

    def run(self) -> None:
        try:
            asyncio.run(self._follow())
        except BaseException as exc:  # reported by the test
            self.error = exc

    async def _follow(self) -> None:
        while not self.stop.is_set() and len(self.drops) < 50:
            task = asyncio.create_task(self._connection())
            while not task.done() and not self.stop.is_set():
                await asyncio.sleep(0.02)
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
                return
            if task.exception() is None:
                return  # the subscription completed
            self.drops.append(repr(task.exception()))
            await asyncio.sleep(0.1)
            while not self.resume.is_set() and not self.stop.is_set():
                await asyncio.sleep(0.02)

    async def _connection(self) -> None:
        logging.getLogger("gql.transport.websockets").setLevel(logging.WARNING)  # not every frame
        url = self.base.replace("http://", "ws://") + "/graphql/"
        transport = WebsocketsTransport(url=url, init_payload={"Authorization": f"Bearer {self.token}"})
        async with Client(transport=transport, fetch_schema_from_transport=False) as session:
            self.connections += 1
            variables = {"t": self.table_id, "after": self.last_id}
            async for data in session.subscribe(SUBSCRIPTION, variable_values=variables):
                m = data["tableEvents"]
                seq = m.get("seq", int(m["id"].split(":")[0]))
                message = {"id": m["id"], "kind": m["__typename"], "seq": seq, "type": m.get("type")}
                self.messages.append(message)


class StreamFollower(Follower):
    """The SSE stream (`GET tables/{id}/stream`) with httpx-sse, resuming with Last-Event-ID."""

    def run(self) -> None:
        try:
            while not self.stop.is_set() and len(self.drops) < 50:
                try:
                    self._connection()
                    return
                except httpx.HTTPError as exc:
                    self.drops.append(repr(exc))
                    time.sleep(0.1)
                    self.resume.wait(30)
        except BaseException as exc:  # reported by the test
            self.error = exc

    def _connection(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        if self.last_id is not None:
            headers["Last-Event-ID"] = self.last_id
        url = f"{self.base}/api/v1/tables/{self.table_id}/stream"
        client = httpx.Client(timeout=httpx.Timeout(10, read=30))
        with client, connect_sse(client, "GET", url, headers=headers) as source:
            if source.response.status_code == 502:
                raise httpx.RemoteProtocolError("502 from the proxy")
            assert source.response.status_code == 200, source.response.read()
            self.connections += 1
            for sse in source.iter_sse():
                if self.stop.is_set():
                    return
                event = sse.json()
                seq = event["state"]["version"] if sse.event == "state" else int(event["seq"])
                message = {"id": sse.id, "kind": sse.event, "seq": seq, "type": event["type"], "event": event}
                self.messages.append(message)


@pytest.fixture
def followers() -> Iterator[list[Follower]]:
    started: list[Follower] = []
    yield started
    for follower in started:
        follower.stop.set()
    for follower in started:
        follower.join(5)


# -- the test ----------------------------------------------------------------------------------------


def _holder(cluster: Cluster, measure: Callable[[Backend], float], before: dict[int, float]) -> Backend:
    """The one process whose `measure` went up since `before`: the one holding the follower's connection."""
    [holder] = [b for b in cluster.alive() if measure(b) > before.get(b.port, 0)]
    return holder


@pytest.mark.parametrize("kind", ["subscription", "sse"])
def test_a_follower_through_the_proxy_gets_every_move_and_resumes_exactly_when_its_process_dies(
    cluster: Cluster, followers: list[Follower], kind: str
) -> None:
    base = cluster.base
    BAD_GATEWAYS.clear()
    table_id, people = _table_of_four(base)
    token, auth = people[0]
    play = Play(base, table_id, people)
    measure = Backend.open_sockets if kind == "subscription" else Backend.stream_opens
    before = {b.port: measure(b) for b in cluster.backends}
    kinds: dict[str, type[Follower]] = {"subscription": SubscriptionFollower, "sse": StreamFollower}
    follower = kinds[kind](base, token, table_id)
    followers.append(follower)
    follower.start()
    _until(lambda: bool(follower.messages), 15, f"the first message: {follower.drops}")
    first = follower.messages[0]
    assert first["kind"] in ("TableStateEvent", "state"), first
    start = first["seq"]
    holder = _holder(cluster, measure, before)

    # (a) The moves go through the proxy to every process in turn; the follower, held by one of them,
    # gets each move's events, whichever process served it.
    served = {b.port: b.actions_served() for b in cluster.backends}
    version, plays = start, 0
    while plays < KILL_AFTER_PLAYS:
        version, game, action = play.act()
        plays += action == "play"
        _until(lambda v=version: follower.reached(v), 5, f"the follower at version {version}")
    moves_served = [b.actions_served() - served[b.port] for b in cluster.backends]
    assert all(n > 0 for n in moves_served), moves_served  # every process served moves: no stickiness
    others = sum(b.actions_served() - served[b.port] for b in cluster.backends if b is not holder)
    assert others > 0  # moves served by processes that do not hold the follower's connection
    assert follower.connections == 1 and not follower.drops, follower.drops

    # (b) Its process dies mid-hand; moves go on while the follower is away (it waits for them before
    # reconnecting, so that it must catch up on them); it comes back through the proxy to another
    # process, resuming after the last id it received.
    before = {b.port: measure(b) for b in cluster.backends}
    follower.resume.clear()
    os.killpg(holder.proc.pid, signal.SIGKILL)
    holder.proc.wait()
    _until(lambda: bool(follower.drops), 10, "the follower noticed its connection broke")
    killed_at, received = version, len(follower.messages)
    for _ in range(MOVES_WHILE_AWAY):
        version, game, _ = play.act()
    follower.resume.set()
    _until(lambda: follower.connections >= 2, 20, f"the follower reconnected: {follower.drops}")
    _until(lambda v=version: follower.reached(v), 10, f"the follower caught up to {version}")
    missed = follower.messages[received:]
    assert missed[0]["seq"] == killed_at + 1, missed[:3]  # resumed right after its last event...
    away = range(killed_at + 1, version + 1)
    assert {m["seq"] for m in missed if m["kind"] not in STREAM_ONLY} == set(away)  # ...and caught up
    assert holder not in cluster.alive()
    assert _holder(cluster, measure, before) is not holder
    hand = game["hand_number"]
    while game["hand_number"] == hand:  # the rest of the hand, through the two processes left
        version, game, _ = play.act()
        _until(lambda v=version: follower.reached(v), 5, f"the follower at version {version}")
    time.sleep(0.3)  # anything repeated would have arrived by now
    follower.stop.set()
    assert follower.error is None, follower.error

    # Everything received, across both connections, is exactly the seat's event log: 0 lost, 0 repeated.
    logged = follower.logged()
    expected_ids = _event_ids(base, table_id, auth, start)
    got_ids = [m["id"] for m in logged]
    lost = len(set(expected_ids) - set(got_ids))
    keys = [(m["kind"], m["id"]) for m in follower.messages]  # the log's events, your_turn and state
    repeated = len(keys) - len(set(keys))
    assert (lost, repeated) == (0, 0), f"events lost / repeated at resume: {lost} / {repeated}"
    assert got_ids == expected_ids
    rest = _rest_events(base, table_id, auth, start)
    assert [(m["seq"], m["type"]) for m in logged] == [(e["seq"], e["type"]) for e in rest]
    if kind == "sse":  # the whole events, field for field
        assert [{k: v for k, v in m["event"].items() if k not in ("id", "table")} for m in logged] == rest
    assert follower.connections == 2 and len(follower.drops) == 1, follower.drops
    assert not BAD_GATEWAYS, BAD_GATEWAYS  # the proxy sent every request to a live process
    assert any(m["type"] == "hand_scored" for m in logged)  # the whole hand, across the kill
    print(f"\n{kind}: events lost / repeated at resume: {lost} / {repeated} ({len(got_ids)} events)")


def test_hints_and_reviews_go_to_the_advice_replica_and_to_the_web_when_it_is_down(cluster: Cluster) -> None:
    """deploy/nginx.conf sends a seat's hint and a hand's review (REST) to the advice upstream and
    everything else to the web replicas; with no advice replica answering, the web replicas serve
    them (the upstream's `backup`), so a hint is never refused for the proxy's sake."""
    table, people = _table_of_four(cluster.base)
    auth = people[0][1]
    advised = {"/hint": f"/api/v1/tables/{table}/hint", "/review": f"/api/v1/tables/{table}/hands/1/review"}
    before = {route: [b.served(route) for b in cluster.backends] for route in advised}
    for path in advised.values():
        for _ in range(4):  # more than the web replicas: round-robin would reach each of them
            answer = httpx.get(cluster.base + path, headers=auth, timeout=10)
            assert answer.status_code in (409, 422) and answer.json()["code"], answer.text
    for route in advised:
        assert cluster.advice.served(route) == 4, route
        assert [b.served(route) for b in cluster.backends] == before[route], route
    reads = [b.served("tables/<id:table_id>") for b in cluster.backends]
    for _ in range(4):  # anything else: the web replicas only
        assert httpx.get(f"{cluster.base}/api/v1/tables/{table}", headers=auth).status_code == 200
    assert sum(b.served("tables/<id:table_id>") for b in cluster.backends) == sum(reads) + 4
    assert cluster.advice.served("tables/<id:table_id>") == 0

    os.killpg(cluster.advice.proc.pid, signal.SIGKILL)
    cluster.advice.proc.wait()
    web_before = sum(b.served("/hint") for b in cluster.backends)
    answer = httpx.get(cluster.base + advised["/hint"], headers=auth, timeout=10)
    assert answer.status_code == 422 and answer.json()["code"] == "hints_not_allowed", answer.text
    assert sum(b.served("/hint") for b in cluster.backends) == web_before + 1
