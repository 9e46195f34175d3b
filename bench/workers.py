"""Workers: bot games against the bare engine, a bot move's and a clock's CPU, the catch-up, clocks' lag."""

from __future__ import annotations

import datetime as dt
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/graphql.py is named like the `graphql` package: keep this folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")
# Bots unpaced at the tables with a person (here and in the workers, which inherit it): the figures
# measure the server's speed and clock lag, not the pace a watching person is given.
os.environ.setdefault("BOT_PACE_MS", "0")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

from bots.strategy import decide  # noqa: E402
from games import services, tasks  # noqa: E402
from games.engine import GAME_OVER, Options, State, action_from_dict, view  # noqa: E402
from games.models import Move, Player, Table  # noqa: E402
from hearts_service.celery import app  # noqa: E402

GAMES = int(os.environ.get("BENCH_GAMES", "6"))
LAG_TABLES = int(os.environ.get("BENCH_LAG_TABLES", "200"))
CLOCK_TABLES = int(os.environ.get("BENCH_CLOCK_TABLES", "100"))  # tables of `clock_move_cpu_us`
CATCH_UP_TABLES = int(os.environ.get("BENCH_CATCH_UP_TABLES", "24"))  # overdue clocks a catch-up acts on
CATCH_UP_ROUNDS = int(os.environ.get("BENCH_CATCH_UP_ROUNDS", "6"))
CLOCK = int(os.environ.get("BENCH_CLOCK", "15"))  # seconds per pass and per play in the lag run
NO_CLOCKS = {"pass": None, "play": None, "moon": None}
OPTIONS = {"players": 4, "target_score": 100}


def engine_games_per_min(games: int) -> float:
    """The same bots on the bare engine: no database, no broker, no worker."""
    start = time.perf_counter()
    for g in range(games):
        state = State.new_game(Options.from_dict(OPTIONS), f"engine-{g}")
        rng = random.Random(g)
        while state.phase != GAME_OVER:
            for seat in state.to_act():
                state.push(seat, action_from_dict(decide(view(state, seat), "basic", rng)))
    return games / (time.perf_counter() - start) * 60


