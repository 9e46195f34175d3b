"""Real Celery workers on Redis and PostgreSQL: a bot-only game plays itself, a worker killed with
SIGKILL mid-game is replaced without losing or repeating a move, clocks fire on time, and the lanes
keep bot-only tables apart from people's, and one app's flood of bot tables apart from another's."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from games import services
from games.infra import jobs
from games.models import App, Move, Player, Table
from hearts_service.celery import app

pytestmark = [
    pytest.mark.needs_postgres,
    pytest.mark.needs_redis,
    pytest.mark.django_db(transaction=True),  # workers must see committed rows
]
ROOT = Path(__file__).resolve().parents[2]


def _bot_table(target: int) -> int:
    token = APIClient().post("/api/v1/guests", {"name": "op"}, format="json").json()["token"]
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    r = c.post(
        "/api/v1/tables",
        {
            "options": {"target_score": target},
            "bots": {str(s): "basic" for s in range(4)},
            "clocks": {"play": None},
        },
        format="json",
    )
    assert r.status_code == 201
    return r.json()["id"]


def _wait(table_id: int, until: Callable[[Table], bool], seconds: float) -> Table:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        table = Table.objects.get(pk=table_id)
        if until(table):
            return table
        time.sleep(0.2)
    raise AssertionError(
        f"table {table_id} did not get there in {seconds}s: {Table.objects.get(pk=table_id)}"
    )


def test_a_bot_only_table_plays_a_whole_game_through_a_real_worker(workers: Callable[..., object]) -> None:
    workers()
    table = _wait(_bot_table(50), lambda t: t.status == Table.Status.FINISHED, 120)
    assert list(Move.objects.filter(table=table).values_list("seq", flat=True)) == list(
        range(1, table.version + 1)
    )


def test_a_worker_killed_mid_game_is_replaced_and_no_move_is_lost_or_repeated(
    workers: Callable[..., subprocess.Popen[bytes]],
) -> None:
    first = workers()
    table_id = _bot_table(100)
    _wait(table_id, lambda t: t.hand_number >= 2, 120)
    os.killpg(first.pid, signal.SIGKILL)  # in the middle of a game, probably in the middle of a task
    first.wait()
    stalled = Table.objects.get(pk=table_id)
    assert stalled.status != Table.Status.FINISHED
    workers(beat=True)  # the replacement, with beat running the sweep that finds the lost task
    table = _wait(table_id, lambda t: t.status == Table.Status.FINISHED, 180)
    # Nothing lost, nothing twice: versions without gaps, and (checked for every finished table
    # after each test) the log replays to exactly the stored state and scoresheet.
    assert list(Move.objects.filter(table=table).values_list("seq", flat=True)) == list(
        range(1, table.version + 1)
    )
    assert table.version > stalled.version


def _absent_person_table(clock: int) -> int:
    """A table of three bots and a person who never acts, on `clock`-second clocks."""
    out = services.table_create(
        options={}, bots={1: "basic", 2: "basic", 3: "basic"}, clocks={"pass": clock, "play": clock}
    )
    assert out.table is not None
    services.seat_join(table_id=out.table.pk, player=Player.objects.create(name="absent"))
    return out.table.pk


def _timed_out_after(table_id: int) -> float:
    """Seconds between the missed deadline and the server's move for the absent person."""
    move = Move.objects.get(table_id=table_id, position=0, kind="pass")
    kind, data, _, _ = move.events[0]
    assert kind == "turn_timed_out"
    return (move.created_at - dt.datetime.fromisoformat(data["deadline"])).total_seconds()


def _until_a_worker_answers(seconds: float = 60) -> None:
    """A worker answers a ping once it consumes its queues (its clock thread runs by then)."""
    deadline = time.monotonic() + seconds
    while not app.control.ping(timeout=0.5):
        assert time.monotonic() < deadline, "no worker answered a ping"


def test_a_deadline_is_acted_on_by_the_clock_lane_and_one_whose_worker_died_by_the_next(
    workers: Callable[..., subprocess.Popen[bytes]],
) -> None:
    worker = workers()
    _until_a_worker_answers()  # a 5 s clock must not race the worker's start (seconds under load)
    on_time = _absent_person_table(5)
    _wait(on_time, lambda t: t.moves.filter(position=0, kind="pass").exists(), 30)
    assert _timed_out_after(on_time) < 1.0  # claimed when due (games.infra.clocks), no sweep running
    # Now the clock worker dies before the deadline: the clock stays in Redis for the next one.
    lost = _absent_person_table(5)
    _wait(lost, lambda t: t.moves.filter(kind="pass").count() == 3, 30)  # the bots passed
    time.sleep(1)  # the person's clock is in Redis, not yet due
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    workers(beat=True)  # a new worker (and beat, whose sweep is the safety net)
    _wait(lost, lambda t: t.moves.filter(position=0, kind="pass").exists(), 30)
    assert _timed_out_after(lost) < 5.0


