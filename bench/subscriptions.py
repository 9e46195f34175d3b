"""GraphQL subscriptions at scale: thousands of open subscriptions on one uvicorn web process while their
tables play, beside the same number of SSE streams, and a play over the socket against an HTTP POST.

    python bench/subscriptions.py                                    # 2,000 subscriptions, 200 tables
    python bench/subscriptions.py --streams 40 --tables 4 --duration 2 --plays 5   # a smoke run

Needs PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/bench_subscriptions: a
scratch test database is made beside it and dropped) and Redis (REDIS_URL, default
redis://127.0.0.1:6379/0). The tables, the viewers and the move-making thread are bench/streams.py's
(imported from it): per table the four seats' table events, two seats' player events and spectators,
`--streams` in all, played at `--rate` moves a second through games.services, each move's commit time
taken in an on_commit hook. Three phases, each on a fresh uvicorn process with the same settings
(the defaults, plus rate limits off and the socket caps raised: thousands of subscriptions opened in
seconds from one address and, for the spectators, one token):

1. plays (before the tables start moving, on a table of its own): the same `playCard` mutation sent
   over a `graphql-transport-ws` socket (permessage-deflate as the client offers it, and without) and
   POSTed to /graphql/ over a kept-alive HTTP/1.1 connection, and the same play POSTed to the REST
   actions endpoint; interleaved play by play in a shuffled order, `--plays` of each kind. Client
   time from the first byte sent to the answer read (the socket: its `next` message), and the web
   process's CPU time (all its threads, /proc/<pid>/task/*/schedstat) over the same span.
2. subscriptions: `tableEvents` / `myEvents` over `graphql-transport-ws` sockets (the `websockets`
   library speaking the protocol by hand; `--per-socket` subscriptions of one token on a socket, 1 by
   default: one socket per subscription, as an SSE stream is one connection per stream); first
   `--baseline-streams` only for `--duration` s, then all of them for another `--duration` s.
3. the same viewers as SSE streams (bench/streams.py's client and measure), for the memory and latency
   comparison in the same run.

Figures: redis_connections, latency_p50_ms / latency_p99_ms (a move's commit to its first message at
a subscriber, over every (subscription, move) of the window), rss_per_subscription_kb, and the same of
the SSE phase (`sse_*`); socket_play_vs_http_post_ratio (median client time of the play over the
socket / the same mutation POSTed), and the CPU per play of each kind.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_subscriptions")
_spec = importlib.util.spec_from_file_location(
    "bench_streams", Path(__file__).resolve().parent / "streams.py"
)
assert _spec is not None and _spec.loader is not None
streams = importlib.util.module_from_spec(_spec)
sys.modules["bench_streams"] = streams  # its dataclasses look their module up
_spec.loader.exec_module(streams)  # sets up Django (its environment defaults, ours first)

from django.conf import settings  # noqa: E402
from django.db import close_old_connections, connection  # noqa: E402
from websockets.asyncio.client import ClientConnection, connect  # noqa: E402

from bots.strategy import decide  # noqa: E402
from games import services  # noqa: E402
from games.accounts import player_create  # noqa: E402
from games.engine import state_from_dict, view  # noqa: E402
from hearts_service.celery import app  # noqa: E402

Viewer = streams.Viewer
PROTOCOL = "graphql-transport-ws"
FIELDS = "__typename id ... on CardPlayedEvent { seat card }"
TABLE_EVENTS = f"subscription($t: Int!) {{ tableEvents(tableId: $t) {{ {FIELDS} }} }}"
MY_EVENTS = f"subscription {{ myEvents {{ {FIELDS} }} }}"
FIRST = ("TableStateEvent", "MyTablesEvent")
PLAY = """mutation($t: Int!, $c: String!, $v: Int) { playCard(tableId: $t, card: $c, expectedVersion: $v) {
  table { version status game { hand trick { seat card } legalActions { cards } toAct } }
  errors { code } } }"""
KINDS = ("socket", "socket_no_deflate", "http_post", "rest_post")
WARM_UP = 3  # the first plays of each kind are not counted (first use of each code path)
# The web process's settings beyond the defaults: thousands of sockets and subscriptions opened in
# seconds from one address, 800 of them (the spectators') with one token.
SERVER_ENV = {
    "RATE_LIMITS_ENABLED": "false",
    "GRAPHQL_WS_SOCKETS_PER_TOKEN": "100000",
    "GRAPHQL_WS_SUBSCRIPTIONS_PER_TOKEN": "100000",
    "GRAPHQL_WS_SOCKETS_PER_ADDRESS": "100000",
}


def ws_url(port: int) -> str:
    return f"ws://127.0.0.1:{port}/graphql/"


async def ws_open(port: int, token: str, deflate: bool = True) -> ClientConnection:
    """A graphql-transport-ws socket, acknowledged. `deflate`: offer permessage-deflate, as browsers,
    `gql` and the `websockets` library do by default."""
    ws = await connect(
        ws_url(port),
        subprotocols=[PROTOCOL],  # type: ignore[list-item]
        compression="deflate" if deflate else None,
        ping_interval=None,  # the server pings (graphql-transport-ws `ping`, answered below)
        open_timeout=120,
        max_size=None,
    )
    await ws.send(json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}))
    ack = json.loads(await asyncio.wait_for(ws.recv(), 60))
    if ack.get("type") != "connection_ack":
        raise RuntimeError(f"connection_init answered {ack!r}")
    return ws


# -- phase 2: subscriptions ---------------------------------------------------------------------


def _key(viewer: Viewer, event_id: str) -> tuple[int, int]:
    """(table, seq) of a message: tableEvents ids are `<seq>[:<n>]`; myEvents ids the position at
    each of the player's tables, `<table>=<seq>[:<n>]` (one table per player here)."""
    if "=" in event_id:
        table, _, position = event_id.partition("=")
        return int(table), int(position.split(":")[0])
    return viewer.table, int(event_id.split(":")[0])


