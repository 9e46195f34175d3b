"""Load and faults on a production-like stack: uvicorn (2 workers), a Celery worker per lane
(clocks, people, bots at a lower CPU priority, webhooks, push, hints at the lowest), an advice
replica (uvicorn for the hint requests, at the lowest too) and beat, a PostgreSQL and a Redis of
its own, all on loopback. Many tables at once, half with a scripted person playing through REST (some
following the table's event stream, some polling the table with their phone's Web Push subscription
registered, some absent, so clocks run out), half bots only (the flood of the bot lane), and a few
correspondence tables (a 3-hour clock, nobody acting); while it runs, the people lane's worker is
killed, Redis restarts (and the correspondence deadlines come due just after), a web process is
killed and PostgreSQL restarts. Afterwards every table has finished or is still moving, every move
log replays exactly, and the pushes a local Web Push service received are checked: how long after
the turn's commit, none to a player watching the table, none twice, and the correspondence deadlines
acted on without the Redis clock set.

    python bench/load.py                      # 200 tables, faults on (several minutes)
    python bench/load.py --tables 16 --check  # the CI size: exit 1 if an invariant fails
    python bench/load.py --capacity           # more person tables until play p99 passes 250 ms
    python bench/load.py --hints 20           # people asking 20 hints a second (the games outlast the run)

Needs PostgreSQL's server programs (initdb, postgres: its own cluster in a scratch directory, on a
free port, so restarting it disturbs nothing else; as root it runs them as the `postgres` user)
and `redis-server` on the PATH (its own instance too). The Web Push service is tests/push/providers.py's
FakeWebPush, run in a process of its own (`--serve-webpush`) so that its decryption never takes the
client's CPU or event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import glob
import itertools
import json
import math
import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import aiohttp
import httpx
import psycopg
import uvloop

ROOT = Path(__file__).resolve().parent.parent
# bench/graphql.py is named like the `graphql` package: keep this folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

os.chdir(ROOT)  # Celery puts the working directory on sys.path: it must not be bench/
DB_NAME = "hearts_load"
# The lanes' workers (docs/operations.md#lanes): name, queue, concurrency, how its CPU is weighed.
NICE = ["nice", "-n", "10"]  # the bot lane: a tenth of the others' weight
# The clock lane: three times the others' weight (compose's `cpu_shares: 3072`). Its work is small
# (0.05 ms of CPU an action) and owed at a deadline: weighed as the others, the clocks that came due
# during the database's restart queued behind every process's reconnecting herd (stop 57).
FIRST = ["nice", "-n", "-5"]
# The hints lane (docs/hints.md) runs only on a core nothing else wants (Linux's SCHED_IDLE).
IDLE = ["chrt", "--idle", "0"]
# Each process of the stack runs in a session of its own (Stack._start), and with the kernel's
# autogroup on (Debian's default, /proc/sys/kernel/sched_autogroup_enabled) the scheduler shares
# the CPU between sessions first, each session weighing as much as any other whatever its
# processes' nice or policy: until stop 49 the bot lane's `nice` and the hints lane's SCHED_IDLE
# did nothing against the web or PostgreSQL (a SCHED_IDLE busy loop in a session of its own took
# a third of two saturated cores beside two normal ones). So the session itself is weighed too
# (/proc/<pid>/autogroup, as `renice` does a process): what compose's `cpu_shares` and
# Kubernetes's CPU requests do for a container. LOAD_AUTOGROUP_NICE=0 leaves the sessions equal.
AUTOGROUP_NICE = {tuple(NICE): 10, tuple(IDLE): 19, tuple(FIRST): -5}
WEIGH_SESSIONS = os.environ.get("LOAD_AUTOGROUP_NICE", "1") != "0"
# The client (this process and its CLIENT_PROCESSES, one session) stands for the people's phones and
# browsers, which have CPUs of their own: weighed as the stack's other sessions, on a saturated machine
# it waited for the CPU with the responses already in its sockets, and counted that wait in the
# service's latency (stop 50: every action answered within 260 ms by the web's access log, the client
# measuring 1.3 s at p99). Weighed above them (LOAD_CLIENT_AUTOGROUP_NICE, -10 by default: about nine
# times the weight), it reads its answers when they come; it uses the same CPU either way.
CLIENT_AUTOGROUP_NICE = os.environ.get("LOAD_CLIENT_AUTOGROUP_NICE", "-10")
# The advice replica (deploy/nginx.conf's `hearts_advice`, compose's `advice`): a web process of its
# own for the hint and hand review requests, on what the people's web leaves (weighed as the hints
# lane): a hint request costs the web about twice a play's CPU (stop 48). LOAD_ADVICE_REPLICA=0
# sends them to the people's web instead, as before stop 49.
ADVICE_REPLICA = os.environ.get("LOAD_ADVICE_REPLICA", "1") != "0"
ASGI_APP = "hearts_service.asgi:application"
LANES: list[tuple[str, str, int, list[str]]] = [
    ("clocks", "clocks", 2, FIRST),
    ("people", "people", 2, []),
    ("bots", "bots", 2, NICE),  # compose's WORKER_CONCURRENCY; one process idled on its own waits
    ("webhooks", "webhooks", 1, []),
    ("push", "push", 2, []),
    ("hints", "hints", 1, IDLE),
]
# A turn is pushed this many seconds after its commit unless the seat acted or its player watches the
# table (PUSH_GRACE_SECONDS, 5 by default). The bench uses 0, so that the push lag is the
# service's own delay (a production lag is the grace plus this) and every turn of a player who is not
# watching is pushed, however soon they act.
PUSH_GRACE = os.environ.get("PUSH_GRACE_SECONDS", "0")
CORRESPONDENCE_CLOCK = 3 * 3600  # seconds: a correspondence table's pass, play and moon clocks
POLL_SECONDS = 1.0  # a person without a stream reads the table this often
PUSH_WAIT = 2.0  # ... and, on their turn, waits this long at most for its push before acting


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
    advice_port: int = field(default_factory=_free_port)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    sessions: dict[int, str] = field(default_factory=dict)  # session id -> name, restarted ones too
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
            "PUSH_GRACE_SECONDS": PUSH_GRACE,
            "WEBHOOK_ALLOW_PRIVATE_HOSTS": "true",  # the Web Push service listens on 127.0.0.1
            # The one app key creates every table and player (hundreds a minute in the larger
            # capacity steps): its own limit (600 a minute) would refuse them, as it should a real app.
            "RATE_LIMIT_TOKEN": "100000/minute",
            # `--hints 20` at 40 person tables is thirty hints a minute per person: HINT_RATE's own
            # limit (30 a minute per token) would refuse some, and the run would ask fewer than asked.
            "HINT_RATE": "100000/minute",
        }
        self.webpush_url = ""

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def advice_base(self) -> str:
        """Where the hint requests go: the advice replica, as deploy/nginx.conf routes them."""
        return f"http://127.0.0.1:{self.advice_port}" if ADVICE_REPLICA else self.base

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
        # e.g. "-c log_lock_waits=on -c deadlock_timeout=100ms": settings of a diagnosing run
        server += os.environ.get("LOAD_PG_OPTIONS", "").split()
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

    def postgres_ready(self) -> float | None:
        """When PostgreSQL last said it was ready to accept connections (its log's millisecond
        time, on the perf_counter clock): the database's return, which `start_postgres`'s own
        polling (a process among busy ones) noticed up to a few hundred milliseconds later. None
        when the log does not say (another log_line_prefix or time zone)."""
        text = (self.workdir / "postgres.log").read_text(errors="replace")
        found = re.findall(
            r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) UTC.*ready to accept connections", text, re.M
        )
        if not found:
            return None
        at = dt.datetime.strptime(found[-1], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=dt.UTC).timestamp()
        return time.perf_counter() - (time.time() - at)

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
        self.sessions[self.procs[name].pid] = name
        nice = next((n for prefix, n in AUTOGROUP_NICE.items() if tuple(cmd[: len(prefix)]) == prefix), None)
        if nice is not None and WEIGH_SESSIONS:  # the new session's weight (see AUTOGROUP_NICE)
            with contextlib.suppress(OSError):  # no autogroup: the process's own weight is what counts
                Path(f"/proc/{self.procs[name].pid}/autogroup").write_text(str(nice))

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

    def start_worker(self, name: str, queue: str, concurrency: int, weight: list[str]) -> None:
        celery = [sys.executable, "-m", "celery", "-A", "hearts_service"]
        opts = [f"--concurrency={concurrency}", "-Q", queue, "--without-gossip", "--without-mingle"]
        level = ["-l", self.env["LOG_LEVEL"].lower()]
        self._start(name, [*weight, *celery, "worker", "-n", f"{name}@%h", *opts, *level])

    def start_webpush(self) -> None:
        """The local Web Push service, in a process of its own: `webpush_url` once it listens."""
        log = open(self.workdir / "webpush.log", "ab")  # noqa: SIM115 (closed with the process)
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve-webpush"],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,
        )
        self.procs["webpush"] = proc
        self.sessions[proc.pid] = "webpush"
        if WEIGH_SESSIONS:  # the browsers' push services have CPUs of their own, as the phones do
            with contextlib.suppress(OSError):
                Path(f"/proc/{proc.pid}/autogroup").write_text(CLIENT_AUTOGROUP_NICE)
        assert proc.stdout is not None
        port = proc.stdout.readline().strip()  # printed once it listens
        if not port.isdigit():
            raise RuntimeError("the Web Push service did not start: see " + str(self.workdir / "webpush.log"))
        self.webpush_url = f"http://127.0.0.1:{int(port)}"

    def start(self) -> None:
        self.init_postgres()
        self.start_postgres()
        admin = psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.pg_port}/postgres", autocommit=True)
        admin.execute(f'CREATE DATABASE "{DB_NAME}"')
        admin.close()
        self.start_redis()
        python = sys.executable
        subprocess.run([python, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=self.env, check=True)
        uvicorn = [python, "-m", "uvicorn", ASGI_APP, "--workers", "2"]
        served = ["--lifespan", "off", "--log-level", "warning"]
        self._start("web", [*uvicorn, "--port", str(self.web_port), *served])
        if ADVICE_REPLICA:  # one process: its requests mostly wait for the hints lane
            self._start(
                "advice", [*IDLE, python, "-m", "uvicorn", ASGI_APP, "--port", str(self.advice_port), *served]
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


# Where the CPU goes (issue 37): each process of the stack by kind, the client too.
CPU_KINDS = ["web", "advice", *(lane[0] for lane in LANES), "beat", "postgres", "redis", "webpush", "client"]
SAMPLE_SECONDS = 0.5  # how often CpuMeter reads /proc: a process that dies loses at most this much


def _stat(pid: int) -> tuple[int, int, int, int] | None:
    """(session id, start time in clock ticks after boot, utime + stime in ticks, parent pid) of a
    live process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    fields = raw[raw.rindex(b")") + 2 :].split()  # after the command name, which may hold spaces
    return int(fields[3]), int(fields[19]), int(fields[11]) + int(fields[12]), int(fields[1])


