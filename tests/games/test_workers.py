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


def test_a_deadline_is_acted_on_by_its_eta_task_and_a_lost_one_by_the_sweep(
    workers: Callable[..., subprocess.Popen[bytes]],
) -> None:
    worker = workers()
    on_time = _absent_person_table(5)
    _wait(on_time, lambda t: t.moves.filter(position=0, kind="pass").exists(), 30)
    assert _timed_out_after(on_time) < 1.0  # the ETA task, no sweep running
    # Now lose the clock's task: the worker holding it dies before the deadline (its message
    # stays unacknowledged in Redis for the visibility timeout, 10 minutes).
    lost = _absent_person_table(5)
    _wait(lost, lambda t: t.moves.filter(kind="pass").count() == 3, 30)  # the bots passed
    time.sleep(1)  # the ETA task reaches the worker
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    workers(beat=True)  # a new worker with beat: only the sweep can find the overdue clock
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
    flood_app = App.objects.create(name="flood", key_hash="f" * 64)
    small_app = App.objects.create(name="small", key_hash="s" * 64)
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
