"""Load and faults on a production-like stack: uvicorn (2 workers), a Celery worker per lane
(clocks, people, bots at a lower CPU priority, webhooks) and beat, a PostgreSQL and a Redis of its
own, all on loopback. Many tables at once, half with a scripted person playing through REST and
the event stream (some of them absent, so clocks run out), half bots only (the flood of the bot
lane); while it runs, the people lane's worker is killed, Redis restarts, a web process is killed
and PostgreSQL restarts. Afterwards every table has finished or is still moving, and every move log
replays exactly.

    python bench/load.py                      # 200 tables, faults on (several minutes)
    python bench/load.py --tables 16 --check  # the CI size: exit 1 if an invariant fails
    python bench/load.py --capacity           # more person tables until play p99 passes 250 ms

Needs PostgreSQL's server programs (initdb, postgres: its own cluster in a scratch directory, on a
free port, so restarting it disturbs nothing else; as root it runs them as the `postgres` user)
and `redis-server` on the PATH (its own instance too).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import glob
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
# bench/graphql.py is named like the `graphql` package: keep this folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

os.chdir(ROOT)  # Celery puts the working directory on sys.path: it must not be bench/
DB_NAME = "hearts_load"
# The lanes' workers (docs/operations.md#lanes): name, queue, concurrency, CPU niceness.
LANES = [
    ("clocks", "clocks", 2, 0),
    ("people", "people", 2, 0),
    ("bots", "bots", 1, 10),
    ("webhooks", "webhooks", 1, 0),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Stack:
    """The processes under test, started and stopped like an operator would."""

    workdir: Path
    pg_port: int = field(default_factory=_free_port)
    redis_port: int = field(default_factory=_free_port)
    web_port: int = field(default_factory=_free_port)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.env = {
            **os.environ,
            "DATABASE_URL": self.db_url,
            "REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "HEARTS_ENV": "production",
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SECURE_SSL_REDIRECT": "false",
            "LOG_LEVEL": os.environ.get("LOAD_LOG_LEVEL", "WARNING"),  # INFO: every task in the logs
            "SWEEP_SECONDS": "1",
            # The scripted people do not watch: bots play unpaced unless BOT_PACE_MS is set (then
            # the person tables' bot cards wait that pace, docs/bots-and-clocks.md#pace).
            "BOT_PACE_MS": os.environ.get("BOT_PACE_MS", "0"),
        }

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def db_url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.pg_port}/{DB_NAME}"

    def _as_postgres(self, cmd: list[str]) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd

    def init_postgres(self) -> None:
        """A cluster of its own in a scratch directory (PostgreSQL's default settings)."""
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb")) or [shutil.which("initdb") or ""]
        if not found[-1]:
            raise RuntimeError("initdb not found: install PostgreSQL's server programs")
        self.pg_bin = Path(found[-1]).parent
        self.pg_data = Path(tempfile.mkdtemp(prefix="hearts-load-pg-"))
        if os.geteuid() == 0:
            shutil.chown(self.pg_data, "postgres", "postgres")
        initdb = [str(self.pg_bin / "initdb"), "-D", str(self.pg_data), "-U", "postgres"]
        subprocess.run(
            self._as_postgres([*initdb, "--auth=trust", "--no-sync", "-E", "UTF8"]),
            check=True,
            capture_output=True,
        )

    def start_postgres(self) -> None:
        server = [str(self.pg_bin / "postgres"), "-D", str(self.pg_data), "-p", str(self.pg_port)]
        server += ["-k", str(self.pg_data), "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300"]
        self._start("postgres", self._as_postgres(server))
        for _ in range(200):
            try:
                psycopg.connect(
                    f"postgresql://postgres@127.0.0.1:{self.pg_port}/postgres", connect_timeout=1
                ).close()
                return
            except psycopg.OperationalError:
                time.sleep(0.05)
        raise RuntimeError("postgres did not start: see " + str(self.workdir / "postgres.log"))

    def stop_postgres(self) -> None:
        """A fast shutdown, as `pg_ctl restart -m fast` does: every connection is cut."""
        proc = self.procs.pop("postgres")
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(30)

    def _start(self, name: str, cmd: list[str]) -> None:
        log = open(self.workdir / f"{name}.log", "ab")  # noqa: SIM115 (closed with the process)
        self.procs[name] = subprocess.Popen(
            cmd, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def start_redis(self) -> None:
        self._start(
            "redis",
            [
                "redis-server",
                "--port",
                str(self.redis_port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
        )
        for _ in range(100):
            try:
                with socket.create_connection(("127.0.0.1", self.redis_port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def start_worker(self, name: str, queue: str, concurrency: int, nice: int) -> None:
        celery = [sys.executable, "-m", "celery", "-A", "hearts_service"]
        opts = [f"--concurrency={concurrency}", "-Q", queue, "--without-gossip", "--without-mingle"]
        niced = ["nice", "-n", str(nice)] if nice else []
        level = ["-l", self.env["LOG_LEVEL"].lower()]
        self._start(name, [*niced, *celery, "worker", "-n", f"{name}@%h", *opts, *level])

    def start(self) -> None:
        self.init_postgres()
        self.start_postgres()
        admin = psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.pg_port}/postgres", autocommit=True)
        admin.execute(f'CREATE DATABASE "{DB_NAME}"')
        admin.close()
        self.start_redis()
        python = sys.executable
        subprocess.run([python, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=self.env, check=True)
        uvicorn = [python, "-m", "uvicorn", "hearts_service.asgi:application", "--workers", "2"]
        self._start(
            "web", [*uvicorn, "--port", str(self.web_port), "--lifespan", "off", "--log-level", "warning"]
        )
        for lane in LANES:
            self.start_worker(*lane)
        schedule = str(self.workdir / "beat-schedule")
        beat = [python, "-m", "celery", "-A", "hearts_service", "beat", "-s", schedule]
        self._start("beat", [*beat, "-l", self.env["LOG_LEVEL"].lower()])
        for _ in range(300):
            try:
                if httpx.get(self.base + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("the web server did not become ready: see " + str(self.workdir / "web.log"))

    def app_key(self) -> str:
        out = subprocess.run(
            [sys.executable, "manage.py", "create_app", "load"],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
        ).stdout.decode()
        return out.rsplit(":", 1)[1].strip()

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def kill_web_worker(self) -> int:
        """SIGKILL one of uvicorn's worker processes (its supervisor starts another)."""
        master = self.procs["web"].pid
        children = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout.split()
        workers = [int(c) for c in children]
        victim = max(workers)  # uvicorn's children: the workers (the last started)
        os.kill(victim, signal.SIGKILL)
        return victim

    def stop(self) -> None:
        for name in sorted(self.procs, key=lambda n: n == "postgres"):  # the database last
            proc = self.procs.pop(name)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT if name == "postgres" else signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        if getattr(self, "pg_data", None):
            shutil.rmtree(self.pg_data, ignore_errors=True)


@dataclass
class Figures:
    play_ms: list[float] = field(default_factory=list)
    play_spans: list[tuple[float, float]] = field(default_factory=list)  # perf_counter start, end
    db_down: tuple[float, float] | None = None  # perf_counter: PostgreSQL stopped, ready again
    healthz_ms: list[float] = field(default_factory=list)
    retries: int = 0
    statuses_5xx: dict[int, int] = field(default_factory=dict)  # answers the client retried
    transport_errors: int = 0  # no answer at all (a connection cut, or 15 s without a response)
    reconnects: int = 0
    refusals: dict[str, int] = field(default_factory=dict)
    faults: list[str] = field(default_factory=list)
    started: float = 0.0  # wall clock at the start of play


async def _post(
    client: httpx.AsyncClient, url: str, body: dict[str, Any], headers: dict[str, str], f: Figures
) -> Any:
    """POST with retries on transport errors and 5xx; the Idempotency-Key makes a retry safe."""
    for attempt in range(20):
        try:
            r = await client.post(url, json=body, headers=headers)
            if r.status_code < 500:
                return r
            f.statuses_5xx[r.status_code] = f.statuses_5xx.get(r.status_code, 0) + 1
        except httpx.HTTPError:
            f.transport_errors += 1
        f.retries += 1
        await asyncio.sleep(min(2.0, 0.1 * 2**attempt))
    raise RuntimeError(f"{url}: no answer after 20 attempts")


def _choose(legal: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    if legal["type"] == "pass":
        return {"type": "pass", "cards": rng.sample(legal["from"], legal["count"])}
    if legal["type"] == "moon":
        return {"type": "moon", "choice": "subtract"}
    return {"type": "play", "card": rng.choice(legal["cards"])}


async def person(client: httpx.AsyncClient, table: int, token: str, f: Figures, deadline: float) -> None:
    """A scripted person: follows the table stream and acts on each your_turn, resuming the
    stream after any disconnect with the last event id."""
    auth = {"Authorization": f"Bearer {token}"}
    rng, last = random.Random(table), None
    while time.monotonic() < deadline:
        try:
            params = {"format": "ndjson", **({"last_event_id": last} if last else {})}
            async with client.stream(
                "GET", f"/api/v1/tables/{table}/stream", params=params, headers=auth
            ) as r:
                if r.status_code == 204:
                    return
                if r.status_code != 200:
                    raise httpx.HTTPError(f"stream answered {r.status_code}")
                async for line in r.aiter_lines():
                    if not line:
                        continue
                    event = httpx.Response(200, content=line).json()
                    if event["type"] == "keepalive":
                        continue
                    last = event["id"]
                    if event["type"] == "table_finished":
                        return
                    if event["type"] != "your_turn":
                        continue
                    action = _choose(event["legal_actions"], rng)
                    headers = {**auth, "Idempotency-Key": f"t{table}-v{event['version']}"}
                    body = {**action, "expected_version": event["version"]}
                    start = time.perf_counter()
                    answer = await _post(client, f"/api/v1/tables/{table}/actions", body, headers, f)
                    if action["type"] == "play":
                        f.play_ms.append((time.perf_counter() - start) * 1000)
                        f.play_spans.append((start, time.perf_counter()))
                    if answer.status_code != 200:
                        code = answer.json().get("code", str(answer.status_code))
                        f.refusals[code] = f.refusals.get(code, 0) + 1
        except (httpx.HTTPError, ValueError):
            pass
        f.reconnects += 1
        await asyncio.sleep(0.5)


async def healthz(client: httpx.AsyncClient, f: Figures, stop: asyncio.Event) -> None:
    while not stop.is_set():
        start = time.perf_counter()
        try:
            await client.get("/healthz")
            f.healthz_ms.append((time.perf_counter() - start) * 1000)
        except httpx.HTTPError:
            pass
        await asyncio.sleep(0.25)


async def faults(stack: Stack, f: Figures, at: list[float], t0: float) -> None:
    """Kill the people lane's worker, restart Redis, kill a web process, restart PostgreSQL (down
    for 5 s): at the given seconds into the run."""

    def restart_postgres() -> None:
        down = time.perf_counter()
        stack.stop_postgres()
        time.sleep(5)
        stack.start_postgres()
        f.db_down = (down, time.perf_counter())

    steps = [
        (
            "people lane worker killed (SIGKILL), replaced",
            lambda: (stack.kill("people"), stack.start_worker(*LANES[1])),
        ),
        ("redis restarted (its queue and pub/sub lost)", lambda: (stack.kill("redis"), stack.start_redis())),
        ("one uvicorn worker killed (SIGKILL)", stack.kill_web_worker),
        ("postgres restarted (fast shutdown, down 5 s)", restart_postgres),
    ]
    for when, (what, act) in zip(at, steps, strict=True):
        await asyncio.sleep(max(0.0, t0 + when - time.monotonic()))
        await asyncio.to_thread(act)
        f.faults.append(f"{time.monotonic() - t0:.0f}s: {what}")


async def create_tables(
    client: httpx.AsyncClient, app_auth: dict[str, str], f: Figures, people: int, bots: int, tag: str
) -> tuple[list[int], list[tuple[int, str, bool]]]:
    """`people` tables with one person and three bots, `bots` tables of bots only."""
    ids, persons = [], []
    for i in range(people + bots):
        human = i < people
        body = {
            "options": {"target_score": 50},
            "bots": {str(s): "basic" for s in range(1 if human else 0, 4)},
            "clocks": {"pass": 10, "play": 5, "moon": 5},
        }
        key = {**app_auth, "Idempotency-Key": f"{tag}c{i}"}
        table = (await _post(client, "/api/v1/tables", body, key, f)).json()
        ids.append(table["id"])
        if human:
            key = {**app_auth, "Idempotency-Key": f"{tag}p{i}"}
            player = await _post(client, "/api/v1/players", {"name": f"p{i}"}, key, f)
            persons.append((table["id"], player.json()["token"], random.random() < ABSENT_SHARE[0]))
    return ids, persons


ABSENT_SHARE = [0.1]
WARM_UP = 10.0  # seconds of each capacity step not measured


async def seat_people(
    client: httpx.AsyncClient, persons: list[tuple[int, str, bool]], f: Figures, until: float
) -> list[asyncio.Task[None]]:
    tasks = []
    for table, token, absent in persons:
        r = await _post(client, f"/api/v1/tables/{table}/join", {}, {"Authorization": f"Bearer {token}"}, f)
        assert r.status_code == 200, r.text
        if not absent:  # an absent person's clock runs out: the server plays for them
            tasks.append(asyncio.create_task(person(client, table, token, f, until)))
    return tasks


def _client(stack: Stack, connections: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections + 50, max_keepalive_connections=connections + 50)
    return httpx.AsyncClient(base_url=stack.base, limits=limits, timeout=httpx.Timeout(15.0, read=45.0))


async def run(
    stack: Stack, tables: int, duration: float, with_faults: bool
) -> tuple[Figures, list[int], list[int], float]:
    f = Figures()
    app_auth = {"Authorization": f"Bearer {stack.app_key()}"}
    async with _client(stack, tables) as client:
        ids, persons = await create_tables(client, app_auth, f, tables // 2, tables - tables // 2, "")
        people_ids = [table for table, _, _ in persons]
        t0 = time.monotonic()
        f.started = time.time()
        stop = asyncio.Event()
        tasks = [asyncio.create_task(healthz(client, f, stop))]
        tasks += await seat_people(client, persons, f, t0 + duration)
        if with_faults:  # all four happen, even if the tables were quick
            await faults(stack, f, [duration * 0.15, duration * 0.35, duration * 0.55, duration * 0.75], t0)
        await _until_done(ids, t0 + duration)
        elapsed = time.monotonic() - t0
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return f, ids, people_ids, elapsed


async def capacity_step(
    stack: Stack, people: int, flood: int, seconds: float
) -> tuple[Figures, float, float]:
    """`people` person tables (nobody absent) beside `flood` bot-only tables for `seconds`:
    the person's play latencies, and the actions per second of the whole machine."""
    f = Figures()
    app_auth = {"Authorization": f"Bearer {stack.app_key()}"}
    async with _client(stack, people) as client:
        ABSENT_SHARE[0] = 0.0
        ids, persons = await create_tables(client, app_auth, f, people, flood, f"cap{people}-")
        tasks = await seat_people(client, persons, f, time.monotonic() + WARM_UP + seconds)
        await asyncio.sleep(WARM_UP)  # connections opened, code paths warm: then measure
        f.play_ms.clear()
        f.play_spans.clear()
        before = await asyncio.to_thread(_actions, ids)
        t0 = time.monotonic()
        await asyncio.sleep(max(0.0, t0 + seconds - time.monotonic()))
        elapsed = time.monotonic() - t0
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        actions = await asyncio.to_thread(_actions, ids) - before
    await asyncio.to_thread(_abandon, ids)  # the next step starts on a quiet machine
    return f, actions / elapsed, elapsed


def _actions(ids: list[int]) -> int:
    from games.models import Move

    return Move.objects.filter(table__in=ids, kind__in=["pass", "play", "moon"]).count()


def _abandon(ids: list[int]) -> None:
    from games.models import Table

    Table.objects.filter(pk__in=ids).update(status="abandoned", bot_turn=False, deadline=None)


async def _until_done(ids: list[int], deadline: float) -> None:
    from games.models import Table

    def open_tables() -> int:
        from django.db import DatabaseError, connections

        try:
            return Table.objects.filter(pk__in=ids).exclude(status__in=["finished", "abandoned"]).count()
        except DatabaseError:  # PostgreSQL restarting: ask again in a second
            connections.close_all()
            return len(ids)

    while time.monotonic() < deadline and await asyncio.to_thread(open_tables):
        await asyncio.sleep(1)


def _check_table(table: Any, problems: list[str]) -> bool:
    """The move log is 1..version with no gap or repeat, and replays to the stored state."""
    from games.engine import state_to_dict
    from games.services import table_replay

    seqs = list(table.moves.order_by("seq").values_list("seq", flat=True))
    if seqs != list(range(1, table.version + 1)):
        problems.append(f"table {table.pk}: move log has gaps or repeats")
        return False
    state = table_replay(table)
    if state is None or state_to_dict(state) != table.state:
        problems.append(f"table {table.pk}: the move log does not replay to the stored state")
        return False
    return True


def verify(ids: list[int]) -> dict[str, Any]:
    """Every move log is contiguous and replays to the stored state; unfinished tables move."""
    from django.db import connection, transaction

    from games.models import Move, Table

    finished = replayed = 0
    problems: list[str] = []
    versions = {}
    for table_id in ids:
        with transaction.atomic():  # one snapshot: the table and its moves as of the same moment
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            ok = _check_table(Table.objects.get(pk=table_id), problems)
        replayed += ok
        table = Table.objects.get(pk=table_id)
        if table.status == "finished":
            finished += 1
        else:
            versions[table.pk] = table.version
    time.sleep(20)  # every unfinished table must still move: bots, people, or clocks (10 s at most)
    stuck = [t for t in Table.objects.filter(pk__in=list(versions)) if t.version == versions[t.pk]]
    for t in stuck[:3]:  # what a bot task would do there now
        from games.services import bots_play

        try:
            out = bots_play(table_id=t.pk, version=t.version, limit=8)
            moved = "no-op" if out.table is None else f"{out.table.version - t.version} moves"
        except Exception as exc:  # a diagnosis: any failure is worth reporting
            moved = f"{type(exc).__name__}: {exc}"
        seat = t.state and t.seating[t.state.get("turn") or 0]
        problems.append(f"table {t.pk}: a direct bots_play made {moved}; the seat to act: {seat}")
    problems += [
        f"table {t.pk}: no move in 20 s (status {t.status}, version {t.version}, deadline {t.deadline},"
        f" bot_turn {t.bot_turn}, to act {t.state and t.state.get('turn')}, updated {t.updated_at})"
        for t in stuck
    ]
    lags = []
    for move in Move.objects.filter(table__in=ids, kind__in=["pass", "play", "moon"]):
        for kind, data, _, _ in move.events:
            if kind == "turn_timed_out" and data.get("deadline"):
                missed = dt.datetime.fromisoformat(data["deadline"])
                lags.append(((move.created_at - missed).total_seconds() * 1000, missed.timestamp()))
    actions = Move.objects.filter(table__in=ids, kind__in=["pass", "play", "moon"]).count()
    return {
        "finished": finished,
        "replayed": replayed,
        "unfinished_moving": len(versions) - len(stuck),
        "problems": problems,
        "lags": lags,
        "actions": actions,
    }


def _setup(stack: Stack) -> None:
    import logging

    import django

    stack.start()
    os.environ["DATABASE_URL"] = stack.db_url
    os.environ["REDIS_URL"] = stack.env["REDIS_URL"]
    os.environ["DB_POOL"] = "false"  # this script's own checks: one plain connection
    os.environ["BOT_PACE_MS"] = stack.env["BOT_PACE_MS"]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")
    django.setup()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise


def _print_client(f: Figures) -> None:
    print(f"client_retries: {f.retries}")
    print(f"answers_5xx_retried: {sum(f.statuses_5xx.values())} {dict(sorted(f.statuses_5xx.items()))}")
    print(f"answers_500: {f.statuses_5xx.get(500, 0)}")
    print(f"requests_without_answer: {f.transport_errors}")
    print(f"stream_reconnects: {f.reconnects}")
    print(f"refusals: {sum(f.refusals.values())} {dict(sorted(f.refusals.items()))}")


def load(args: argparse.Namespace, stack: Stack) -> bool:
    duration = args.duration or max(90.0, args.tables * 1.5)
    f, ids, people_ids, elapsed = asyncio.run(run(stack, args.tables, duration, not args.no_faults))
    result = verify(ids)
    worst = sorted(result["lags"], reverse=True)[:5]
    result["worst"] = [f"{lag:.0f} ms at {at - f.started:.0f}s" for lag, at in worst]
    lags = [lag for lag, _ in result["lags"]]
    bot_ids = [t for t in ids if t not in set(people_ids)]
    bot_finished = _finished(bot_ids)
    print(f"tables: {args.tables} ({len(people_ids)} with a person, {len(bot_ids)} bots only)")
    print(f"seconds: {elapsed:.0f}")
    print(f"actions_per_second: {result['actions'] / elapsed:.1f}")
    print(f"play_latency_p50_ms: {_pct(f.play_ms, 0.5):.1f}")
    print(f"play_latency_p99_ms: {_pct(f.play_ms, 0.99):.1f}")
    if f.db_down is not None:  # a play in flight while the database is down waits for it
        down, up = f.db_down
        apart = [ms for ms, (a, b) in zip(f.play_ms, f.play_spans, strict=True) if b < down or a > up]
        print(f"plays_overlapping_the_database_restart: {len(f.play_ms) - len(apart)} of {len(f.play_ms)}")
        print(f"play_latency_p99_ms_apart_from_the_database_restart: {_pct(apart, 0.99):.1f}")
    print(f"healthz_latency_p50_ms: {_pct(f.healthz_ms, 0.5):.1f}")
    print(f"play_to_healthz_p50_ratio: {_pct(f.play_ms, 0.5) / _pct(f.healthz_ms, 0.5):.2f}")
    print(f"timeouts_acted: {len(lags)}")
    print(f"timeout_lag_p50_ms: {_pct(lags, 0.5):.0f}")
    print(f"timeout_lag_p99_ms: {_pct(lags, 0.99):.0f}")
    print(f"timeout_lag_max_ms: {max(lags, default=float('nan')):.0f}")
    print(f"tables_finished: {result['finished']}")
    print(f"tables_unfinished_still_moving: {result['unfinished_moving']}")
    print(f"bot_only_tables_finished: {bot_finished} of {len(bot_ids)}")
    print(f"bot_only_games_per_minute: {bot_finished / elapsed * 60:.1f}")
    print(f"bot_only_actions_per_second: {_actions(bot_ids) / elapsed:.1f}")
    print(f"move_logs_replayed_exactly: {result['replayed']}")
    _print_client(f)
    print(f"timeout_lag_worst: {', '.join(result['worst'])}")
    for fault in f.faults:
        print(f"fault: {fault}")
    for problem in result["problems"]:
        print(f"PROBLEM: {problem}")
    ok = not result["problems"] and result["replayed"] == args.tables and f.statuses_5xx.get(500, 0) == 0
    return ok and (args.no_faults or len(f.faults) == 4)


def _finished(ids: list[int]) -> int:
    from games.models import Table

    return Table.objects.filter(pk__in=ids, status="finished").count()


def capacity(args: argparse.Namespace, stack: Stack) -> bool:
    """Person tables 25, 50, 100, ... beside a flood of bot-only tables, each step for
    --step-seconds, until a person's play p99 passes --p99-ms."""
    cores = os.cpu_count() or 1
    held, held_rate, people = 0, 0.0, args.start
    while people <= args.max_people:
        f, rate, _ = asyncio.run(capacity_step(stack, people, args.flood, args.step_seconds))
        p99 = _pct(f.play_ms, 0.99)
        print(f"step_{people}_people_play_p99_ms: {p99:.1f}")
        print(f"step_{people}_people_actions_per_second: {rate:.1f}")
        if not p99 <= args.p99_ms:
            break
        held, held_rate = people, rate
        people *= 2
    print(f"capacity_bot_only_tables_beside: {args.flood}")
    print(f"capacity_person_tables: {held}")
    print(f"capacity_actions_per_second_per_core: {held_rate / cores:.1f}")
    return held > 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--absent", type=float, default=0.1, help="share of people who never act")
    parser.add_argument("--duration", type=float, default=0, help="seconds before checking (default by size)")
    parser.add_argument("--no-faults", action="store_true")
    parser.add_argument("--check", action="store_true", help="exit 1 when an invariant fails")
    parser.add_argument("--capacity", action="store_true", help="find the most person tables that hold")
    parser.add_argument("--flood", type=int, default=0, help="capacity: bot-only tables beside")
    parser.add_argument("--start", type=int, default=10, help="capacity: person tables of the first step")
    parser.add_argument("--max-people", type=int, default=1600, help="capacity: stop after this many")
    parser.add_argument("--step-seconds", type=float, default=60)
    parser.add_argument("--p99-ms", type=float, default=250)
    parser.add_argument("--logs", help="keep the processes' logs in this directory")
    args = parser.parse_args()
    ABSENT_SHARE[0] = args.absent
    with tempfile.TemporaryDirectory() as tmp:
        if args.logs:
            Path(args.logs).mkdir(parents=True, exist_ok=True)
        stack = Stack(Path(args.logs or tmp))
        try:
            _setup(stack)
            ok = capacity(args, stack) if args.capacity else load(args, stack)
        finally:
            from django.db import connections

            connections.close_all()
            stack.stop()
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