def start_workers(
    env: dict[str, str], log_dir: Path, *, concurrency: int, beat: bool
) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "hearts_service",
        "worker",
        f"--concurrency={concurrency}",
        "-Q",
        "clocks,people,bots",  # every game lane: this measures the whole stack, not the lanes
        "-l",
        "warning",
    ]
    if beat:
        cmd += ["-B", "-s", str(log_dir / "beat-schedule")]
    log = open(log_dir / "worker.log", "ab")  # noqa: SIM115 (lives as long as the worker)
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def stop(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def wait_finished(ids: list[int], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while Table.objects.filter(pk__in=ids, status=Table.Status.FINISHED).count() < len(ids):
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: tables did not finish in {seconds}s")
        time.sleep(0.2)


def engine_move_cpu_us(games: int) -> float:
    """CPU microseconds per move of the `basic` bots on the bare engine: each decision on the seat's
    view without past hands, as the service's bots decide (the baseline of `bot_move_cpu_us`)."""
    moves, start = 0, time.process_time()
    for g in range(games):
        state = State.new_game(Options.from_dict(OPTIONS), f"engine-move-{g}")
        rng = random.Random(g)
        while state.phase != GAME_OVER:
            for seat in state.to_act():
                state.push(seat, action_from_dict(decide(view(state, seat, history=False), "basic", rng)))
                moves += 1
    return (time.process_time() - start) / moves * 1e6


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def _backend_cpu(pid: int | None = None) -> float | None:
    """This connection's PostgreSQL backend's CPU seconds (or process `pid`'s: no query), when its
    process is on this machine."""
    pid = _backend_pid() if pid is None else pid
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def service_move_cpu_us(games: int) -> tuple[float, float | None]:
    """CPU microseconds per move of bot-only tables played through `services.bots_play` in this
    process, as a bot-lane task plays them (26 moves a task at most): this process's, and its
    PostgreSQL backend's (None when that process is elsewhere). The tasks it queues go unrun."""
    moves, start, backend = 0, time.process_time(), _backend_cpu()
    for _ in range(games):
        out = services.table_create(options=OPTIONS, bots=dict.fromkeys(range(4), "basic"), clocks=NO_CLOCKS)
        assert out.table is not None
        table_id, version = out.table.pk, out.table.version
        while True:
            played = services.bots_play(table_id=table_id, version=version, limit=26, asks=1).table
            if played is None:
                break
            moves, version = moves + played.version - version, played.version
    cpu = (time.process_time() - start) / moves * 1e6
    after = _backend_cpu()
    return cpu, None if backend is None or after is None else (after - backend) / moves * 1e6


def service_clock_cpu_us(tables: int) -> tuple[float, float | None, int]:
    """CPU microseconds per clock that ran out, acted on through `services.clock_expired` in this
    process as the clock lane's task (and its catch-up after an outage) acts on one: a person's
    pass, then their first play, at `tables` tables of one person and three bots (the bots' moves
    between them, made through `services.bots_play`, are not counted). This process's, and its
    PostgreSQL backend's (None when that process is elsewhere); and the clocks counted."""
    ids = []
    for i in range(tables):
        timed = dict.fromkeys(("pass", "play"), 60)
        out = services.table_create(options=OPTIONS, bots=dict.fromkeys(range(1, 4), "basic"), clocks=timed)
        assert out.table is not None
        services.seat_join(table_id=out.table.pk, player=Player.objects.create(name=f"late{i}"))
        ids.append(out.table.pk)
    pid, cpu, backend, clocks = _backend_pid(), 0.0, 0.0, 0
    for _ in ("pass", "play"):
        for table_id in ids:
            version = Table.objects.get(pk=table_id).version
            while (played := services.bots_play(table_id=table_id, version=version).table) is not None:
                version = played.version  # the bots up to the person's turn (their clock then runs)
            Table.objects.filter(pk=table_id).update(deadline=timezone.now() - dt.timedelta(seconds=1))
            start, pg = time.process_time(), _backend_cpu(pid)
            acted = services.clock_expired(table_id=table_id, version=version).table is not None
            cpu += time.process_time() - start
            after = _backend_cpu(pid)
            backend += 0.0 if pg is None or after is None else after - pg
            clocks += acted
    return cpu / clocks * 1e6, None if _backend_cpu(pid) is None else backend / clocks * 1e6, clocks


def catch_up_ms_per_table(tables: int, rounds: int, busy: int) -> tuple[float, float]:
    """Wall milliseconds per table of the catch-up after an outage (games.tasks.catch_up): `tables`
    overdue clocks acted on one table a transaction (each claimed in Redis on its own, then
    `services.clock_expired(wait=False)`: the catch-up up to stop 61) and CATCH_UP_BATCH tables a
    transaction (`tasks._claimed`, then `services.clocks_expired`: the catch-up now), the two ways
    alternated on two sets of tables, each set taking each way in turn, over `rounds` rounds; with
    `busy` processes spinning beside (the machine as PostgreSQL comes back: every process
    reconnecting). The tasks the commits queue (the bots' moves) go to Redis unrun; the bots' moves
    that bring each table back to its person's turn are not counted."""
    sets: list[list[int]] = [[], []]
    for i in range(2 * tables):
        clocks = {"pass": 60, "play": 60, "moon": 60, "away_after": 20}  # no seat marked away here
        out = services.table_create(options=OPTIONS, bots=dict.fromkeys(range(1, 4), "basic"), clocks=clocks)
        assert out.table is not None
        services.seat_join(table_id=out.table.pk, player=Player.objects.create(name=f"caught{i}"))
        sets[i % 2].append(out.table.pk)

    def one_by_one(due: list[tuple[int, int]]) -> int:
        acted = 0
        for table, version in due:
            if tasks._first_claim(tasks.CAUGHT_UP.format(table=table, version=version), 5.0):
                acted += services.clock_expired(table_id=table, version=version, wait=False).table is not None
        return acted

    def batched(due: list[tuple[int, int]]) -> int:
        step = tasks.CATCH_UP_BATCH
        batches = [due[i : i + step] for i in range(0, len(due), step)]
        return sum(services.clocks_expired(tasks._claimed(batch)) for batch in batches)

    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    took: dict[str, float] = {"one_by_one": 0.0, "batched": 0.0}
    try:
        for r in range(rounds):
            for which, way in enumerate((one_by_one, batched)):
                ids = sets[(r + which) % 2]
                due = []
                for table_id in ids:  # the bots up to the person's turn, then the clock run out
                    version = Table.objects.get(pk=table_id).version
                    while played := services.bots_play(table_id=table_id, version=version).table:
                        version = played.version
                    due.append((table_id, version))
                Table.objects.filter(pk__in=ids).update(deadline=timezone.now() - dt.timedelta(seconds=1))
                start = time.perf_counter()
                acted = way(due)
                took[way.__name__] += time.perf_counter() - start
                assert acted == len(ids), (way.__name__, acted)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    return took["one_by_one"] / (rounds * tables) * 1000, took["batched"] / (rounds * tables) * 1000


def full_stack_games_per_min(games: int) -> float:
    """Bot-only tables created through the services; one worker plays them (PostgreSQL, Redis)."""
    start = time.perf_counter()
    ids = []
    for _ in range(games):
        out = services.table_create(options=OPTIONS, bots=dict.fromkeys(range(4), "basic"), clocks=NO_CLOCKS)
        assert out.table is not None
        ids.append(out.table.pk)
    wait_finished(ids, 900)
    return games / (time.perf_counter() - start) * 60


def timeout_lags(tables: int) -> list[float]:
    """Tables with one absent person and three bots on CLOCK-second clocks, started over CLOCK
    seconds: how long after each missed deadline the server acted (from the logged timeouts)."""
    ids = []
    for i in range(tables):
        out = services.table_create(
            options=OPTIONS,
            bots={1: "basic", 2: "basic", 3: "basic"},
            clocks=dict.fromkeys(("pass", "play", "moon"), CLOCK),
        )
        assert out.table is not None
        services.seat_join(table_id=out.table.pk, player=Player.objects.create(name=f"absent{i}"))
        ids.append(out.table.pk)
        time.sleep(CLOCK / tables)
    time.sleep(2 * CLOCK + 3)  # the pass timeout, then the first play timeout; then the seat is away
    lags = []
    for move in Move.objects.filter(table_id__in=ids, position=0).only("events", "created_at"):
        for kind, data, _, _ in move.events:
            if kind == "turn_timed_out":
                missed = dt.datetime.fromisoformat(data["deadline"])
                lags.append((move.created_at - missed).total_seconds() * 1000)
    return lags


def main() -> None:
    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        raise SystemExit("bench/workers.py needs DATABASE_URL (PostgreSQL) and REDIS_URL")
    engine_rate = engine_games_per_min(max(GAMES, 10))
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)  # a killed run's is replaced
    db = connection.settings_dict
    host = f"{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{host}/{db['NAME']}",
        "SWEEP_SECONDS": "1",
    }
    app.conf.task_always_eager = False
    engine_us = engine_move_cpu_us(GAMES)
    move_us, move_pg_us = service_move_cpu_us(GAMES)
    clock_us, clock_pg_us, clocks = service_clock_cpu_us(CLOCK_TABLES)
    caught_up = {busy: catch_up_ms_per_table(CATCH_UP_TABLES, CATCH_UP_ROUNDS, busy) for busy in (0, 2)}
    app.control.purge()
    log_dir = Path(tempfile.mkdtemp(prefix="bench-workers-"))
    try:
        worker = start_workers(env, log_dir, concurrency=1, beat=False)
        try:
            time.sleep(3)  # the worker connects
            full_rate = full_stack_games_per_min(GAMES)
        finally:
            stop(worker)
        worker = start_workers(env, log_dir, concurrency=2, beat=True)
        try:
            time.sleep(3)
            lags = sorted(timeout_lags(LAG_TABLES))
        finally:
            stop(worker)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    print(f"engine_games_per_min: {engine_rate:.1f}")
    print(f"full_stack_games_per_min: {full_rate:.1f}")
    print(f"full_stack_vs_engine_ratio: {full_rate / engine_rate:.3f}")
    print(f"engine_move_cpu_us: {engine_us:.1f}")
    print(f"bot_move_cpu_us: {move_us:.1f}")
    print(f"bot_move_vs_engine_ratio: {move_us / engine_us:.2f}")
    if move_pg_us is not None:
        print(f"bot_move_postgres_cpu_us: {move_pg_us:.1f}")
    print(f"clocks_measured: {clocks}")
    print(f"clock_move_cpu_us: {clock_us:.1f}")
    print(f"clock_move_vs_engine_ratio: {clock_us / engine_us:.2f}")
    if clock_pg_us is not None:
        print(f"clock_move_postgres_cpu_us: {clock_pg_us:.1f}")
    for busy, (one_ms, batched_ms) in caught_up.items():
        beside = f"_{busy}_busy" if busy else ""
        print(f"catch_up_one_by_one_ms_per_table{beside}: {one_ms:.2f}")
        print(f"catch_up_batched_ms_per_table{beside}: {batched_ms:.2f}")
        print(f"catch_up_batched_vs_one_by_one_ratio{beside}: {batched_ms / one_ms:.2f}")
    print(f"timeouts_measured: {len(lags)}")
    print(f"timeout_lag_p50_ms: {statistics.median(lags):.0f}")
    print(f"timeout_lag_p99_ms: {lags[min(len(lags) - 1, int(len(lags) * 0.99))]:.0f}")


if __name__ == "__main__":
    main()
