"""Event streams at scale: thousands of open streams on one uvicorn web process while their tables play.

    python bench/streams.py                                   # 2,000 streams over 200 tables, 60 s
    python bench/streams.py --streams 40 --tables 4 --duration 3   # a smoke run

Needs PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/bench_streams: a scratch
test database is made beside it and dropped) and Redis (REDIS_URL, default redis://127.0.0.1:6379/0).
Each table has four people, no bots and no clocks; this process plays them through games.services at
`--rate` moves a second (in a thread, each move's commit time taken in an on_commit hook) while one
uvicorn process serves the streams: per table, each seat's table stream, two of the seats' player
streams (`me/stream`) and spectators' table streams, read by a light asyncio client (raw sockets)
in this process. First a few streams only (`--baseline-streams`), then all of them, each for
`--duration` seconds of play. Figures:

- redis_connections: TCP connections from the web process to Redis (one shared pub/sub plus the pooled
  clients of the rate limiter, cache and publisher: it does not grow with the streams)
- rss_per_stream_kb: the web process's resident memory added by the streams, per stream
- latency_p50_ms / latency_p99_ms: a move's commit to its first event at a client, over every
  (stream, move); baseline_latency_*: the same with only the baseline streams open; and the ratio
- db_reads_per_change: the streams' database reads (hearts_stream_reads_total, shared and own) per
  table change in the measured window; carried_per_change: the changes a feed took from their
  wake-up instead (games.changes); poll_reads_per_s: the batched safety poll
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/graphql.py is named like the `graphql` package: keep this folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_streams")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import close_old_connections, connection, transaction  # noqa: E402

from bots.strategy import decide  # noqa: E402
from games import services  # noqa: E402
from games.accounts import player_create  # noqa: E402
from games.engine import GAME_OVER, state_from_dict, view  # noqa: E402
from hearts_service.celery import app  # noqa: E402

NO_CLOCKS = {"pass": None, "play": None, "moon": None}


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- the tables and who watches them ----------------------------------------------------------


@dataclass
class Viewer:
    table: int
    token: str
    path: str
    arrived: dict[tuple[int, int], float] = field(default_factory=dict)  # (table, seq) -> first time
    opened: asyncio.Event = field(default_factory=asyncio.Event)


def make_tables(count: int, per_table: int) -> tuple[list[int], list[Viewer]]:
    """`count` started tables of four people; per table `per_table` streams: the four seats' table
    streams, then two seats' player streams, then spectators."""
    spectator = player_create(app=None, name="spectator")[1]
    tables, viewers = [], []
    for t in range(count):
        out = services.table_create(options={"target_score": 1000}, clocks=NO_CLOCKS)
        assert out.table is not None
        table_id = out.table.pk
        tokens = []
        for seat in range(4):
            player, token = player_create(app=None, name=f"t{t}s{seat}")
            services.seat_join(table_id=table_id, player=player, position=seat)
            tokens.append(token)
        tables.append(table_id)
        stream = f"/api/v1/tables/{table_id}/stream"
        plan = [(tokens[s], stream) for s in range(4)] + [(tokens[s], "/api/v1/me/stream") for s in (0, 1)]
        while len(plan) < per_table:
            plan.append((spectator, stream))
        viewers += [Viewer(table_id, token, path) for token, path in plan[:per_table]]
    return tables, viewers


class Driver(threading.Thread):
    """Plays the tables at `rate` moves a second (the seat to act, the basic bot's choice), and
    keeps each move's commit time."""

    def __init__(self, tables: list[int], rate: float) -> None:
        super().__init__(daemon=True)
        self.tables, self.rate = tables, rate
        self.committed: dict[tuple[int, int], float] = {}
        self.stop = threading.Event()
        self.moves = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        from games.models import Table  # the bench's own process: it may read the ORM

        rng = random.Random(1)
        states = {t.pk: t.state for t in Table.objects.filter(pk__in=self.tables)}
        start, n = time.monotonic(), 0
        try:
            while not self.stop.is_set():
                n += 1
                pause = start + n / self.rate - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                table_id = rng.choice(self.tables)
                state = state_from_dict(states[table_id])
                if state.phase == GAME_OVER:
                    continue
                seat = state.to_act()[0]
                action = decide(view(state, seat), "basic", rng)
                stamp: list[float] = []
                with transaction.atomic():  # the commit time, taken before the wake-up is published
                    transaction.on_commit(lambda stamp=stamp: stamp.append(time.time()))
                    out = services.action_submit(table_id=table_id, action=action, position=seat)
                assert out.table is not None
                states[table_id] = out.table.state
                self.committed[(table_id, out.table.version)] = stamp[0]
                self.moves += 1
        except BaseException as exc:
            self.error = exc
        finally:
            close_old_connections()