async def hold(port: int, viewers: list[Viewer], stop: asyncio.Event, deflate: bool) -> None:
    """One socket carrying these viewers' subscriptions (one token), noting when each move's first
    message arrives at each of them."""
    ws = await ws_open(port, viewers[0].token, deflate)
    try:
        for n, viewer in enumerate(viewers):
            me = viewer.path.endswith("/me/stream")
            payload = (
                {"query": MY_EVENTS} if me else {"query": TABLE_EVENTS, "variables": {"t": viewer.table}}
            )
            await ws.send(json.dumps({"type": "subscribe", "id": str(n), "payload": payload}))
        async for raw in ws:
            now = time.time()
            message = json.loads(raw)
            kind = message["type"]
            if kind == "next":
                body = message["payload"]
                if body.get("errors"):
                    raise RuntimeError(f"subscription answered {body['errors']!r}")
                event = next(iter(body["data"].values()))
                viewer = viewers[int(message["id"])]
                if event["__typename"] in FIRST:
                    viewer.opened.set()
                else:
                    viewer.arrived.setdefault(_key(viewer, event["id"]), now)
            elif kind == "ping":
                await ws.send('{"type":"pong"}')
            elif kind in ("error", "complete") and not stop.is_set():
                raise RuntimeError(f"subscription ended: {message!r}")
    finally:
        await ws.close()


def sockets_of(viewers: list[Viewer], per_socket: int) -> list[list[Viewer]]:
    """The viewers grouped by token, `per_socket` to a socket (a socket authenticates one token)."""
    by_token: dict[str, list[Viewer]] = defaultdict(list)
    for viewer in viewers:
        by_token[viewer.token].append(viewer)
    return [
        group[i : i + per_socket] for group in by_token.values() for i in range(0, len(group), per_socket)
    ]


async def open_subscriptions(
    port: int, groups: list[list[Viewer]], stop: asyncio.Event, tasks: list[asyncio.Task[None]], deflate: bool
) -> None:
    """Open these sockets 100 subscriptions at a time, each batch until its first messages arrived."""
    batch: list[list[Viewer]] = []
    for n, group in enumerate(groups):
        batch.append(group)
        if sum(map(len, batch)) >= 100 or n == len(groups) - 1:
            tasks += [asyncio.create_task(hold(port, g, stop, deflate)) for g in batch]
            waits = [v.opened.wait() for g in batch for v in g]
            done = asyncio.ensure_future(asyncio.gather(*waits))
            await asyncio.wait([done, *tasks], timeout=120, return_when=asyncio.FIRST_COMPLETED)
            failed = [t for t in tasks if t.done() and not t.cancelled() and t.exception()]
            if failed:
                done.cancel()
                raise RuntimeError(f"a socket failed: {failed[0].exception()!r}")
            if not done.done():
                done.cancel()
                raise RuntimeError("subscriptions did not open within 120 s")
            batch = []