def _app_bot_tables(app: App, count: int) -> list[int]:
    ids = []
    for _ in range(count):
        bots = dict.fromkeys(range(4), "basic")
        out = services.table_create(options={"target_score": 50}, bots=bots, app=app)
        assert out.table is not None
        ids.append(out.table.pk)
    return ids


def test_bot_only_tables_run_on_the_bot_lane_and_people_tables_on_the_people_lane(
    workers: Callable[..., subprocess.Popen[bytes]],
) -> None:
    workers(queues="clocks,people")  # no bot lane worker yet
    person = _absent_person_table(60)
    bots_only = _bot_table(50)
    started = Table.objects.get(pk=bots_only).version
    _wait(person, lambda t: t.moves.filter(kind="pass").count() == 3, 30)  # its bots passed
    time.sleep(2)
    assert Table.objects.get(pk=bots_only).version == started  # no bot move: its lane has no worker
    workers(queues="bots")  # `-Q bots`: every app's sub-queue of the bot lane
    _wait(bots_only, lambda t: t.status == Table.Status.FINISHED, 120)


def test_one_apps_flood_of_bot_tables_does_not_starve_another_apps(
    workers: Callable[..., subprocess.Popen[bytes]],
) -> None:
    flood_app = App.objects.create(name="flood")
    small_app = App.objects.create(name="small")
    assert jobs.lane_of(people=False, app_id=flood_app.pk) != jobs.lane_of(people=False, app_id=small_app.pk)
    flood = _app_bot_tables(flood_app, 40)  # queued before the other app's tables
    small = _app_bot_tables(small_app, 2)
    workers(queues="bots")
    for table_id in small:
        _wait(table_id, lambda t: t.status == Table.Status.FINISHED, 120)
    # The lane took the two apps' sub-queues in turn: the small app had half of it, so its two
    # tables finished while the flood's forty (first in line, one task each in turn) had not.
    # In one first-in-first-out queue they would have had 2/42 of it, finishing with the others.
    finished = Table.objects.filter(pk__in=flood, status=Table.Status.FINISHED).count()
    assert finished <= 10, finished


def test_the_clock_worker_holding_a_deadline_survives_a_redis_restart_and_acts_on_time(
    workers: Callable[..., subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    """A worker holding an unacknowledged ETA message (a task retried with a countdown waits so)
    must reconnect when Redis restarts, not die (celery/kombu 5.7.0 died here: pyproject.toml). A
    Redis without persistence loses the message with its queue: the sweep queues the clock again
    half a second after its deadline."""
    from kombu import Connection

    from hearts_service.celery import app

    port = _free_port()
    cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    redis_log = open(tmp_path / "redis.log", "ab")  # noqa: SIM115 (closed at the end)
    own = subprocess.Popen(cmd, stdout=redis_log, stderr=subprocess.STDOUT)
    try:
        own_url = f"redis://127.0.0.1:{port}/0"
        _until_pings(port)
        worker = workers(queues="clocks", beat=True, REDIS_URL=own_url)
        time.sleep(4)  # the worker connects
        table_id = _absent_person_table(60)  # its clock task goes to the run's Redis: replaced below
        deadline = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=6)
        Table.objects.filter(pk=table_id).update(deadline=deadline)
        version = Table.objects.get(pk=table_id).version
        with Connection(own_url) as conn:
            app.tasks["games.enforce_clock"].apply_async((table_id, version), eta=deadline, connection=conn)
        time.sleep(2)  # the worker holds it, unacknowledged, until the deadline
        own.kill()
        own.wait()
        own = subprocess.Popen(cmd, stdout=redis_log, stderr=subprocess.STDOUT)
        _until_pings(port)
        _wait(table_id, lambda t: t.moves.filter(position=0, kind="pass").exists(), 30)
        assert worker.poll() is None, "the clock worker died when Redis restarted"
        assert _timed_out_after(table_id) < 2.0
    finally:
        own.kill()
        own.wait()
        redis_log.close()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _until_pings(port: int) -> None:
    import redis

    client = redis.Redis(port=port, socket_connect_timeout=0.2)
    for _ in range(100):
        try:
            if client.ping():
                return
        except redis.RedisError:
            time.sleep(0.1)
    raise AssertionError("redis-server did not start")