# -- the client ---------------------------------------------------------------------------------


async def follow(port: int, viewer: Viewer, stop: asyncio.Event) -> None:
    """One NDJSON stream over a raw socket (HTTP/1.0: no chunked framing), noting when each
    move's first event arrives."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = (
        f"GET {viewer.path}?format=ndjson HTTP/1.0\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {viewer.token}\r\n\r\n"
    )
    writer.write(request.encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200") and not head.startswith(b"HTTP/1.0 200"):
        raise RuntimeError(f"stream answered {head[:60]!r}")
    try:
        while not stop.is_set():
            line = await reader.readline()
            if not line:
                return
            now = time.time()
            if not line.startswith(b"{"):
                continue
            event = json.loads(line)
            kind = event["type"]
            if kind in ("state", "tables"):
                viewer.opened.set()
            elif kind != "keepalive":
                viewer.arrived.setdefault((event["table"], event["seq"]), now)
    finally:
        writer.close()


def latencies(viewers: list[Viewer], committed: dict[tuple[int, int], float], since: float) -> list[float]:
    out = []
    for viewer in viewers:
        for key, arrived in viewer.arrived.items():
            done = committed.get(key)
            if done is not None and done >= since:
                out.append((arrived - done) * 1000)
    return out


# -- the web process ------------------------------------------------------------------------


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def tcp_connections_to(pid: int, port: int) -> int:
    """Established TCP connections of process `pid` to `port` (from /proc)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for row in path.read_text().splitlines()[1:]:
            cols = row.split()
            remote_port = int(cols[2].rsplit(":", 1)[1], 16)
            if remote_port == port and cols[3] == "01" and cols[9] in inodes:
                count += 1
    return count