async def measure_subscriptions(
    args: argparse.Namespace,
    port: int,
    pid: int,
    driver: Any,
    viewers: list[Viewer],
    baseline: int,
    window: list[float],
) -> dict[str, float]:
    """bench/streams.py's `measure`, over subscriptions; `window` gets the measured window's start
    and end."""
    base = f"http://127.0.0.1:{port}"
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    figures: dict[str, float] = {}
    few_groups = sockets_of(viewers[:baseline], args.per_socket)
    all_groups = sockets_of(viewers[baseline:], args.per_socket)
    await open_subscriptions(port, few_groups, stop, tasks, not args.no_deflate)
    since = time.time()
    await asyncio.sleep(args.duration)
    few = streams.latencies(viewers[:baseline], driver.committed, since)
    figures["baseline_subscriptions"] = baseline
    figures["baseline_latency_p50_ms"] = streams._pct(few, 0.5)
    figures["baseline_latency_p99_ms"] = streams._pct(few, 0.99)
    rss_few = streams.rss_kb(pid)

    await open_subscriptions(port, all_groups, stop, tasks, not args.no_deflate)
    await asyncio.sleep(1.0)  # settle: the last batch's first reads are done
    rss_all = streams.rss_kb(pid)
    reads_before, moves_before, since = streams.stream_reads(base), driver.moves, time.time()
    await asyncio.sleep(args.duration)
    reads_after, moves_after, elapsed = streams.stream_reads(base), driver.moves, time.time() - since
    window += [since, since + elapsed]
    redis_port = int(settings.REDIS_URL.rsplit(":", 1)[1].split("/")[0])
    figures["redis_connections"] = streams.tcp_connections_to(pid, redis_port)
    stop.set()
    errors = [t.exception() for t in tasks if t.done() and not t.cancelled() and t.exception()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    if errors:
        raise RuntimeError(f"{len(errors)} sockets failed: {errors[0]!r}")

    every = streams.latencies(viewers, driver.committed, since)
    delivered = sum(1 for v in viewers for key in v.arrived if driver.committed.get(key, 0) >= since)
    changes = moves_after - moves_before
    kinds = ("shared", "carried", "viewer", "poll")
    delta = {k: reads_after.get(k, 0) - reads_before.get(k, 0) for k in kinds}
    figures.update(
        {
            "subscriptions": len(viewers),
            "sockets": len(few_groups) + len(all_groups),
            "tables": args.tables,
            "moves_per_s": changes / elapsed,
            "events_delivered": delivered,
            "rss_per_subscription_kb": (rss_all - rss_few) / max(1, len(viewers) - baseline),
            "latency_p50_ms": streams._pct(every, 0.5),
            "latency_p99_ms": streams._pct(every, 0.99),
            "latency_max_ms": max(every, default=float("nan")),
            "table_changes": changes,
            "db_reads_per_change": (delta["shared"] + delta["viewer"]) / max(1, changes),
            "carried_per_change": delta["carried"] / max(1, changes),
        }
    )
    figures["latency_p99_vs_baseline_ratio"] = figures["latency_p99_ms"] / figures["baseline_latency_p99_ms"]
    return figures


# -- phase 1: a play over the socket against an HTTP POST ------------------------------------------


def server_cpu_ns(pid: int) -> int:
    """CPU time of every thread of the process so far, in nanoseconds (schedstat: no 10 ms ticks)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):  # a thread that just ended
            total += int((task / "schedstat").read_text().split()[0])
    return total


class Http:
    """One kept-alive HTTP/1.1 connection (raw sockets: no client library's own cost in the times)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Http:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def post(self, path: str, token: str, body: bytes, extra: str = "") -> tuple[int, bytes]:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
        )
        self.writer.write(head.encode() + body)
        answer = await self.reader.readuntil(b"\r\n\r\n")
        status = int(answer.split(b" ", 2)[1])
        headers = {
            k.strip().lower(): v.strip()
            for k, _, v in (line.partition(b":") for line in answer.split(b"\r\n")[1:] if line)
        }
        if b"content-length" in headers:
            return status, await self.reader.readexactly(int(headers[b"content-length"]))
        chunks = []
        while True:  # chunked
            size = int((await self.reader.readline()).strip(), 16)
            chunks.append(await self.reader.readexactly(size + 2))
            if size == 0:
                return status, b"".join(c[:-2] for c in chunks)

    async def close(self) -> None:
        self.writer.close()


def make_play_table() -> tuple[int, list[str]]:
    out = services.table_create(options={"target_score": 1000}, clocks=streams.NO_CLOCKS)
    assert out.table is not None
    tokens = []
    for seat in range(4):
        player, token = player_create(app=None, name=f"play{seat}")
        services.seat_join(table_id=out.table.pk, player=player, position=seat)
        tokens.append(token)
    return out.table.pk, tokens


def _next_action(table_id: int, rng: random.Random) -> tuple[int, int, dict[str, Any]]:
    """The seat to act at the table, its version and the basic bot's choice (read from the database)."""
    from games.models import Table

    try:
        table = Table.objects.get(pk=table_id)
        state = state_from_dict(table.state)
        seat = state.to_act()[0]
        return seat, table.version, decide(view(state, seat), "basic", rng)
    finally:
        close_old_connections()


def _submit(table_id: int, seat: int, action: dict[str, Any]) -> None:
    try:
        services.action_submit(table_id=table_id, action=action, position=seat)
    finally:
        close_old_connections()


async def measure_plays(
    port: int, pid: int, table_id: int, tokens: list[str], plays: int
) -> dict[str, float]:
    """`plays` plays of each kind (after WARM_UP more), interleaved in a shuffled order; passes and
    moon choices go through games.services, untimed."""
    rng, order_rng = random.Random(3), random.Random(4)
    sockets = {
        "socket": [await ws_open(port, t, deflate=True) for t in tokens],
        "socket_no_deflate": [await ws_open(port, t, deflate=False) for t in tokens],
    }
    http = await Http.open(port)
    times: dict[str, list[float]] = {k: [] for k in KINDS}
    cpu: dict[str, list[float]] = {k: [] for k in KINDS}
    warm = dict.fromkeys(KINDS, 0)
    op = 0
    queue: list[str] = []
    try:
        while min(map(len, times.values())) < plays:
            seat, version, action = await asyncio.to_thread(_next_action, table_id, rng)
            if action["type"] != "play":
                await asyncio.to_thread(_submit, table_id, seat, action)
                continue
            if not queue:
                queue = list(KINDS)
                order_rng.shuffle(queue)
            kind = queue.pop()
            variables = {"t": table_id, "c": action["card"], "v": version}
            op += 1
            cpu0 = server_cpu_ns(pid)
            start = time.perf_counter()
            if kind.startswith("socket"):
                ws = sockets[kind][seat]
                await ws.send(
                    json.dumps(
                        {
                            "type": "subscribe",
                            "id": str(op),
                            "payload": {"query": PLAY, "variables": variables},
                        }
                    )
                )
                while True:
                    message = json.loads(await ws.recv())
                    if message["type"] == "next":
                        break
                    if message["type"] == "ping":
                        await ws.send('{"type":"pong"}')
                    else:
                        raise RuntimeError(f"the play over the socket answered {message!r}")
                elapsed = time.perf_counter() - start
                answer = message["payload"]
                complete = json.loads(await ws.recv())  # `complete` follows; not timed
                assert complete["type"] == "complete", complete
            elif kind == "http_post":
                body = json.dumps({"query": PLAY, "variables": variables}).encode()
                status, raw = await http.post("/graphql/", tokens[seat], body)
                elapsed = time.perf_counter() - start
                answer = json.loads(raw)
                assert status == 200, raw[:300]
            else:
                body = json.dumps({"type": "play", "card": action["card"]}).encode()
                status, raw = await http.post(
                    f"/api/v1/tables/{table_id}/actions", tokens[seat], body, f"If-Match: {version}\r\n"
                )
                elapsed = time.perf_counter() - start
                assert status == 200, raw[:300]
                answer = {"data": {"playCard": {"errors": None}}}
            cpu1 = server_cpu_ns(pid)
            if answer.get("errors") or answer["data"]["playCard"]["errors"]:
                raise RuntimeError(f"the play was refused: {answer!r}")
            warm[kind] += 1
            if warm[kind] <= WARM_UP:
                continue
            times[kind].append(elapsed * 1000)
            cpu[kind].append((cpu1 - cpu0) / 1e6)
    finally:
        await http.close()
        for group in sockets.values():
            for ws in group:
                await ws.close()
    figures: dict[str, float] = {}
    for kind in KINDS:
        figures[f"{kind}_play_ms"] = statistics.median(times[kind])
        figures[f"{kind}_play_p90_ms"] = streams._pct(times[kind], 0.9)
        figures[f"{kind}_play_server_cpu_ms"] = statistics.mean(cpu[kind])
    figures["plays_per_kind"] = plays
    figures["socket_play_vs_http_post_ratio"] = figures["socket_play_ms"] / figures["http_post_play_ms"]
    figures["socket_play_vs_rest_post_ratio"] = figures["socket_play_ms"] / figures["rest_post_play_ms"]
    figures["socket_no_deflate_play_vs_http_post_ratio"] = (
        figures["socket_no_deflate_play_ms"] / figures["http_post_play_ms"]
    )
    figures["socket_play_vs_http_post_server_cpu_ratio"] = (
        figures["socket_play_server_cpu_ms"] / figures["http_post_play_server_cpu_ms"]
    )
    return figures


# -- the run --------------------------------------------------------------------------------------


def _machine_busy() -> tuple[int, int]:
    """(busy, total) jiffies of all cores so far (/proc/stat)."""
    cols = [int(c) for c in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = cols[3] + cols[4]  # idle and iowait
    return sum(cols) - idle, sum(cols)


class Sampler(threading.Thread):
    """Every half second: the web process's CPU time, this process's, and the machine's, so that the
    CPU use of each phase's measured window can be read afterwards."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.pid = 0
        self.samples: list[tuple[float, int, int, float, int, int]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.5):
            pid = self.pid
            if pid:
                with contextlib.suppress(OSError):
                    busy, total = _machine_busy()
                    self.samples.append(
                        (time.time(), pid, server_cpu_ns(pid), time.process_time(), busy, total)
                    )

    def shares(self, start: float, end: float) -> dict[str, float]:
        """CPU use over [start, end], in per cent of one core (the machine's: of all its cores)."""
        inside = [s for s in self.samples if start <= s[0] <= end and s[1] == self.pid]
        if len(inside) < 2:
            return {}
        (t0, _, web0, own0, busy0, all0), (t1, _, web1, own1, busy1, all1) = inside[0], inside[-1]
        return {
            "web_cpu_percent": (web1 - web0) / 1e9 / (t1 - t0) * 100,
            "bench_cpu_percent": (own1 - own0) / (t1 - t0) * 100,
            "machine_cpu_busy_percent": (busy1 - busy0) / max(1, all1 - all0) * 100,
        }


def pairs(viewers: list[Viewer], committed: dict[tuple[int, int], float], since: float) -> list[list[float]]:
    """(commit time, latency in ms) of every delivery of the window, for --dump."""
    out = []
    for viewer in viewers:
        for key, arrived in viewer.arrived.items():
            done = committed.get(key)
            if done is not None and done >= since:
                out.append([round(done, 4), round((arrived - done) * 1000, 2)])
    return out


def fresh(viewers: list[Viewer]) -> list[Viewer]:
    return [Viewer(v.table, v.token, v.path) for v in viewers]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=int(os.environ.get("BENCH_STREAMS", "2000")))
    parser.add_argument("--tables", type=int, default=int(os.environ.get("BENCH_TABLES", "200")))
    parser.add_argument("--duration", type=float, default=float(os.environ.get("BENCH_STREAM_SECONDS", "60")))
    parser.add_argument("--rate", type=float, default=50.0, help="moves a second over all tables")
    parser.add_argument("--baseline-streams", type=int, default=20)
    parser.add_argument("--per-socket", type=int, default=1, help="subscriptions of one token per socket")
    parser.add_argument(
        "--no-deflate", action="store_true", help="subscribers do not offer permessage-deflate"
    )
    parser.add_argument("--plays", type=int, default=int(os.environ.get("BENCH_PLAYS", "200")))
    parser.add_argument("--skip-sse", action="store_true", help="no SSE phase (no comparison figures)")
    parser.add_argument(
        "--dump", type=Path, help="write each delivery's (commit time, latency ms) here as JSON"
    )
    args = parser.parse_args()
    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        raise SystemExit("bench/subscriptions.py needs DATABASE_URL (PostgreSQL) and REDIS_URL")
    per_table = max(1, args.streams // args.tables)
    baseline = min(args.baseline_streams, args.streams // 2)
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the server and this client: a socket each
    app.conf.task_always_eager = False  # no bots and no clocks: nothing is queued

    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)  # a killed run's is replaced
    db = connection.settings_dict
    host = f"{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    env = {**os.environ, "DATABASE_URL": f"postgres://{db['USER']}@{host}/{db['NAME']}", **SERVER_ENV}
    log_dir = Path(tempfile.mkdtemp(prefix="bench-subscriptions-"))
    web = driver = None
    figures: dict[str, float] = {}
    dump: dict[str, list[list[float]]] = {}
    sampler = Sampler()
    sampler.start()
    try:
        tables, viewers = streams.make_tables(args.tables, per_table)
        random.Random(2).shuffle(viewers)  # the baseline viewers are spread over the tables
        play_table, play_tokens = make_play_table()
        port = streams._free_port()

        web = streams.start_web(env, port, log_dir / "web-plays.log")
        figures.update(asyncio.run(measure_plays(port, web.pid, play_table, play_tokens, args.plays)))
        streams.stop(web)

        driver = streams.Driver(tables, args.rate)
        driver.start()
        web = streams.start_web(env, port, log_dir / "web-subscriptions.log")
        sampler.pid = web.pid
        subs, window = fresh(viewers), []
        figures.update(
            asyncio.run(measure_subscriptions(args, port, web.pid, driver, subs, baseline, window))
        )
        figures.update(sampler.shares(*window))
        dump["subscriptions"] = pairs(subs, driver.committed, window[0])
        streams.stop(web)
        if driver.error is not None:
            raise driver.error

        if not args.skip_sse:
            web = streams.start_web(env, port, log_dir / "web-sse.log")
            sampler.pid = web.pid
            sse_viewers = fresh(viewers)
            sse = asyncio.run(streams.measure(args, port, web.pid, driver, sse_viewers, baseline))
            end = time.time()  # its measured window: about the last `duration` seconds
            shares = sampler.shares(end - args.duration, end)
            figures.update({f"sse_{name}": value for name, value in shares.items()})
            dump["sse"] = pairs(sse_viewers, driver.committed, end - args.duration)
            streams.stop(web)
            if driver.error is not None:
                raise driver.error
            for name in (
                "redis_connections",
                "rss_per_stream_kb",
                "latency_p50_ms",
                "latency_p99_ms",
                "latency_max_ms",
                "baseline_latency_p99_ms",
                "events_delivered",
                "table_changes",
            ):
                figures[f"sse_{name}"] = sse[name]
            figures["rss_per_subscription_vs_sse_stream_ratio"] = (
                figures["rss_per_subscription_kb"] / sse["rss_per_stream_kb"]
            )
            figures["latency_p99_vs_sse_ratio"] = figures["latency_p99_ms"] / sse["latency_p99_ms"]
    finally:
        sampler.stop.set()
        if driver is not None:
            driver.stop.set()
            driver.join(30)
        if web is not None:
            streams.stop(web)
        close_old_connections()
        connection.creation.destroy_test_db(old_name, verbosity=0)
    if args.dump:
        args.dump.write_text(json.dumps(dump))
    for name, value in figures.items():
        print(
            f"{name}: {value:.3f}"
            if isinstance(value, float) and not value.is_integer()
            else f"{name}: {value:.0f}"
        )


if __name__ == "__main__":
    main()
