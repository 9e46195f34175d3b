"""Load and faults on a production-like stack: uvicorn (2 workers), 2 Celery workers and beat,
PostgreSQL and a Redis of its own, all on loopback. Many tables at once, half with a scripted
person playing through REST and the event stream (some of them absent, so clocks run out), half
bots only; while it runs, a worker is killed, Redis is restarted and a web process is killed.
Afterwards every table has finished or is still moving, and every move log replays exactly.

    python bench/load.py                      # 200 tables, faults on (several minutes)
    python bench/load.py --tables 16 --check  # the CI size: exit 1 if an invariant fails

Needs PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test: a scratch
database is created beside it and dropped) and `redis-server` on the PATH (its own instance,
on a free port, so restarting it disturbs nothing else).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import random
import secrets
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
BASE_DB = os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/test"


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

    db_url: str
    workdir: Path
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
            "CONN_MAX_AGE": "60",
            "LOG_LEVEL": "WARNING",
            "SWEEP_SECONDS": "1",
        }

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

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

    def start_worker(self, name: str) -> None:
        celery = [sys.executable, "-m", "celery", "-A", "hearts_service"]
        opts = [
            "--concurrency=1",
            "-Q",
            "celery,webhooks",
            "--without-gossip",
            "--without-mingle",
            "-l",
            "warning",
        ]
        self._start(name, [*celery, "worker", "-n", f"{name}@%h", *opts])

    def start(self) -> None:
        self.start_redis()
        python = sys.executable
        subprocess.run([python, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=self.env, check=True)
        uvicorn = [python, "-m", "uvicorn", "hearts_service.asgi:application", "--workers", "2"]
        self._start(
            "web", [*uvicorn, "--port", str(self.web_port), "--lifespan", "off", "--log-level", "warning"]
        )
        self.start_worker("worker1")
        self.start_worker("worker2")
        schedule = str(self.workdir / "beat-schedule")
        self._start(
            "beat", [python, "-m", "celery", "-A", "hearts_service", "beat", "-s", schedule, "-l", "warning"]
        )
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
        for name in list(self.procs):
            proc = self.procs.pop(name)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


@dataclass
class Figures:
    play_ms: list[float] = field(default_factory=list)
    healthz_ms: list[float] = field(default_factory=list)
    retries: int = 0
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
        except httpx.HTTPError:
            pass
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
    """Kill a Celery worker, restart Redis, kill a web worker: at the given seconds into the run."""
    steps = [
        (
            "worker1 killed (SIGKILL), replaced",
            lambda: (stack.kill("worker1"), stack.start_worker("worker3")),
        ),
        ("redis restarted (its queue and pub/sub lost)", lambda: (stack.kill("redis"), stack.start_redis())),
        ("one uvicorn worker killed (SIGKILL)", stack.kill_web_worker),
    ]
    for when, (what, act) in zip(at, steps, strict=True):
        await asyncio.sleep(max(0.0, t0 + when - time.monotonic()))
        await asyncio.to_thread(act)
        f.faults.append(f"{time.monotonic() - t0:.0f}s: {what}")


async def run(
    stack: Stack, tables: int, absent_share: float, duration: float, with_faults: bool
) -> tuple[Figures, list[int], float]:
    f = Figures()
    key = stack.app_key()
    app_auth = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=tables + 50, max_keepalive_connections=tables + 50)
    timeout = httpx.Timeout(15.0, read=45.0)
    async with httpx.AsyncClient(base_url=stack.base, limits=limits, timeout=timeout) as client:
        ids, people = [], []
        for i in range(tables):
            human = i % 2 == 0
            bots = {str(s): "basic" for s in range(1 if human else 0, 4)}
            body = {
                "options": {"target_score": 50},
                "bots": bots,
                "clocks": {"pass": 10, "play": 5, "moon": 5},
            }
            table = (
                await _post(client, "/api/v1/tables", body, {**app_auth, "Idempotency-Key": f"c{i}"}, f)
            ).json()
            ids.append(table["id"])
            if human:
                player = await _post(
                    client, "/api/v1/players", {"name": f"p{i}"}, {**app_auth, "Idempotency-Key": f"p{i}"}, f
                )
                people.append((table["id"], player.json()["token"], random.random() < absent_share))
        t0 = time.monotonic()
        f.started = time.time()
        stop = asyncio.Event()
        tasks = [asyncio.create_task(healthz(client, f, stop))]
        for table, token, absent in people:
            r = await _post(
                client, f"/api/v1/tables/{table}/join", {}, {"Authorization": f"Bearer {token}"}, f
            )
            assert r.status_code == 200, r.text
            if not absent:  # an absent person's clock runs out: the server plays for them
                tasks.append(asyncio.create_task(person(client, table, token, f, t0 + duration)))
        if with_faults:  # all three happen, even if the tables were quick
            await faults(stack, f, [duration * 0.2, duration * 0.4, duration * 0.6], t0)
        await _until_done(ids, t0 + duration)
        elapsed = time.monotonic() - t0
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return f, ids, elapsed


async def _until_done(ids: list[int], deadline: float) -> None:
    from games.models import Table

    def open_tables() -> int:
        return Table.objects.filter(pk__in=ids).exclude(status__in=["finished", "abandoned"]).count()

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
    stuck = [t.pk for t in Table.objects.filter(pk__in=list(versions)) if t.version == versions[t.pk]]
    problems += [f"table {pk}: no move in 20 s" for pk in stuck]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--absent", type=float, default=0.1, help="share of people who never act")
    parser.add_argument("--duration", type=float, default=0, help="seconds before checking (default by size)")
    parser.add_argument("--no-faults", action="store_true")
    parser.add_argument("--check", action="store_true", help="exit 1 when an invariant fails")
    args = parser.parse_args()
    duration = args.duration or max(90.0, args.tables * 1.5)
    name = f"hearts_load_{os.getpid()}"
    base = psycopg.conninfo.conninfo_to_dict(BASE_DB.replace("postgres://", "postgresql://", 1))
    admin = psycopg.connect(**{**base, "dbname": "postgres"}, autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    db_url = BASE_DB.rsplit("/", 1)[0] + f"/{name}"
    os.environ["DATABASE_URL"] = db_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")
    with tempfile.TemporaryDirectory() as tmp:
        stack = Stack(db_url, Path(tmp))
        try:
            stack.start()
            os.environ["REDIS_URL"] = stack.env["REDIS_URL"]
            import logging

            import django

            django.setup()
            logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
            f, ids, elapsed = asyncio.run(run(stack, args.tables, args.absent, duration, not args.no_faults))
            result = verify(ids)
            worst = sorted(result["lags"], reverse=True)[:5]
            result["worst"] = [f"{lag:.0f} ms at {at - f.started:.0f}s" for lag, at in worst]
            result["lags"] = [lag for lag, _ in result["lags"]]
        finally:
            stack.stop()
            from django.db import connections

            connections.close_all()
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    print(f"tables: {args.tables}")
    print(f"seconds: {elapsed:.0f}")
    print(f"actions_per_second: {result['actions'] / elapsed:.1f}")
    print(f"play_latency_p50_ms: {_pct(f.play_ms, 0.5):.1f}")
    print(f"play_latency_p99_ms: {_pct(f.play_ms, 0.99):.1f}")
    print(f"healthz_latency_p50_ms: {_pct(f.healthz_ms, 0.5):.1f}")
    print(f"play_to_healthz_p50_ratio: {_pct(f.play_ms, 0.5) / _pct(f.healthz_ms, 0.5):.2f}")
    print(f"timeouts_acted: {len(result['lags'])}")
    print(f"timeout_lag_p50_ms: {_pct(result['lags'], 0.5):.0f}")
    print(f"timeout_lag_p99_ms: {_pct(result['lags'], 0.99):.0f}")
    print(f"tables_finished: {result['finished']}")
    print(f"tables_unfinished_still_moving: {result['unfinished_moving']}")
    print(f"move_logs_replayed_exactly: {result['replayed']}")
    print(f"client_retries: {f.retries}")
    print(f"stream_reconnects: {f.reconnects}")
    print(f"refusals: {sum(f.refusals.values())} {dict(sorted(f.refusals.items()))}")
    print(f"timeout_lag_worst: {', '.join(result['worst'])}")
    for fault in f.faults:
        print(f"fault: {fault}")
    for problem in result["problems"]:
        print(f"PROBLEM: {problem}")
    ok = not result["problems"] and result["replayed"] == args.tables
    ok = ok and (args.no_faults or len(f.faults) == 3)
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