class CpuMeter:
    """The CPU seconds each kind of process used (CPU_KINDS), read from /proc every SAMPLE_SECONDS in a
    thread of the client. A process belongs to a kind by its session: each of the stack's processes
    is started in a session of its own (Stack._start), which its children share (Celery's prefork
    children, uvicorn's workers, every PostgreSQL backend, the checkpointer), and a restarted one
    (the faults) starts another, recorded in Stack.sessions. Per process (pid and start time), the
    deltas of utime + stime are summed, so a process that dies or starts in a window counts for what
    it used while alive in it (less, for one that dies, its last SAMPLE_SECONDS at most). `extra`
    names more processes (py-spy's, under `profiler`, apart from the total)."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.hz = os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime") as fh:
            self.born = float(fh.read().split()[0]) * self.hz  # ticks after boot: older processes
        self.kind: dict[int, tuple[int, str | None, int]] = {}  # pid -> start, kind (None: not ours), checks
        self.last: dict[tuple[int, int], int] = {}  # (pid, start) -> ticks seen last
        self.totals: Counter[str] = Counter()  # ticks
        self.live: Counter[str] = Counter()  # processes of each kind at the last sample
        self.extra: dict[int, str] = {}
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.own_seconds = 0.0  # this thread's CPU (part of the client's)
        self.thread = threading.Thread(target=self._loop, name="cpu-meter", daemon=True)

    def start(self) -> CpuMeter:
        self.sample()
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()

    def _loop(self) -> None:
        while not self.stopped.wait(SAMPLE_SECONDS):
            start = time.thread_time()
            self.sample()
            self.own_seconds += time.thread_time() - start

    def _kind_of(self, pid: int, session: int, parent: int) -> str | None:
        if pid == os.getpid():
            return "client"
        known = self.kind.get(parent)  # PostgreSQL's backends each make a session of their own
        return self.extra.get(pid) or self.stack.sessions.get(session) or (known[1] if known else None)

    def sample(self) -> None:
        with self.lock:
            known_pids = set(self.kind)
            pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
            live: Counter[str] = Counter()
            for pid in pids:
                known = self.kind.get(pid)
                # A process is not ours when first seen; looked at again while young, since a child
                # of Popen(start_new_session=True) sits in the parent's session until its setsid.
                if known is None or (known[1] is None and known[2] < 3 and known[0] > self.born):
                    got = _stat(pid)
                    if got is None:
                        continue
                    session, started, _, parent = got
                    checks = 0 if known is None else known[2] + 1
                    known = self.kind[pid] = (started, self._kind_of(pid, session, parent), checks)
                started, kind, _ = known
                if kind is None:
                    continue
                got = _stat(pid)
                if got is None or got[1] != started:
                    continue
                key = (pid, started)
                before = self.last.get(key, 0 if started > self.born else got[2])
                self.totals[kind] += got[2] - before
                self.last[key] = got[2]
                live[kind] += 1
            for pid in known_pids - set(pids):  # gone: forget them (a pid can come back)
                started = self.kind.pop(pid)[0]
                self.last.pop((pid, started), None)
            self.live = live

    def snapshot(self) -> tuple[float, dict[str, float]]:
        """Now (monotonic) and the CPU seconds of each kind so far."""
        self.sample()
        with self.lock:
            used = {k: v / self.hz for k, v in self.totals.items()}
            return time.monotonic(), {**used, "client_of_which_cpu_meter": self.own_seconds}


def print_cpu(
    prefix: str,
    meter: CpuMeter,
    start: tuple[float, dict[str, float]],
    end: tuple[float, dict[str, float]],
    actions: int,
) -> None:
    """`<prefix>cpu_ms_per_action_<kind>` for the window from `start` to `end` (CpuMeter.snapshot),
    their total (the profiler apart) and the cores busy (CPU seconds over wall seconds)."""
    wall = end[0] - start[0]
    used = {k: end[1].get(k, 0.0) - start[1].get(k, 0.0) for k in {*end[1], *start[1]}}
    per = 1000 / max(actions, 1)
    total = sum(v for k, v in used.items() if k in CPU_KINDS)  # not the profiler, nor the meter twice
    print(f"{prefix}actions_measured: {actions}")
    for kind in [*CPU_KINDS, *sorted(set(used) - set(CPU_KINDS))]:
        print(f"{prefix}cpu_ms_per_action_{kind}: {used.get(kind, 0.0) * per:.2f}")
    print(f"{prefix}cpu_ms_per_action_total: {total * per:.2f}")
    print(f"{prefix}cores_busy: {total / wall:.2f}")
    print(f"{prefix}processes: {', '.join(f'{k} {n}' for k, n in sorted(meter.live.items()))}")


# py-spy on these kinds' worker processes (--profile; LOAD_PROFILED="web push" names others)
PROFILED = os.environ.get("LOAD_PROFILED", "web people bots").split()
PY_SPY = Path(sys.executable).parent / "py-spy"


class Profiler:
    """py-spy on the web workers (uvicorn's children), the people and bots lanes' prefork children
    (where their tasks run) and main processes (`<lane>_consumer`: Celery's consumer, which takes
    each message from Redis, hands it to a child and acknowledges it) and the client itself, for one
    measured window: `record --gil
    --nonblocking -r 100 -f raw`, a file per process in `out` (`<kind>-<pid>.txt`). Only samples
    holding the GIL are kept, so time a thread spends waiting (or in C code that released it) is
    not in the shares. py-spy's own CPU
    goes to the CpuMeter as `profiler` (apart from the total): it runs on the same two cores."""

    def __init__(self, stack: Stack, meter: CpuMeter, out: Path, seconds: float) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out, self.procs = out, []
        for kind in [*PROFILED, "client"]:
            if kind == "client":  # this process and the ones the people play from (play_elsewhere)
                found = [str(os.getpid()), *_spawned()]
            else:
                parent = str(stack.procs[kind].pid)
                found = subprocess.run(["pgrep", "-P", parent], capture_output=True, text=True).stdout.split()
                if kind != "web":  # a Celery worker's main process: its consumer (`<kind>_consumer`)
                    found.append(f"{parent}:consumer")
            for pid_of in found:
                pid, _, role = pid_of.partition(":")
                name = f"{kind}_{role}" if role else kind
                raw = ["record", "--gil", "--nonblocking", "-r", "100", "-f", "raw", "-p", pid]
                spy = [str(PY_SPY), *raw, "-d", str(math.ceil(seconds)), "-o", str(out / f"{name}-{pid}.txt")]
                log = open(out / f"{name}-{pid}.log", "wb")  # noqa: SIM115 (closed with the process)
                proc = subprocess.Popen(spy, stdout=log, stderr=subprocess.STDOUT)
                meter.extra[proc.pid] = "profiler"
                self.procs.append(proc)

    def wait(self, stop: bool = False) -> None:
        """Until each py-spy has written its file: at the end of its duration, or now (`stop`)."""
        for proc in self.procs:
            if stop and proc.poll() is None:
                proc.send_signal(signal.SIGINT)  # py-spy writes what it has on SIGINT
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGINT)
                proc.wait(30)


def _spawned() -> list[str]:
    """The pids of this process's children started by multiprocessing's spawn (the client's)."""
    out, children = [], subprocess.run(["pgrep", "-P", str(os.getpid())], capture_output=True, text=True)
    for pid in children.stdout.split():
        with contextlib.suppress(OSError):
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.append(pid)
    return out


# Folding a sample's stack into a component. A frame is `function (file:line)`, the file relative to
# its sys.path entry. Walking from the innermost frame outwards, the first frame whose file matches a
# prefix below names the work (files matching none, the standard library's helpers, are skipped);
# for frames of the project's own code, the request or task they serve decides (_component).
WORK = [
    (
        (
            "json/",
            "rest_framework/renderers.py",
            "rest_framework/parsers.py",
            "rest_framework/utils/encoders.py",
            "django/core/serializers/json.py",
            "hearts_service/jsonbody.py",
        ),
        "json",
    ),
    (
        ("psycopg/", "psycopg_pool/", "django/db/backends/utils.py", "django/db/backends/base/base.py"),
        "sql_execute",
    ),
    (("django/db/backends/postgresql/base.py",), "sql_execute"),
    (("django/db/",), "orm"),  # the queryset, its SQL compiled, the rows made models
    (("redis/",), "redis"),
    (("kombu/", "celery/", "billiard/", "amqp/", "vine/", "hearts_service/celery.py"), "celery"),
    (("prometheus_client/", "games/infra/metrics.py"), "metrics"),
    (("graphql/", "graphene/", "graphene_django/", "games/graphql/"), "graphql"),
    (("games/live/", "games/api/streams.py"), "fanout"),
    (("bots/",), "bots"),
    (("games/engine/",), "engine"),
    (("uvicorn/", "h11/", "httptools/"), "server"),
    (("aiohttp/", "yarl/", "multidict/", "httpx/", "httpcore/", "anyio/"), "http_client"),  # the client
    (
        (
            *("django/core/", "django/middleware/", "django/contrib/", "django/http/", "django/urls/"),
            *("django/views/", "django/template/", "rest_framework/", "corsheaders/", "asgiref/sync.py"),
            *("asgiref/current_thread_executor.py", "hearts_service/", "games/api/auth.py"),
        ),
        "django_drf",  # the request's way through Django and DRF: middleware, auth, the async hops
    ),
    (("games/",), "app"),
]
# Only when no frame matches WORK: the event loop and the threads' hand-offs.
SERVER = ("asyncio/", "concurrent/", "selectors.py", "threading.py", "queue.py")
CONNECT = ("connect", "_connect", "get_new_connection", "_configure_connection", "init_connection_state")


def _frames(stack: str) -> list[tuple[str, str]]:
    """(function, file) of each frame, outermost first."""
    out = []
    for frame in stack.split(";"):
        func, _, where = frame.rpartition(" (")
        out.append((func, where.rsplit(":", 1)[0]))
    return out


def _component(kind: str, frames: list[tuple[str, str]]) -> str:
    """The component a sample of a `kind` process is counted under (README: CPU per action by
    component). Connection setup (psycopg's connect, Django's _configure_connection, the pool's) is
    `db_connect` wherever it happens; Redis under kombu is Celery sending a task (`celery_send` in a
    task, `celery` outside one)."""
    files = [file for _, file in frames]
    if any(
        func.rsplit(".", 1)[-1] in CONNECT and file.startswith(("psycopg", "django/db/"))
        for func, file in frames
    ):
        return "db_connect"
    work = next(
        (name for file in reversed(files) for prefixes, name in WORK if file.startswith(prefixes)), ""
    )
    work = work or ("server" if any(file.startswith(SERVER) for file in files) else "other")
    in_task = any(file.startswith(("games/", "bots/")) for file in files)
    if work in ("redis", "celery") and any(
        file.startswith(("kombu/", "celery/app/amqp.py")) for file in files
    ):
        work = "celery_send" if in_task else "celery"
    if kind != "web":
        return work
    if work in ("app", "engine", "bots"):  # the project's code: by the request it serves
        return _request(frames)
    return work


def _request(frames: list[tuple[str, str]]) -> str:
    """The request a web sample serves, whatever the work: the whole of each kind of request."""
    files = [file for _, file in frames]
    if any(f.startswith(("games/live/", "games/api/streams.py")) for f in files):
        return "fanout"
    if any(f.startswith(("graphql/", "graphene", "games/graphql/")) for f in files):
        return "graphql"
    if any(func == "ActionsView.post" for func, _ in frames):
        return "rest_action"
    if any(f.startswith("games/api/") for f in files):
        return "rest_other"
    if any(f.startswith(("django/", "rest_framework/", "asgiref/", "hearts_service/")) for f in files):
        return "django_drf"
    return "server"


def fold(out: Path) -> dict[str, Counter[str]]:
    """The samples of every raw file in `out`, per kind of process, counted by component (and, for
    the web, by request as `request_<kind>`)."""
    shares: dict[str, Counter[str]] = {}
    for path in sorted(out.glob("*.txt")):
        kind = path.name.split("-", 1)[0]
        counts = shares.setdefault(kind, Counter())
        for line in path.read_text().splitlines():
            stack, _, n = line.rpartition(" ")
            if not stack or not n.isdigit():
                continue
            frames = _frames(stack)
            counts[_component(kind, frames)] += int(n)
            if kind == "web":
                counts["request_" + _request(frames)] += int(n)
    return shares


def print_profile(prefix: str, out: Path) -> None:
    """`<prefix>profile_<process>_<component>_share` from the raw files in `out`."""
    for kind, counts in fold(out).items():
        samples = sum(n for c, n in counts.items() if not c.startswith("request_"))
        print(f"{prefix}profile_{kind}_samples: {samples}")
        for component, n in sorted(
            counts.items(), key=lambda item: (item[0].startswith("request_"), -item[1])
        ):
            print(f"{prefix}profile_{kind}_{component}_share: {n / max(samples, 1):.3f}")


@dataclass
class Figures:
    play_ms: list[float] = field(default_factory=list)
    play_spans: list[tuple[float, float]] = field(default_factory=list)  # perf_counter start, end
    db_down: tuple[float, float] | None = None  # perf_counter: PostgreSQL stopped, ready again
    healthz_ms: list[float] = field(default_factory=list)
    loop_lag_ms: list[float] = field(default_factory=list)  # the client's event loop, late to wake
    retries: int = 0
    statuses_5xx: dict[int, int] = field(default_factory=dict)  # answers the client retried
    transport_errors: int = 0  # no answer at all (a connection cut, or 15 s without a response)
    reconnects: int = 0
    refusals: dict[str, int] = field(default_factory=dict)
    faults: list[str] = field(default_factory=list)
    fault_at: dict[str, float] = field(default_factory=dict)  # wall clock of each fault's end
    started: float = 0.0  # wall clock at the start of play
    t0: float = 0.0  # the same, perf_counter
    on_push: int = 0  # turns a person without a stream played once its push came ...
    without_push: int = 0  # ... and after PUSH_WAIT without one
    correspondence_due: dict[int, dt.datetime] = field(default_factory=dict)  # moved at the Redis restart
    hint_ms: list[float] = field(default_factory=list)  # every hint asked, from request to answer
    hint_answers: Counter[str] = field(default_factory=Counter)  # by status (200) or refusal code
    # Moves made before play started (the bot-only tables play from their creation, while the people
    # are seated and their devices registered): not counted in the run's actions a second.
    actions_before: int = 0
    bot_actions_before: int = 0
    # ... and made by the end of play (the bot-only tables play on until the stack stops: not counted)
    actions_in_run: int = 0
    bot_actions_in_run: int = 0


# The client's HTTP: aiohttp, whose parser and URL handling are in C. The people's processes ran on
# httpx until stop 58; its layers (httpcore, anyio, h11, all Python) were 84% of the client's CPU, a
# sixth of the machine's at the capacity steps: CPU the service's processes did not get, although a
# real client runs on the people's own phones (bench/README.md, stop 58). The stack's own HTTP
# (webhooks, pushes, brought bots) is unchanged: httpx, in the service.
HTTP_ERRORS = (aiohttp.ClientError, asyncio.TimeoutError)


@dataclass
class Answer:
    """A whole response: its status and body."""

    status_code: int
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)

    @property
    def text(self) -> str:
        return self.content.decode(errors="replace")


class Http:
    """An HTTP/1.1 client on `base` with kept-alive connections (at most `connections`, 0: no
    bound): whole answers (`get`, `post`) and a streamed body (`stream`). Connections idle 4 s are
    closed, before uvicorn closes them at its 5 s."""

    def __init__(self, base: str, connections: int = 0, read: float = 45.0) -> None:
        self.base = base
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=connections, keepalive_timeout=4.0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=15.0, sock_read=read),
        )

    async def __aenter__(self) -> Http:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.session.close()

    def _url(self, url: str) -> str:
        return url if "://" in url else self.base + url

    async def get(
        self,
        url: str,
        *,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> Answer:
        # (the session's timeouts unless given: aiohttp takes `timeout=None` for no timeout at all)
        limit = {} if timeout is None else {"timeout": aiohttp.ClientTimeout(total=timeout)}
        async with self.session.get(self._url(url), params=params, headers=headers, **limit) as r:
            return Answer(r.status, await r.read())

    async def post(self, url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Answer:
        async with self.session.post(self._url(url), json=body, headers=headers) as r:
            return Answer(r.status, await r.read())

    def stream(
        self, url: str, params: dict[str, Any], headers: dict[str, str]
    ) -> contextlib.AbstractAsyncContextManager[aiohttp.ClientResponse]:
        """`async with http.stream(...) as r`: `r.status`, and the body as it comes (`_lines`)."""
        return self.session.get(self._url(url), params=params, headers=headers)


@dataclass
class Person:
    """A scripted person: `stream` follows the table's event stream and acts at once on each
    your_turn; `pocket` has no stream: it reads the table every POLL_SECONDS and, on its turn, acts
    when the turn's push reaches its phone (or after PUSH_WAIT); `absent` and `correspondence`
    never act. With push on, each has a Web Push subscription registered as a device."""

    table: int
    token: str
    mode: str
    endpoint: str = ""
    live: list[tuple[float, float]] = field(default_factory=list)  # the stream open: wall clock spans

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


class WebPushControl:
    """The bench's side of the local Web Push service's control API (serve_webpush)."""

    def __init__(self, url: str) -> None:
        self.http = Http(url, read=30.0)

    async def subscription(self, server_key: str) -> dict[str, Any]:
        """A browser's PushManager.subscribe({applicationServerKey}): endpoint and keys."""
        r = await self.http.post("/control/subscribe", {"server_key": server_key})
        assert r.status_code == 200, r.text
        return dict(r.json())

    async def wait_turn(self, endpoint: str, after: int, timeout: float) -> int:
        """The subscription's turn pushes so far, once there are more than `after` (or `timeout` s)."""
        params: dict[str, str | int | float] = {
            "path": urlsplit(endpoint).path,
            "after": after,
            "timeout": timeout,
        }
        r = await self.http.get("/control/wait", params=params)
        if r.status_code != 200:
            raise aiohttp.ClientError(f"the Web Push service answered {r.status_code}")
        return int(r.json()["turns"])


async def _post(client: Http, url: str, body: dict[str, Any], headers: dict[str, str], f: Figures) -> Answer:
    """POST with retries on transport errors and 5xx; the Idempotency-Key makes a retry safe."""
    for attempt in range(20):
        try:
            r = await client.post(url, body, headers)
            if r.status_code < 500:
                return r
            f.statuses_5xx[r.status_code] = f.statuses_5xx.get(r.status_code, 0) + 1
        except HTTP_ERRORS:
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


async def person(client: Http, p: Person, f: Figures, deadline: float) -> None:
    """A scripted person: follows the table stream and acts on each your_turn, resuming the
    stream after any disconnect with the last event id. Each connection's span, from its first line
    to its end as the client sees them, goes to `p.live` (a push then is to a player watching)."""
    table, auth = p.table, p.auth
    rng, last = random.Random(table), None
    while time.monotonic() < deadline:
        opened = None
        try:
            params = {"format": "ndjson", **({"last_event_id": last} if last else {})}
            async with client.stream(f"/api/v1/tables/{table}/stream", params, auth) as r:
                if r.status == 204:
                    return
                if r.status != 200:
                    raise aiohttp.ClientError(f"stream answered {r.status}")
                async for line in _lines(r):
                    if opened is None:
                        opened = time.time()
                    event = json.loads(line)
                    if event["type"] == "keepalive":
                        continue
                    last = event["id"]
                    if event["type"] == "table_finished":
                        return
                    if event["type"] != "your_turn":
                        continue
                    if THINK_MS[0] > 0:  # a person thinks before acting (capacity steps)
                        await asyncio.sleep(rng.uniform(0.5, 1.5) * THINK_MS[0] / 1000)
                    await _act(client, p, event["legal_actions"], event["version"], rng, f)
        except (*HTTP_ERRORS, ValueError):
            pass
        finally:
            if opened is not None:
                p.live.append((opened, time.time()))
        f.reconnects += 1
        await asyncio.sleep(0.5)


async def _lines(r: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """The non-empty lines of an NDJSON body, as bytes, split once per chunk as it comes (the
    client shares the two cores with the stack, so its cost is kept small)."""
    rest = b""
    async for chunk in r.content.iter_any():
        *lines, rest = (rest + chunk).split(b"\n")
        for line in lines:
            if line:
                yield line
    if rest:
        yield rest


class HintBudget:
    """`--hints N`: N hints a second across all the people, a token bucket (at most a second's worth
    at once, and at least one). A person whose turn it is takes a token, if there is one, and asks a
    hint first. Each client process has a bucket of its share of N."""

    def __init__(self) -> None:
        self.rate, self.tokens, self.at = 0.0, 0.0, time.monotonic()
        self.base = ""  # where the hint requests go (Stack.advice_base); "": the client's own base

    def take(self) -> bool:
        if self.rate <= 0:
            return False
        now = time.monotonic()
        self.tokens = min(max(1.0, self.rate), self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


HINTS = HintBudget()
# A person waits this long for a hint, then acts without it (a client shows the hint when it comes);
# the service answers within its HINT_THINK_MS (2 s) unless its replica is starved of CPU, and a
# person held longer would act less often, lightening the load the run compares.
HINT_PATIENCE = 3.0


async def _hint(client: Http, p: Person, f: Figures) -> None:
    """A person asks the strong level's hint on their turn (docs/hints.md), as a person with hints
    on would before acting: its time, whatever the answer, and the answer's status or code."""
    start = time.perf_counter()
    try:
        url = f"{HINTS.base}/api/v1/tables/{p.table}/hint"
        r = await client.get(url, params={"level": "strong"}, headers=p.auth, timeout=HINT_PATIENCE)
    except HTTP_ERRORS:  # not answered within HINT_PATIENCE (or the connection failed)
        f.hint_ms.append((time.perf_counter() - start) * 1000)
        f.hint_answers["no_answer"] += 1
        return
    f.hint_ms.append((time.perf_counter() - start) * 1000)
    f.hint_answers["200" if r.status_code == 200 else r.json().get("code", str(r.status_code))] += 1


async def _act(
    client: Http, p: Person, legal: dict[str, Any], version: int, rng: random.Random, f: Figures
) -> None:
    """One action at `version`, keyed by it: a retry after a lost answer cannot act twice. First a
    hint, when the run asks hints (`--hints`) and the budget has one."""
    if HINTS.take():
        await _hint(client, p, f)
    action = _choose(legal, rng)
    headers = {**p.auth, "Idempotency-Key": f"t{p.table}-v{version}"}
    body = {**action, "expected_version": version}
    start = time.perf_counter()
    answer = await _post(client, f"/api/v1/tables/{p.table}/actions", body, headers, f)
    if action["type"] == "play":
        f.play_ms.append((time.perf_counter() - start) * 1000)
        f.play_spans.append((start, time.perf_counter()))
    if answer.status_code != 200:
        code = answer.json().get("code", str(answer.status_code))
        f.refusals[code] = f.refusals.get(code, 0) + 1


async def pocket(client: Http, fake: WebPushControl, p: Person, f: Figures, deadline: float) -> None:
    """A person with the app in the background: no stream. Reads the table every POLL_SECONDS; on
    their turn, waits for its push (at most PUSH_WAIT s), then acts. Waiting keeps the push lag
    measurable: a person who acted first would cancel a late push, and the tail would go unseen."""
    rng, pushes = random.Random(p.table), 0
    while time.monotonic() < deadline:
        try:
            r = await client.get(f"/api/v1/tables/{p.table}", headers=p.auth)
        except HTTP_ERRORS:
            f.transport_errors += 1
            r = None
        if r is not None and r.status_code >= 500:
            f.statuses_5xx[r.status_code] = f.statuses_5xx.get(r.status_code, 0) + 1
        elif r is not None and r.status_code == 200:
            body = r.json()
            if body["status"] in ("finished", "abandoned"):
                return
            game, seat = body.get("game") or {}, body.get("your_seat")
            if seat is not None and seat in game.get("to_act", ()) and game.get("legal_actions"):
                seen = await fake.wait_turn(p.endpoint, pushes, PUSH_WAIT)
                if seen > pushes:
                    f.on_push += 1
                else:
                    f.without_push += 1
                pushes = seen
                await _act(client, p, game["legal_actions"], body["version"], rng, f)
        await asyncio.sleep(POLL_SECONDS)


async def healthz(client: Http, f: Figures, stop: asyncio.Event) -> None:
    """/healthz every 0.25 s; and how late the client's own event loop wakes a 0.25 s sleep (its
    lag is in every latency it measures: a busy client measures itself)."""
    while not stop.is_set():
        start = time.perf_counter()
        try:
            await client.get("/healthz")
            f.healthz_ms.append((time.perf_counter() - start) * 1000)
        except HTTP_ERRORS:
            pass
        slept = time.perf_counter()
        await asyncio.sleep(0.25)
        f.loop_lag_ms.append((time.perf_counter() - slept - 0.25) * 1000)


async def cpu_windows(
    meter: CpuMeter, t0: float, stop: asyncio.Event, into: list[tuple[float, dict[str, float]]]
) -> None:
    """A CpuMeter snapshot every 10 s from `t0` (`cores_busy_per_10s`: which processes the tail's
    windows kept busy)."""
    due = t0
    while not stop.is_set():
        into.append(await asyncio.to_thread(meter.snapshot))
        due += 10.0
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), max(0.0, due - time.monotonic()))
    into.append(await asyncio.to_thread(meter.snapshot))


def print_cpu_windows(snaps: list[tuple[float, dict[str, float]]]) -> None:
    """`cores_busy_per_10s`: per 10 s window, all the service's cores busy and the kinds above 0.1."""
    parts = []
    for i, (a, b) in enumerate(itertools.pairwise(snaps)):
        wall = max(b[0] - a[0], 1e-9)
        used = {k: (b[1].get(k, 0.0) - a[1].get(k, 0.0)) / wall for k in CPU_KINDS}
        kinds = " ".join(f"{k} {v:.2f}" for k, v in sorted(used.items(), key=lambda kv: -kv[1]) if v >= 0.1)
        parts.append(f"{i * 10}s {sum(used.values()):.2f} ({kinds})")
    print(f"cores_busy_per_10s: {'; '.join(parts)}")


async def faults(
    stack: Stack, f: Figures, at: list[float], t0: float, redis_back: Callable[[], None] | None = None
) -> None:
    """Kill the people lane's worker, restart Redis (then call `redis_back`), kill a web process,
    restart PostgreSQL (down for 5 s): at the given seconds into the run."""

    def restart_postgres() -> None:
        down = time.perf_counter()
        stack.stop_postgres()
        time.sleep(5)
        stack.start_postgres()
        f.db_down = (down, stack.postgres_ready() or time.perf_counter())

    def replace_people_worker() -> None:
        stack.kill("people")
        stack.start_worker(*LANES[1])

    def restart_redis() -> None:
        stack.kill("redis")
        stack.start_redis()
        f.fault_at["redis"] = time.time()
        if redis_back is not None:
            redis_back()

    steps = [
        ("people lane worker killed (SIGKILL), replaced", replace_people_worker),
        ("redis restarted (its queue and pub/sub lost)", restart_redis),
        ("one uvicorn worker killed (SIGKILL)", stack.kill_web_worker),
        ("postgres restarted (fast shutdown, down 5 s)", restart_postgres),
    ]
    for when, (what, act) in zip(at, steps, strict=True):
        await asyncio.sleep(max(0.0, t0 + when - time.monotonic()))
        await asyncio.to_thread(act)
        f.faults.append(f"{time.monotonic() - t0:.0f}s: {what}")


CORRESPONDENCE_LATER = 10.0  # seconds after Redis is back that the second half's deadlines pass


def correspondence_due_now(stack: Stack, ids: list[int], f: Figures) -> None:
    """Just after Redis came back (its clock set empty, so the 3-hour clocks' entries are gone), move
    the correspondence tables' deadlines in the database, their only record left: half to now (the
    workers and beat are still reconnecting), half to CORRESPONDENCE_LATER seconds from now (all
    reconnected by then). The sweep's query on `deadline` must act on each."""
    with psycopg.connect(stack.db_url, autocommit=True) as conn:
        rows = conn.execute(
            "UPDATE games_table SET deadline = clock_timestamp()"
            " + CASE WHEN id = ANY(%s) THEN %s * interval '1 second' ELSE interval '0' END"
            " WHERE id = ANY(%s) AND deadline IS NOT NULL AND status IN ('passing', 'playing', 'moon_choice')"
            " RETURNING id, deadline",
            (ids[1::2], CORRESPONDENCE_LATER, ids),
        ).fetchall()
    f.correspondence_due = {int(table): deadline for table, deadline in rows}


async def create_tables(
    client: Http,
    app_auth: dict[str, str],
    f: Figures,
    people: int,
    bots: int,
    tag: str,
    target: int = 50,
    person_target: int | None = None,
) -> tuple[list[int], list[Person]]:
    """`people` tables with one person and three bots, `bots` tables of bots only, playing to
    `target` points (the person tables to `person_target`, when given). Absent people at random
    (ABSENT_SHARE); of the others, every 1/POCKET_SHARE-th has no stream (`pocket`)."""
    ids, persons = [], []
    present = 0
    for i in range(people + bots):
        human = i < people
        body = {
            "options": {"target_score": (person_target or target) if human else target},
            "bots": {str(s): "basic" for s in range(1 if human else 0, 4)},
            "clocks": {"pass": 10, "play": 5, "moon": 5},
            "hints": human,  # with or without --hints, the same tables (only the asking differs)
        }
        key = {**app_auth, "Idempotency-Key": f"{tag}c{i}"}
        table = (await _post(client, "/api/v1/tables", body, key, f)).json()
        ids.append(table["id"])
        if human:
            key = {**app_auth, "Idempotency-Key": f"{tag}p{i}"}
            player = await _post(client, "/api/v1/players", {"name": f"p{i}"}, key, f)
            if random.random() < ABSENT_SHARE[0]:
                mode = "absent"
            else:
                share = POCKET_SHARE[0]
                mode = "pocket" if int((present + 1) * share) > int(present * share) else "stream"
                present += 1
            persons.append(Person(table["id"], player.json()["token"], mode))
    return ids, persons


async def create_correspondence(
    client: Http, app_auth: dict[str, str], f: Figures, count: int
) -> list[Person]:
    """`count` correspondence tables (every clock CORRESPONDENCE_CLOCK) of three bots and a person
    who never acts: each waits on its person's 3-hour pass until its deadline is moved."""
    persons = []
    clock = CORRESPONDENCE_CLOCK
    for i in range(count):
        body = {
            "options": {"target_score": 50},
            "bots": {str(s): "basic" for s in range(1, 4)},
            "clocks": {"pass": clock, "play": clock, "moon": clock},
        }
        table = (
            await _post(client, "/api/v1/tables", body, {**app_auth, "Idempotency-Key": f"k{i}"}, f)
        ).json()
        key = {**app_auth, "Idempotency-Key": f"kp{i}"}
        player = await _post(client, "/api/v1/players", {"name": f"k{i}"}, key, f)
        persons.append(Person(table["id"], player.json()["token"], "correspondence"))
    return persons


# The default run's game length, person and bot-only tables alike. Until stop 50 it was 50 points:
# by then the service played every game of the 200-table run out within about 90 s, before the last
# two faults (the web worker killed at 99 s, PostgreSQL restarted at 135 s) and with half the run
# idle, so the faults met no play and the run's actions a second said how much work there was (at
# 100 points, two thirds of the person tables and every bot-only one still ended within the run). At
# 1,000 points no game ends within it: every table plays through every fault. The CI size
# (tests/deploy/test_load.py) plays to 50, so that its games end (and the end of a game is checked).
GAME_TARGET = 1000
ABSENT_SHARE = [0.1]
# How long a streaming person thinks before each action, on average (uniform from half to one and a
# half times this), in milliseconds: `--think-ms` of a capacity step. Acting at once, every person
# table is a closed loop that takes all the machine gives it, so every step saturates the machine
# and its play p99 says how contended a saturated machine is rather than how many tables it holds;
# with people thinking, each table asks for a bounded number of actions a second, and capacity is
# the number of tables whose play p99 holds (issue 37).
THINK_MS = [0.0]
POCKET_SHARE = [0.5]  # of the people who act: no stream, they learn of their turn by push (and polling)
# A capacity step's games go to this many points, so that no table finishes within the step: with
# games to 50 (about three hands, a few seconds each when nobody waits) most tables had finished
# long before the step ended, and the step measured how many games there were, not how many
# actions the machine could serve (issue 37).
CAPACITY_TARGET = 10_000
WARM_UP = 10.0  # seconds of each capacity step not measured (and the push lag also printed without)


async def register_devices(client: Http, fake: WebPushControl, persons: list[Person], f: Figures) -> None:
    """Each person subscribes with the served VAPID key, as a browser would, and registers the
    subscription as a push device (before joining: their first turn is pushed)."""
    gate = asyncio.Semaphore(8)

    async def one(p: Person) -> None:
        async with gate:
            r = await client.get("/api/v1/push/vapid-key", headers=p.auth)
            assert r.status_code == 200, r.text
            sub = await fake.subscription(r.json()["public_key"])
            device = {"kind": "webpush", "token": sub["endpoint"], "keys": sub["keys"]}
            r = await _post(client, "/api/v1/me/devices", device, p.auth, f)
            assert r.status_code in (200, 201), r.text
            p.endpoint = sub["endpoint"]

    await asyncio.gather(*(one(p) for p in persons))


async def seat_people(
    client: Http,
    persons: list[Person],
    f: Figures,
    until: float,
    fake: WebPushControl | None,
    play: bool = True,
) -> list[asyncio.Task[None]]:
    """Each person joins their table; unless `play` is False (their play runs elsewhere:
    `play_elsewhere`), a task of this loop plays for each who acts."""
    tasks = []
    for p in persons:
        r = await _post(client, f"/api/v1/tables/{p.table}/join", {}, p.auth, f)
        assert r.status_code == 200, r.text
        if not play:
            continue
        if p.mode == "stream":
            tasks.append(asyncio.create_task(person(client, p, f, until)))
        elif p.mode == "pocket" and fake is not None:
            tasks.append(asyncio.create_task(pocket(client, fake, p, f, until)))
        # absent, correspondence: their clocks run out, the server plays for them
    return tasks


# The load run's people play from CLIENT_PROCESSES processes of their own. One asyncio process
# following 45 streams, polling for 45 phones and playing for 100 people measured its own queues:
# at 200 tables it saw plays answered in 570 ms at the median (3.8 s at p99) that the web had
# answered in 31 ms (wait and run, 218 ms at p99), and a 1 ms /healthz in 342 ms (bench/README.md,
# stop 46). Each process has its own event loop and HTTP client; their figures are added up.
CLIENT_PROCESSES = 3


def _play_share(
    base: str,
    webpush_url: str,
    persons: list[Person],
    until: float,
    hints: tuple[float, str],
    think_ms: float = 0.0,
    measure_from: float = 0.0,
) -> tuple[Figures, list[list[tuple[float, float]]]]:
    """In a client process: these people play (each acting one, as `seat_people` would, thinking
    about `think_ms` before each action) until their tables finish or `until` (monotonic, the same
    clock in every process); their figures from `measure_from` on (a capacity step's warm-up is not
    measured), and each one's stream spans."""
    HINTS.rate, HINTS.base = hints
    THINK_MS[0] = think_ms

    async def main() -> Figures:
        f = Figures()
        if measure_from:
            asyncio.get_running_loop().call_at(measure_from, _forget_warm_up, f)
        # A person following the stream holds its connection and one request at a time beside it (a
        # hint, then an action): the process's client bounds none (aiohttp's pool finds a kept-alive
        # connection by its host in constant time; httpcore looked through every connection of its
        # pool for each request, so until stop 58 each person had an httpx client of their own).
        fake = WebPushControl(webpush_url) if webpush_url else None
        async with Http(base, read=45.0) as client:
            tasks = []
            for p in persons:
                if p.mode == "stream":
                    tasks.append(asyncio.create_task(person(client, p, f, until)))
                elif p.mode == "pocket" and fake is not None:
                    tasks.append(asyncio.create_task(pocket(client, fake, p, f, until)))
            # A stream of a table still playing at the end would follow it for ever: stopped then.
            _, late = await asyncio.wait(tasks, timeout=max(0.0, until - time.monotonic()) + 1.0)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        if fake is not None:
            await fake.http.aclose()
        return f

    f = _run(main())
    return f, [p.live for p in persons]


T = TypeVar("T")


def _run(main: Coroutine[Any, Any, T]) -> T:
    """`main` on uvloop's event loop, the one uvicorn serves on: the client shares the two cores with
    the stack, and asyncio's own loop, written in Python, cost it a third more CPU per action
    (bench/README.md, stop 55)."""
    return uvloop.run(main)


def _forget_warm_up(f: Figures) -> None:
    """A capacity step's warm-up is over: what was measured so far does not count."""
    f.play_ms.clear()
    f.play_spans.clear()
    f.hint_ms.clear()
    f.hint_answers.clear()


async def play_elsewhere(
    stack: Stack, persons: list[Person], until: float, think_ms: float = 0.0, measure_from: float = 0.0
) -> list[asyncio.Future[tuple[Figures, list[list[tuple[float, float]]]]]]:
    """The acting people shared out among CLIENT_PROCESSES processes (`_play_share`)."""
    import concurrent.futures
    import multiprocessing

    acting = [p for p in persons if p.mode in ("stream", "pocket")]
    spawn = multiprocessing.get_context("spawn")  # not a fork of this process's threads and connection
    pool = concurrent.futures.ProcessPoolExecutor(CLIENT_PROCESSES, mp_context=spawn)
    loop = asyncio.get_running_loop()
    rate = HINTS.rate / CLIENT_PROCESSES
    futures = [
        loop.run_in_executor(
            pool,
            _play_share,
            stack.base,
            stack.webpush_url,
            share,
            until,
            (rate, stack.advice_base),
            think_ms,
            measure_from,
        )
        for share in (acting[i::CLIENT_PROCESSES] for i in range(CLIENT_PROCESSES))
    ]
    pool.shutdown(wait=False)
    return futures


def absorb(f: Figures, other: Figures) -> None:
    """Add a client process's figures to `f`."""
    f.play_ms += other.play_ms
    f.play_spans += other.play_spans
    f.hint_ms += other.hint_ms
    f.hint_answers += other.hint_answers
    f.retries += other.retries
    f.transport_errors += other.transport_errors
    f.reconnects += other.reconnects
    f.on_push += other.on_push
    f.without_push += other.without_push
    for mine, theirs in ((f.statuses_5xx, other.statuses_5xx), (f.refusals, other.refusals)):
        for key, n in theirs.items():
            mine[key] = mine.get(key, 0) + n


def _client(stack: Stack, connections: int) -> Http:
    return Http(stack.base, connections + 50)


async def run(
    stack: Stack,
    tables: int,
    duration: float,
    with_faults: bool,
    correspondence: int,
    meter: CpuMeter,
    profile: str | None = None,
    person_target: int | None = None,
    bot_target: int = 50,
) -> tuple[Figures, list[int], list[Person], list[Person], float]:
    f = Figures()
    app_auth = {"Authorization": f"Bearer {stack.app_key()}"}
    fake = WebPushControl(stack.webpush_url)
    async with _client(stack, tables) as client, fake.http:
        half = tables // 2
        ids, persons = await create_tables(
            client, app_auth, f, half, tables - half, "", target=bot_target, person_target=person_target
        )
        corr = await create_correspondence(client, app_auth, f, correspondence)
        await register_devices(client, fake, persons + corr, f)
        spy = Profiler(stack, meter, Path(profile), duration) if profile else None
        before = f.actions_before = await asyncio.to_thread(_actions, ids)
        f.bot_actions_before = await asyncio.to_thread(_actions, ids[half:])
        first = await asyncio.to_thread(meter.snapshot)
        t0 = time.monotonic()
        f.started, f.t0 = time.time(), time.perf_counter()
        stop = asyncio.Event()
        windows: list[tuple[float, dict[str, float]]] = []
        tasks = [
            asyncio.create_task(healthz(client, f, stop)),
            asyncio.create_task(cpu_windows(meter, t0, stop, windows)),
        ]
        await seat_people(client, persons + corr, f, t0 + duration, fake, play=False)
        shares = await play_elsewhere(stack, persons, t0 + duration)
        if with_faults:  # all four happen, even if the tables were quick
            at = [duration * 0.15, duration * 0.35, duration * 0.55, duration * 0.75]
            corr_ids = [p.table for p in corr]
            await faults(stack, f, at, t0, lambda: correspondence_due_now(stack, corr_ids, f))
        await _until_done(ids, t0 + duration)
        elapsed = time.monotonic() - t0
        last = await asyncio.to_thread(meter.snapshot)
        actions = f.actions_in_run = await asyncio.to_thread(_actions, ids) - before
        f.bot_actions_in_run = await asyncio.to_thread(_actions, ids[half:]) - f.bot_actions_before
        acting = [p for p in persons if p.mode in ("stream", "pocket")]
        for i, share in enumerate(shares):  # their tables are over (or the time is): they end
            played, spans = await share
            absorb(f, played)
            for p, live in zip(acting[i::CLIENT_PROCESSES], spans, strict=True):
                p.live = live
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if spy is not None:
            await asyncio.to_thread(spy.wait, True)
    print_cpu("", meter, first, last, actions)
    print_cpu_windows(windows)
    if profile:
        print_profile("", Path(profile))
    return f, ids, persons, corr, elapsed


@dataclass
class Step:
    """One capacity step's measured window: the person's plays, the actions of every table in it,
    the CPU by kind of process (CpuMeter.snapshot at both ends), how many bot-only tables finished."""

    people: int
    f: Figures
    actions: int
    elapsed: float
    cpu: tuple[tuple[float, dict[str, float]], tuple[float, dict[str, float]]]
    flood_finished: int

    @property
    def rate(self) -> float:
        return self.actions / self.elapsed


async def capacity_step(
    stack: Stack,
    people: int,
    flood: int,
    seconds: float,
    meter: CpuMeter,
    profile: Path | None,
    think_ms: float = 0.0,
) -> Step:
    """`people` person tables (nobody absent, each person thinking about `think_ms` before each
    action) beside `flood` bot-only tables for `seconds`: the person's play latencies, and the
    actions per second of the whole machine."""
    f = Figures()
    app_auth = {"Authorization": f"Bearer {stack.app_key()}"}
    async with _client(stack, 2 * people) as client:  # each: its stream and an action beside it
        ABSENT_SHARE[0], POCKET_SHARE[0] = 0.0, 0.0  # everyone follows the stream, no devices
        THINK_MS[0] = think_ms
        ids, persons = await create_tables(
            client, app_auth, f, people, flood, f"cap{people}-", target=CAPACITY_TARGET
        )
        await seat_people(client, persons, f, 0.0, None, play=False)
        # As in the default run, the people play from client processes of their own (until stop 50
        # this process played for all of them: at 160 tables it used 0.7 of a core, 2.6 ms of CPU per
        # action against 0.7 at 80, and its own queues were in the step's latencies).
        warm = time.monotonic() + WARM_UP  # connections opened, code paths warm: then measure
        shares = await play_elsewhere(stack, persons, warm + seconds, think_ms, measure_from=warm)
        await asyncio.sleep(max(0.0, warm - time.monotonic()))
        spy = Profiler(stack, meter, profile, seconds) if profile else None
        before = await asyncio.to_thread(_actions, ids)
        first = await asyncio.to_thread(meter.snapshot)
        t0 = time.monotonic()
        await asyncio.sleep(max(0.0, t0 + seconds - time.monotonic()))
        elapsed = time.monotonic() - t0
        last = await asyncio.to_thread(meter.snapshot)
        actions = await asyncio.to_thread(_actions, ids) - before
        for share in shares:  # each stops at the step's end
            played, _ = await share
            absorb(f, played)
        if spy is not None:
            await asyncio.to_thread(spy.wait)
    flood_finished = await asyncio.to_thread(_finished, ids[people:])
    await asyncio.to_thread(_abandon, ids)  # the next step starts on a quiet machine
    return Step(people, f, actions, elapsed, (first, last), flood_finished)


def _own_connection(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run in a thread of asyncio's executor, `fn` closes that thread's database connection when
    done: kept open, a connection made before the PostgreSQL restart fails the next call on that
    thread ("terminating connection due to administrator command")."""

    def wrapped(*args: Any) -> Any:
        from django.db import connection

        try:
            return fn(*args)
        finally:
            connection.close()

    return wrapped


@_own_connection
def _actions(ids: list[int]) -> int:
    from games.models import Move

    return Move.objects.filter(table__in=ids, kind__in=["pass", "play", "moon"]).count()


@_own_connection
def _actions_by_window(
    ids: list[int], started: float, elapsed: float
) -> tuple[list[tuple[int, float]], float]:
    """Actions a second in each 10-s window of the run (by the moves' commit times), and when the first
    table finished (seconds into the run; the run's length if none did): with games to 50 points
    every table may finish long before the run ends, and the run's mean then says how much work there
    was, not how fast it was done (issue 37)."""
    from django.db.models import Min

    from games.models import Move, Table

    t0 = dt.datetime.fromtimestamp(started, dt.UTC)
    end = t0 + dt.timedelta(seconds=elapsed)
    within = {"created_at__gte": t0, "created_at__lt": end}
    moves = Move.objects.filter(table__in=ids, kind__in=["pass", "play", "moon"], **within)
    counts: Counter[int] = Counter()
    for made in moves.values_list("created_at", flat=True).iterator():
        counts[int((made - t0).total_seconds() // 10) * 10] += 1
    ended = Table.objects.filter(pk__in=ids, finished_at__isnull=False).aggregate(Min("finished_at"))
    first = ended["finished_at__min"]
    first_end = (first - t0).total_seconds() if first is not None and first >= t0 else elapsed
    windows = [at for at in range(0, int(elapsed) + 1, 10) if elapsed - at >= 1.0]  # not a last sliver
    return [(at, counts[at] / min(10.0, elapsed - at)) for at in windows], first_end


@_own_connection
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

    while time.monotonic() < deadline and await asyncio.to_thread(open_tables) > 0:
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
    return {
        "finished": finished,
        "replayed": replayed,
        "unfinished_moving": len(versions) - len(stuck),
        "problems": problems,
        "lags": lags,
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
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise (the sync calls)


def _print_client(f: Figures) -> None:
    print(f"client_retries: {f.retries}")
    print(f"answers_5xx_retried: {sum(f.statuses_5xx.values())} {dict(sorted(f.statuses_5xx.items()))}")
    print(f"answers_500: {f.statuses_5xx.get(500, 0)}")
    print(f"requests_without_answer: {f.transport_errors}")
    print(f"stream_reconnects: {f.reconnects}")
    print(f"refusals: {sum(f.refusals.values())} {dict(sorted(f.refusals.items()))}")


def load(args: argparse.Namespace, stack: Stack, meter: CpuMeter) -> bool:
    duration = args.duration or max(90.0, args.tables * 1.5)
    stack.start_webpush()
    with_faults = not args.no_faults
    f, ids, persons, corr, elapsed = _run(
        run(
            stack,
            *(args.tables, duration, with_faults, args.correspondence, meter, args.profile),
            *(args.target, args.bot_target),
        )
    )
    people_ids = [p.table for p in persons]
    result = verify(ids)
    worst = sorted(result["lags"], reverse=True)[:5]
    result["worst"] = [f"{lag:.0f} ms at {at - f.started:.0f}s" for lag, at in worst]
    lags = [lag for lag, _ in result["lags"]]
    bot_ids = [t for t in ids if t not in set(people_ids)]
    bot_finished = _finished(bot_ids)
    modes = Counter(p.mode for p in persons)
    print(f"tables: {args.tables} ({len(people_ids)} with a person, {len(bot_ids)} bots only)")
    print(
        f"people: {len(persons)} ({modes['stream']} following the stream, {modes['pocket']} polling"
        f" without one, {modes['absent']} absent)"
    )
    print(f"seconds: {elapsed:.0f}")
    print(f"actions_per_second: {f.actions_in_run / elapsed:.1f}")
    rates, first_end = _actions_by_window(ids, f.started, elapsed)
    print(f"actions_per_second_per_10s: {', '.join(f'{at}s {rate:.0f}' for at, rate in rates)}")
    busy = [rate for at, rate in rates if at + 10 <= first_end]
    print(
        f"actions_per_second_while_every_table_played: {sum(busy) / len(busy) if busy else float('nan'):.1f}"
        f" (the 10-s windows before the first table finished, at {first_end:.0f}s)"
    )
    print(f"play_latency_p50_ms: {_pct(f.play_ms, 0.5):.1f}")
    print(f"play_latency_p99_ms: {_pct(f.play_ms, 0.99):.1f}")
    if f.db_down is not None:  # a play in flight while the database is down waits for it
        down, up = f.db_down
        apart = [ms for ms, (a, b) in zip(f.play_ms, f.play_spans, strict=True) if b < down or a > up]
        print(f"plays_overlapping_the_database_restart: {len(f.play_ms) - len(apart)} of {len(f.play_ms)}")
        print(f"play_latency_p99_ms_apart_from_the_database_restart: {_pct(apart, 0.99):.1f}")
    buckets: dict[int, list[float]] = {}
    for ms, (start, _) in zip(f.play_ms, f.play_spans, strict=True):  # where the tail is, beside the faults
        buckets.setdefault(max(0, int((start - f.t0) // 10) * 10), []).append(ms)
    by_time = ", ".join(f"{at}s {_pct(v, 0.99):.0f} ({len(v)})" for at, v in sorted(buckets.items()))
    print(f"play_latency_p99_ms_per_10s: {by_time}")
    worst = sorted(zip(f.play_ms, f.play_spans, strict=True), reverse=True)[:10]
    print(f"play_latency_worst: {', '.join(f'{ms:.0f} ms at {a - f.t0:.1f}s' for ms, (a, _) in worst)}")
    print(f"healthz_latency_p50_ms: {_pct(f.healthz_ms, 0.5):.1f}")
    print(f"play_to_healthz_p50_ratio: {_pct(f.play_ms, 0.5) / _pct(f.healthz_ms, 0.5):.2f}")
    print(f"client_loop_lag_p50_ms: {_pct(f.loop_lag_ms, 0.5):.1f}")
    print(f"client_loop_lag_p99_ms: {_pct(f.loop_lag_ms, 0.99):.1f}")
    print(f"timeouts_acted: {len(lags)}")
    print(f"timeout_lag_p50_ms: {_pct(lags, 0.5):.0f}")
    print(f"timeout_lag_p99_ms: {_pct(lags, 0.99):.0f}")
    if f.db_down is not None:  # a deadline that passed while the database was down waits for it
        down, up = (f.started + (at - f.t0) for at in f.db_down)
        apart = [lag for lag, due in result["lags"] if not down <= due <= up]
        print(f"timeouts_due_while_the_database_was_down: {len(lags) - len(apart)} of {len(lags)}")
        print(f"timeout_lag_p99_ms_apart_from_the_database_restart: {_pct(apart, 0.99):.0f}")
        # Every deadline, its lag counted from when it could first be acted on: a deadline that
        # passed while PostgreSQL was down, from the database's return (the service's own delay).
        own = [lag - max(0.0, up - due) * 1000 if down <= due <= up else lag for lag, due in result["lags"]]
        print(f"timeout_lag_p99_ms_counted_from_the_database_return: {_pct(own, 0.99):.0f}")
        # ... and those deadlines alone: how long after the return each was acted on (the pool's
        # reconnection and the clock's retry; bench/README.md, stop 56)
        back = sorted(round(lag - (up - due) * 1000) for lag, due in result["lags"] if down <= due <= up)
        print(f"timeout_after_the_database_return_ms: {', '.join(map(str, back)) or 'none due while down'}")
    print(f"timeout_lag_max_ms: {max(lags, default=float('nan')):.0f}")
    print(f"tables_finished: {result['finished']}")
    print(f"tables_unfinished_still_moving: {result['unfinished_moving']}")
    print(f"bot_only_tables_finished: {bot_finished} of {len(bot_ids)}")
    print(f"bot_only_games_per_minute: {bot_finished / elapsed * 60:.1f}")
    print(f"bot_only_actions_per_second: {f.bot_actions_in_run / elapsed:.1f}")
    print(f"move_logs_replayed_exactly: {result['replayed']}")
    _print_client(f)
    print(f"timeout_lag_worst: {', '.join(result['worst'])}")
    print_hints("", f, elapsed)
    push_ok = push_figures(persons + corr, stack.webpush_url, f)
    sweep = float(stack.env["SWEEP_SECONDS"])
    corr_ok = correspondence_figures(corr, f, with_faults, result["problems"], sweep)
    for fault in f.faults:
        print(f"fault: {fault}")
    for problem in result["problems"]:
        print(f"PROBLEM: {problem}")
    ok = not result["problems"] and result["replayed"] == args.tables and f.statuses_5xx.get(500, 0) == 0
    return ok and push_ok and corr_ok and (args.no_faults or len(f.faults) == 4)


def print_hints(prefix: str, f: Figures, elapsed: float) -> None:
    """The hints the people asked (`--hints`): how many a second, the answers, their latency."""
    print(f"{prefix}hints_per_second_asked: {len(f.hint_ms) / elapsed:.1f} (--hints {HINTS.rate})")
    print(f"{prefix}hint_answers: {sum(f.hint_answers.values())} {dict(sorted(f.hint_answers.items()))}")
    for q in (50, 95, 99):
        print(f"{prefix}hint_latency_p{q}_ms: {_pct(f.hint_ms, q / 100):.1f}")


def push_figures(people: list[Person], fake_url: str, f: Figures) -> bool:
    """The pushes the Web Push service received, against the messages recorded in the database: the
    lag from a turn's commit (PushMessage.created_at, set in the move's transaction) to the
    provider's request; pushes to a player whose stream was open from that commit to the push;
    repeats. True when nothing reached a watching player, nothing came twice, the provider refused
    nothing, and pushes came at all."""
    from games.models import PushMessage

    got = httpx.get(fake_url + "/control/receipts", timeout=60).json()
    receipts: list[dict[str, Any]] = got["receipts"]
    by_path = {urlsplit(p.endpoint).path: p for p in people if p.endpoint}
    mode_of = {p.endpoint: p.mode for p in people if p.endpoint}
    fields = ("uuid", "device_id", "device__token", "kind", "key", "status", "last_error", "created_at")
    rows = {str(m["uuid"]): m for m in PushMessage.objects.values(*fields)}
    lags: list[tuple[float, float]] = []  # (ms, wall clock of the commit)
    unknown, watched, finished_watched = 0, [], 0
    to_streamers: Counter[str] = Counter()
    for r in receipts:
        row = rows.get(str(r["message"]))
        if row is None:
            unknown += 1
            continue
        made = row["created_at"].timestamp()
        if r["kind"] == "turn":
            lags.append(((r["at"] - made) * 1000, made))
        p = by_path.get(r["path"])
        if p is None or p.mode != "stream":
            continue
        to_streamers[r["kind"]] += 1
        if any(opened <= made and r["at"] <= closed for opened, closed in p.live):
            finished_watched += r["kind"] == "finished"
            since = f", {made - f.fault_at['redis']:.1f}s after redis" if "redis" in f.fault_at else ""
            watched.append(f"table {p.table} {r['kind']} at {made - f.started:.1f}s{since}")
    per_message = Counter(str(r["message"]) for r in receipts)
    repeats = sum(n - 1 for n in per_message.values())
    per_turn = Counter((rows[m]["device_id"], rows[m]["key"]) for m in per_message if m in rows)
    repeats += sum(n - 1 for n in per_turn.values())  # two messages of one turn on one device
    turns = [m for m in rows.values() if m["kind"] == "turn" and mode_of.get(m["device__token"]) != "stream"]
    unpushed = [m for m in turns if m["status"] == "cancelled" and m["last_error"] == "acted"]
    ms = [lag for lag, _ in lags]
    worst = [f"{lag:.0f} ms at {made - f.started:.0f}s" for lag, made in sorted(lags, reverse=True)[:5]]
    statuses = Counter(m["status"] for m in rows.values())
    reasons = Counter(m["last_error"] for m in rows.values() if m["status"] == "cancelled")
    modes = Counter(p.mode for p in people if p.endpoint)
    print(f"push_grace_seconds: {PUSH_GRACE}")
    print(f"push_devices: {sum(modes.values())} {dict(sorted(modes.items()))}")
    print(f"push_receipts: {len(receipts)} {dict(sorted(Counter(r['kind'] for r in receipts).items()))}")
    print(f"push_lags_measured: {len(ms)}")
    print(f"push_lag_p50_ms: {_pct(ms, 0.5):.1f}")
    print(f"push_lag_p99_ms: {_pct(ms, 0.99):.1f}")
    print(f"push_lag_max_ms: {max(ms, default=float('nan')):.1f}")
    print(f"push_lag_worst: {', '.join(worst)}")
    # Each push worker process pays for its first send (imports, the HTTP client): at the start only.
    warm = [lag for lag, made in lags if made - f.started > WARM_UP]
    print(f"push_lag_p99_ms_after_the_first_{WARM_UP:.0f}s: {_pct(warm, 0.99):.1f}")
    buckets: dict[int, list[float]] = {}
    for lag, made in lags:  # where the tail is: the start, and the faults (their times are printed)
        buckets.setdefault(max(0, int((made - f.started) // 10) * 10), []).append(lag)
    by_time = ", ".join(f"{at}s {_pct(v, 0.99):.0f} ({len(v)})" for at, v in sorted(buckets.items()))
    print(f"push_lag_p99_ms_per_10s: {by_time}")
    # A turn whose seat acted (or timed out) before its push went was never pushed: its lag, unseen, was
    # longer than that. Counted as infinitely late, they bound the p99 from above.
    print(f"push_turns_unpushed_seat_acted_first: {len(unpushed)} of {len(turns)}")
    print(f"push_lag_p99_ms_counting_unpushed_as_late: {_pct(ms + [float('inf')] * len(unpushed), 0.99):.1f}")
    when = sorted(m["created_at"].timestamp() - f.started for m in unpushed)
    print(f"push_turns_unpushed_at: {', '.join(f'{at:.0f}s' for at in when[:10])}")
    print(f"pocket_turns_played_on_their_push: {f.on_push} of {f.on_push + f.without_push}")
    print(f"pushes_to_seats_with_a_live_stream: {len(watched)}")
    print(f"finished_pushes_to_seats_with_a_live_stream: {finished_watched} (of those above)")
    print(f"pushes_to_streaming_people: {sum(to_streamers.values())} {dict(sorted(to_streamers.items()))}")
    print(f"duplicate_pushes_per_turn: {repeats}")
    print(f"push_receipts_of_unknown_messages: {unknown}")
    print(f"push_messages: {len(rows)} {dict(sorted(statuses.items()))}")
    print(f"push_messages_cancelled: {dict(sorted(reasons.items()))}")
    pending = sorted(
        m["created_at"].timestamp() - f.started for m in rows.values() if m["status"] == "pending"
    )
    print(f"push_messages_pending_at_the_end: {len(pending)} {', '.join(f'{at:.0f}s' for at in pending[:5])}")
    print(f"push_requests_refused_by_the_provider: {len(got['problems'])} {got['problems'][:3]}")
    for line in watched[:10]:
        print(f"push_to_a_live_stream: {line}")
    return not watched and not repeats and not unknown and not got["problems"] and bool(receipts)


def correspondence_figures(
    corr: list[Person], f: Figures, with_faults: bool, problems: list[str], sweep_seconds: float
) -> bool:
    """Whether the sweep acted on each correspondence deadline moved at the Redis restart, and how
    long past the deadline; their move logs replay. True when every one was acted on."""
    from django.db import transaction

    from games.models import Move, Table
    from games.tasks import CLOCK_GRACE

    replayed = 0
    for p in corr:
        with transaction.atomic():
            replayed += _check_table(Table.objects.get(pk=p.table), problems)
    print(f"correspondence_tables: {len(corr)} (clocks {CORRESPONDENCE_CLOCK} s, the person absent)")
    print(f"correspondence_move_logs_replayed_exactly: {replayed} of {len(corr)}")
    if not with_faults:
        print("correspondence_deadlines_acted_after_redis_restart: not measured (no faults)")
        return replayed == len(corr)
    delays: dict[int, float] = {}
    for table, deadline in f.correspondence_due.items():
        acted = None
        moves = Move.objects.filter(table_id=table, created_at__gte=deadline).order_by("seq")
        for move in moves:
            for kind, data, _, _ in move.events:
                missed = data.get("deadline") if kind == "turn_timed_out" else None
                if missed and abs((dt.datetime.fromisoformat(missed) - deadline).total_seconds()) < 1:
                    acted = move.created_at
            if acted is not None:
                break
        if acted is not None:
            delays[table] = (acted - deadline).total_seconds() * 1000
    due = len(f.correspondence_due)
    later = {p.table for p in corr[1::2]}
    at_once = [ms for table, ms in delays.items() if table not in later]
    after = [ms for table, ms in delays.items() if table in later]
    print(
        f"correspondence_deadlines_acted_after_redis_restart: {len(delays)} of {due} (of {len(corr)} tables)"
    )
    first, second = max(at_once, default=float("nan")), max(after, default=float("nan"))
    print(f"correspondence_act_delay_max_ms_due_as_redis_came_back: {first:.0f}")
    print(f"correspondence_act_delay_max_ms_due_{CORRESPONDENCE_LATER:.0f}s_later: {second:.0f}")
    print(f"sweep_interval_ms: {sweep_seconds * 1000:.0f}")
    grace_ms = CLOCK_GRACE.total_seconds() * 1000
    print(f"clock_grace_ms: {grace_ms:.0f}")  # the sweep acts on a clock once it is this late
    return replayed == len(corr) and due == len(corr) and len(delays) == due


@_own_connection
def _finished(ids: list[int]) -> int:
    from games.models import Table

    return Table.objects.filter(pk__in=ids, status="finished").count()


def _print_slow_plays(name: str, f: Figures, over_ms: float, logs: Path | None) -> None:
    """How the step's plays over `over_ms` fall in time: the distinct seconds that hold them and
    the most in any one second (a burst, against plays spread thinly); with --logs, every play's
    wall-clock start and latency in `<logs>/<name>plays.txt`, to lay beside the processes' logs."""
    plays = list(zip(f.play_ms, (start for start, _ in f.play_spans), strict=True))
    seconds = Counter(int(start) for ms, start in plays if ms > over_ms)
    slow, busiest = seconds.total(), max(seconds.values(), default=0)
    print(
        f"{name}people_plays_over_{over_ms:g}_ms: {slow} in {len(seconds)} seconds, at most {busiest} in one"
    )
    if logs is not None:  # perf_counter: the system's monotonic clock, the same in every process
        wall = time.time() - time.perf_counter()
        lines = sorted(f"{start + wall:.3f} {ms:.1f}\n" for ms, start in plays)
        (logs / f"{name}plays.txt").write_text("".join(lines))


def _after_step(
    args: argparse.Namespace, held: int, failed: int, people: int, ok: bool
) -> tuple[int, int, int]:
    """The capacity search after a step of `people` tables that held its p99 (`ok`) or not: the
    most tables that held, the fewest that failed, and the next step (0: the search is over).
    Doubling steps alone found the capacity to within a factor of two: 160 tables that failed by a
    few milliseconds reported 80 (bench/README.md, stop 58)."""
    if ok:
        held = max(held, people)
    else:
        failed = min(failed or people, people)
    if not failed:
        grown = max(people + 1, round(people * args.step_factor))
        return held, failed, grown if grown <= args.max_people else 0
    if not held or failed <= held * args.resolution:
        return held, failed, 0
    between = round(math.sqrt(held * failed))
    return held, failed, between if held < between < failed else 0


def capacity(args: argparse.Namespace, stack: Stack, meter: CpuMeter, flood: int, prefix: str = "") -> int:
    """Person tables 10, 20, 40, ... (--start, times --step-factor each step) beside `flood` bot-only
    tables, each step for --step-seconds, until a person's play p99 passes --p99-ms; then steps
    between the most tables that held and the fewest that failed (their geometric mean) until those
    are within --resolution of each other; then twice the tables that held, if no step had that
    many (the overload). Prints each step's figures, its CPU by kind of process and (--profile) its
    profile; answers the person tables that held."""
    cores = os.cpu_count() or 1
    steps: list[Step] = []
    held, people, failed, overload = 0, args.start, 0, False  # failed: the fewest tables that failed
    while people:
        profile = Path(args.profile) / f"{prefix}step_{people}" if args.profile else None
        step = _run(capacity_step(stack, people, flood, args.step_seconds, meter, profile, args.think_ms))
        steps.append(step)
        p99 = _pct(step.f.play_ms, 0.99)
        name = f"{prefix}step_{people}_"
        print(f"{name}people_play_p50_ms: {_pct(step.f.play_ms, 0.50):.1f}")
        print(f"{name}people_play_p90_ms: {_pct(step.f.play_ms, 0.90):.1f}")
        print(f"{name}people_play_p99_ms: {p99:.1f}")
        print(f"{name}people_actions_per_second: {step.rate:.1f}")
        _print_slow_plays(name, step.f, args.p99_ms, Path(args.logs) if args.logs else None)
        if HINTS.rate:
            print_hints(name, step.f, step.elapsed)
        if flood:
            print(f"{name}bot_only_tables_finished: {step.flood_finished} of {flood}")
        print_cpu(name, meter, *step.cpu, step.actions)
        if profile is not None:
            print_profile(name, profile)
        sys.stdout.flush()
        if overload:  # the overload's own step, after the search: measured, not searched
            break
        held, failed, people = _after_step(args, held, failed, people, p99 <= args.p99_ms)
        if not people and held and 2 * held not in {st.people for st in steps}:
            people, overload = 2 * held, True
    rates = {s.people: s.rate for s in steps}
    peak = max(rates.values(), default=float("nan"))
    print(f"{prefix}capacity_bot_only_tables_beside: {flood}")
    print(f"{prefix}capacity_person_tables: {held}")
    print(f"{prefix}capacity_actions_per_second_per_core: {rates.get(held, float('nan')) / cores:.1f}")
    twice = rates.get(2 * held, float("nan"))
    print(f"{prefix}capacity_twice_tables_actions_per_second: {twice:.1f}")
    print(f"{prefix}capacity_peak_actions_per_second: {peak:.1f}")
    print(f"{prefix}capacity_twice_to_peak_ratio: {twice / peak:.2f}")
    return held


def compare_flood(args: argparse.Namespace, stack: Stack, meter: CpuMeter) -> bool:
    """The capacity search without the flood (its figures prefixed `no_flood_`), then with
    --flood bot-only tables beside each step: how many person tables the flood costs."""
    alone = capacity(args, stack, meter, 0, "no_flood_")
    flooded = capacity(args, stack, meter, args.flood)
    ratio = flooded / alone if alone else float("nan")
    print(f"capacity_person_tables_flood_to_no_flood_ratio: {ratio:.2f}")
    return flooded > 0


def serve_webpush() -> int:
    """`--serve-webpush`: tests/push/providers.py's FakeWebPush (it checks VAPID and decrypts every
    message as the browser would), with each accepted message's arrival time (`time.time()` when its
    request was read) and a small control API for the bench: POST /control/subscribe {"server_key"}
    makes a subscription, GET /control/wait?path=&after=&timeout= answers once that subscription
    has more than `after` turn pushes (the phone buzzing), GET /control/receipts lists them all.
    Prints its port, then serves until it is terminated."""
    from tests.push.providers import FakeWebPush, Receive, Request, Scope, Send

    class BenchWebPush(FakeWebPush):
        def __init__(self) -> None:
            super().__init__()
            self.receipts: list[dict[str, Any]] = []
            self.turns: dict[str, int] = {}  # subscription path -> turn pushes received
            self.events: dict[str, asyncio.Event] = {}

        def handle(self, request: Request) -> Any:  # runs in the server's event loop
            at = time.time()
            before = len(self.received)
            answer = super().handle(request)
            if len(self.received) > before:
                data = self.received[-1]["payload"].get("data") or {}
                kind = data.get("kind")
                self.receipts.append(
                    {"path": request.path, "at": at, "message": data.get("message"), "kind": kind}
                )
                if kind == "turn":
                    self.turns[request.path] = self.turns.get(request.path, 0) + 1
                    event = self.events.pop(request.path, None)
                    if event is not None:
                        event.set()
            return answer

        async def _wait(self, path: str, after: int, timeout: float) -> int:
            loop = asyncio.get_running_loop()
            end = loop.time() + timeout
            while self.turns.get(path, 0) <= after and end > loop.time():
                event = self.events.setdefault(path, asyncio.Event())
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), end - loop.time())
            return self.turns.get(path, 0)

        async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http" or not scope["path"].startswith("/control/"):
                await super()._app(scope, receive, send)
                return
            body = b""
            while True:
                event = await receive()
                body += event.get("body", b"")
                if not event.get("more_body"):
                    break
            query = {k: v[0] for k, v in parse_qs(scope.get("query_string", b"").decode()).items()}
            out: Any = None
            if scope["path"] == "/control/subscribe":
                out = self.subscription(server_key=json.loads(body)["server_key"])
            elif scope["path"] == "/control/wait":
                out = {"turns": await self._wait(query["path"], int(query["after"]), float(query["timeout"]))}
            elif scope["path"] == "/control/receipts":
                out = {"receipts": self.receipts, "requests": self.requests, "problems": self.problems}
            payload = json.dumps(out).encode()
            status = 404 if out is None else 200
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": payload})

    fake = BenchWebPush().start()
    print(fake.port, flush=True)
    while True:  # until SIGTERM (Stack.stop)
        time.sleep(3600)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--absent", type=float, default=0.1, help="share of people who never act")
    parser.add_argument("--duration", type=float, default=0, help="seconds before checking (default by size)")
    parser.add_argument("--no-faults", action="store_true")
    parser.add_argument(
        "--target",
        type=int,
        default=GAME_TARGET,
        help=f"the person tables' game length in points ({GAME_TARGET}): long enough that no game ends"
        " within 180 s, so that the faults meet tables in play and runs that differ in the people's pace"
        " (--hints) meet them with as many plays",
    )
    parser.add_argument(
        "--bot-target",
        type=int,
        default=GAME_TARGET,
        help=f"the bot-only tables' game length in points ({GAME_TARGET}): the flood lasts the run",
    )
    parser.add_argument(
        "--correspondence", type=int, default=4, help="tables with 3-hour clocks, due after the Redis restart"
    )
    parser.add_argument("--pocket", type=float, default=0.5, help="share of acting people without a stream")
    parser.add_argument(
        "--hints", type=float, default=0, help="hints a second the people ask on their turns (strong level)"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when an invariant fails")
    parser.add_argument("--capacity", action="store_true", help="find the most person tables that hold")
    parser.add_argument("--flood", type=int, default=0, help="capacity: bot-only tables beside")
    parser.add_argument("--start", type=int, default=10, help="capacity: person tables of the first step")
    parser.add_argument("--max-people", type=int, default=1600, help="capacity: stop after this many")
    parser.add_argument("--step-seconds", type=float, default=60)
    parser.add_argument(
        "--step-factor", type=float, default=2.0, help="capacity: each step's person tables over the last's"
    )
    parser.add_argument(
        "--resolution",
        type=float,
        default=1.1,
        help="capacity: after the first failing step, search between it and the last held until the"
        " fewest tables that failed are at most this many times the most that held",
    )
    parser.add_argument("--p99-ms", type=float, default=250)
    parser.add_argument(
        "--think-ms", type=float, default=1000, help="capacity: a person's mean thinking time before acting"
    )
    parser.add_argument(
        "--compare-flood", action="store_true", help="capacity: search without the flood first, then with it"
    )
    parser.add_argument("--profile", metavar="DIR", help="py-spy the web, people and bots workers into DIR")
    parser.add_argument("--fold", metavar="DIR", help="only print the shares of the raw profiles in DIR")
    parser.add_argument("--logs", help="keep the processes' logs in this directory")
    parser.add_argument("--serve-webpush", action="store_true", help=argparse.SUPPRESS)  # Stack.start_webpush
    args = parser.parse_args()
    if args.serve_webpush:
        return serve_webpush()
    if args.fold:
        for out in sorted({path.parent for path in Path(args.fold).rglob("*.txt")}):
            print_profile(f"{out.relative_to(args.fold)}_".replace("._", "").replace("/", "_"), out)
        return 0
    with _client_weighed():
        return _main(args)


@contextlib.contextmanager
def _client_weighed() -> Iterator[None]:
    """The client's session weighed (CLIENT_AUTOGROUP_NICE) while the bench runs, and given back its
    weight after: it is the terminal's session too, unless the bench was started with `setsid`."""
    own = Path("/proc/self/autogroup")
    try:
        before = own.read_text().split()[-1]  # "/autogroup-85 nice 0"
        if WEIGH_SESSIONS:
            own.write_text(CLIENT_AUTOGROUP_NICE)
    except (OSError, IndexError):  # no autogroup: the process's own weight is what counts
        before = ""
    try:
        yield
    finally:
        if before and WEIGH_SESSIONS:
            with contextlib.suppress(OSError):
                own.write_text(before)


def machine_speed() -> float:
    """Milliseconds a fixed pure-Python loop takes on one core (the best of five), before the stack
    starts: this machine's speed of the moment. Runs of different days differ by 30% and more for
    the same code (bench/README.md); this says how much of that is the machine."""
    best = math.inf
    for _ in range(5):
        started = time.perf_counter()
        total = 0
        for i in range(1_000_000):
            total += i * i % 7
        best = min(best, (time.perf_counter() - started) * 1000)
    return best


def _main(args: argparse.Namespace) -> int:
    ABSENT_SHARE[0], POCKET_SHARE[0] = args.absent, args.pocket
    HINTS.rate = args.hints
    print(f"machine_speed_ms: {machine_speed():.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        if args.logs:
            Path(args.logs).mkdir(parents=True, exist_ok=True)
        stack = Stack(Path(args.logs or tmp))
        try:
            _setup(stack)
            meter = CpuMeter(stack).start()
            if args.capacity:
                ok = (
                    compare_flood(args, stack, meter)
                    if args.compare_flood
                    else bool(capacity(args, stack, meter, args.flood))
                )
            else:
                ok = load(args, stack, meter)
            meter.stop()
        finally:
            from django.db import connections

            connections.close_all()
            stack.stop()
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