def stream_reads(base: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
        text = response.read().decode()
    found = re.findall(r'^hearts_stream_reads_total\{kind="(\w+)"\} (\S+)$', text, re.M)
    return {kind: float(value) for kind, value in found}


# The WebSocket flags of make run and the image (tests/live.py, WS_FLAGS).
WS_FLAGS = "--ws websockets --ws-ping-interval 10 --ws-ping-timeout 5 --ws-per-message-deflate false"


def start_web(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "uvicorn", "hearts_service.asgi:application", "--port", str(port)]
    cmd += ["--lifespan", "off", "--log-level", "warning", "--backlog", "4096"]
    cmd += WS_FLAGS.split()
    out = open(log, "ab")  # noqa: SIM115 (lives as long as the server)
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                return proc
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"bench: the web server did not start: {log.read_text()[-2000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# -- the run ----------------------------------------------------------------------------------


async def open_streams(
    port: int, viewers: list[Viewer], stop_: asyncio.Event, tasks: list[asyncio.Task[None]]
) -> None:
    """Open these streams 100 at a time, each batch until its first events have arrived."""
    for i in range(0, len(viewers), 100):
        batch = viewers[i : i + 100]
        tasks += [asyncio.create_task(follow(port, v, stop_)) for v in batch]
        await asyncio.wait_for(asyncio.gather(*(v.opened.wait() for v in batch)), 120)


async def measure(
    args: argparse.Namespace, port: int, pid: int, driver: Driver, viewers: list[Viewer], baseline: int
) -> dict[str, float]:
    base = f"http://127.0.0.1:{port}"
    stop_ = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    figures: dict[str, float] = {}
    rss_before = rss_kb(pid)
    await open_streams(port, viewers[:baseline], stop_, tasks)
    since = time.time()
    await asyncio.sleep(args.duration)
    few = latencies(viewers[:baseline], driver.committed, since)
    figures["baseline_streams"] = baseline
    figures["baseline_latency_p50_ms"] = _pct(few, 0.5)
    figures["baseline_latency_p99_ms"] = _pct(few, 0.99)
    rss_few = rss_kb(pid)

    await open_streams(port, viewers[baseline:], stop_, tasks)
    await asyncio.sleep(1.0)  # settle: the last batch's first reads are done
    rss_all = rss_kb(pid)
    reads_before, moves_before, since = stream_reads(base), driver.moves, time.time()
    await asyncio.sleep(args.duration)
    reads_after, moves_after, elapsed = stream_reads(base), driver.moves, time.time() - since
    redis_port = int(settings.REDIS_URL.rsplit(":", 1)[1].split("/")[0])
    figures["redis_connections"] = tcp_connections_to(pid, redis_port)
    stop_.set()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    errors = [t.exception() for t in tasks if not t.cancelled() and t.exception()]
    if errors:
        raise RuntimeError(f"{len(errors)} streams failed: {errors[0]!r}")

    every = latencies(viewers, driver.committed, since)
    delivered = sum(1 for v in viewers for key in v.arrived if driver.committed.get(key, 0) >= since)
    changes = moves_after - moves_before
    kinds = ("shared", "carried", "viewer", "poll")
    delta = {k: reads_after.get(k, 0) - reads_before.get(k, 0) for k in kinds}
    figures.update(
        {
            "streams": len(viewers),
            "tables": args.tables,
            "moves_per_s": changes / elapsed,
            "events_delivered": delivered,
            "rss_before_streams_mb": rss_before / 1024,
            "rss_per_stream_kb": (rss_all - rss_few) / max(1, len(viewers) - baseline),
            "latency_p50_ms": _pct(every, 0.5),
            "latency_p99_ms": _pct(every, 0.99),
            "latency_max_ms": max(every, default=float("nan")),
            "table_changes": changes,
            "shared_reads": delta["shared"],
            "viewer_reads": delta["viewer"],
            "poll_reads_per_s": delta["poll"] / elapsed,
            "db_reads_per_change": (delta["shared"] + delta["viewer"]) / max(1, changes),
            "carried_per_change": delta["carried"] / max(1, changes),
        }
    )
    figures["latency_p99_vs_baseline_ratio"] = figures["latency_p99_ms"] / figures["baseline_latency_p99_ms"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=int(os.environ.get("BENCH_STREAMS", "2000")))
    parser.add_argument("--tables", type=int, default=int(os.environ.get("BENCH_TABLES", "200")))
    parser.add_argument("--duration", type=float, default=float(os.environ.get("BENCH_STREAM_SECONDS", "60")))
    parser.add_argument("--rate", type=float, default=50.0, help="moves a second over all tables")
    parser.add_argument("--baseline-streams", type=int, default=20)
    args = parser.parse_args()
    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        raise SystemExit("bench/streams.py needs DATABASE_URL (PostgreSQL) and REDIS_URL")
    per_table = max(1, args.streams // args.tables)
    baseline = min(args.baseline_streams, args.streams // 2)
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(
        resource.RLIMIT_NOFILE, (hard, hard)
    )  # the server and this client: a socket per stream
    app.conf.task_always_eager = False  # no bots and no clocks: nothing is queued

    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)  # a killed run's is replaced
    db = connection.settings_dict
    host = f"{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{host}/{db['NAME']}",
        "RATE_LIMITS_ENABLED": "false",  # thousands of streams opened in seconds from one address
    }
    log_dir = Path(tempfile.mkdtemp(prefix="bench-streams-"))
    web = None
    driver = None
    try:
        tables, viewers = make_tables(args.tables, per_table)
        random.Random(2).shuffle(viewers)  # the baseline streams are spread over the tables
        port = _free_port()
        web = start_web(env, port, log_dir / "web.log")
        driver = Driver(tables, args.rate)
        driver.start()
        figures = asyncio.run(measure(args, port, web.pid, driver, viewers, baseline))
        if driver.error is not None:
            raise driver.error
    finally:
        if driver is not None:
            driver.stop.set()
            driver.join(30)
        if web is not None:
            stop(web)
        close_old_connections()
        connection.creation.destroy_test_db(old_name, verbosity=0)
    for name, value in figures.items():
        print(
            f"{name}: {value:.3f}"
            if isinstance(value, float) and not value.is_integer()
            else f"{name}: {value:.0f}"
        )


if __name__ == "__main__":
    main()
