"""The embedded worker of a one-machine run without Redis: the Celery lanes as threads of the
serving process, so that a request never plays bots inside itself and a thinking bot never holds
up a turn clock.

Every task the process queues (games.infra.jobs.send) goes to the thread of its lane: `clocks`
(clock enforcement; it also looks for overdue deadlines every CLOCK_TICK), `people` (bot moves at
tables where a person sits), `bots` (bot-only tables), `bulk` (tournament set-up, exports), `hints`
(hints and hand reviews a person asked for: docs/hints.md), and `webhooks`/`push` if a task of
theirs is ever queued. Each lane runs its tasks in the order they come due (a paced bot card waits
on its lane's timer, not in a thread), one at a time, except the bot lane: BOT_THREADS threads take
its tasks, so a table of thinking experts (seconds a move) does not hold back another table's quick
bots (the GIL is handed over every few milliseconds), with the same semantics as a Celery worker of
that queue: the task body is the same, it sees its queue (so a bot task plays as many moves as a
worker of that lane would, then queues the next), a task for a stale version does nothing, a task
already waiting on its lane is not queued twice, and a task that failed on a database error is tried
again with backoff. A fifth thread runs the sweep every second as the safety net (lost tasks,
correspondence reminders, webhook and push senders, unfinished tournament set-ups), and a sixth the
housekeeping (sealing, archives, expired exports) once a minute.

The lane threads keep their database connection between tasks (a fresh SQLite connection per move
costs more than the move); each commit wakes this process's streams at once (notify.listen_here).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection
from django.utils import timezone

from games.infra import jobs
from games.models import Table
from games.services import tournaments
from games.tasks import HOUSEKEEPING_SECONDS, housekeeping, sweep
from hearts_service import tracing
from hearts_service.env import env_bool

log = logging.getLogger(__name__)
CLOCK_TICK = 0.1  # seconds between two looks for overdue turn clocks
SWEEP_SECONDS = 1.0
RETRIES = 5  # tries of a task that failed on a database error (then the sweep finds its table)
BOT_THREADS = 4  # threads of the bot lane: up to four bot-only tables' moves at once
LANES = (jobs.CLOCKS_QUEUE, jobs.PEOPLE_QUEUE, jobs.BOTS_QUEUE, jobs.BULK_QUEUE, jobs.HINTS_QUEUE)
_started = threading.Event()
_lanes: dict[str, Lane] = {}
_lanes_lock = threading.Lock()


def wanted() -> bool:
    """True in the serving process of a run without REDIS_URL (runserver's reloaded child, or
    any server started with HEARTS_EMBEDDED_WORKER=1); never in tests or management commands."""
    if settings.REDIS_URL:
        return False
    if env_bool("HEARTS_EMBEDDED_WORKER", default=False):
        return True
    return "runserver" in sys.argv and (os.environ.get("RUN_MAIN") == "true" or "--noreload" in sys.argv)


def lane_name(queue: str) -> str:
    """The lane thread a queue's tasks run on: one for all the bot lane's sub-queues."""
    return jobs.BOTS_QUEUE if queue.startswith(jobs.BOTS_QUEUE) else queue


class Lane:
    """One lane's thread and its tasks, in the order they come due."""

    def __init__(self, name: str, threads: int = 1) -> None:
        self.name = name
        # (when, order, task, args, queue, tries, the trace that queued it: tracing.capture)
        self.due: list[tuple[float, int, str, tuple[Any, ...], str, int, Any]] = []
        self.waiting: set[tuple[str, tuple[Any, ...]]] = set()  # queued and not yet started
        self.ready = threading.Condition()
        self.order = itertools.count()
        self.ran = 0
        for n in range(threads):
            threading.Thread(target=self.run, name=f"hearts-lane-{name}-{n}", daemon=True).start()

    def put(self, name: str, args: tuple[Any, ...], queue: str, delay: float, tries: int = 0) -> None:
        key = (name, args)
        origin = tracing.capture()  # the request or task queueing it: its trace goes on here
        with self.ready:
            if key in self.waiting and not tries:
                return  # the same task waits already: a second one would find its version gone
            self.waiting.add(key)
            when = time.monotonic() + delay
            heapq.heappush(self.due, (when, next(self.order), name, args, queue, tries, origin))
            self.ready.notify()

    def idle(self) -> bool:
        with self.ready:
            return not self.due

    def run(self) -> None:
        while True:
            with self.ready:
                while not self.due or self.due[0][0] > time.monotonic():
                    self.ready.wait(None if not self.due else self.due[0][0] - time.monotonic())
                _, _, name, args, queue, tries, origin = heapq.heappop(self.due)
                self.waiting.discard((name, args))
            with tracing.task_span(name, queue, origin):
                self.execute(name, args, queue, tries)

    def execute(self, name: str, args: tuple[Any, ...], queue: str, tries: int) -> None:
        """The task body as a worker of `queue` runs it (not eagerly: a bot task plays its lane's
        share of moves and queues the next, which comes back to this lane)."""
        task = current_app.tasks[name]
        task.push_request(args=args, kwargs={}, delivery_info={"routing_key": queue}, is_eager=False)
        try:
            task.run(*args)
        except DatabaseError:
            connection.close()  # a broken connection is not kept: the next try opens a new one
            if tries + 1 < RETRIES:
                self.put(name, args, queue, 0.25 * 2**tries, tries + 1)
            else:
                log.exception("embedded %s lane: %s%r failed %d times", self.name, name, args, RETRIES)
        except Exception:  # one failed task must not stop the lane: the sweep is the safety net
            log.exception("embedded %s lane: %s%r failed", self.name, name, args)
        finally:
            task.pop_request()
            self.ran += 1


def lane(queue: str) -> Lane:
    """The lane of `queue` (its thread started on first use)."""
    name = lane_name(queue)
    found = _lanes.get(name)
    if found is None:
        with _lanes_lock:
            found = _lanes.get(name)
            if found is None:
                found = _lanes[name] = Lane(name, BOT_THREADS if name == jobs.BOTS_QUEUE else 1)
    return found


def hand(name: str, args: tuple[Any, ...], queue: str, delay: float) -> None:
    """games.infra.jobs's hand-off: the task goes to its lane (never run by the caller)."""
    lane(queue).put(name, args, queue, delay)


def start() -> None:
    """Start the lanes, the clock check, the sweep and the housekeeping once per process; from now
    on every task this process queues runs on a lane thread."""
    if _started.is_set():
        return
    _started.set()
    for queue in LANES:
        lane(queue)
    jobs.run_here(hand)
    for seconds, work, what in [
        (CLOCK_TICK, _clocks, "clock check"),
        (SWEEP_SECONDS, _sweep, "sweep"),
        (HOUSEKEEPING_SECONDS, housekeeping, "housekeeping"),
    ]:
        threading.Thread(
            target=_every, args=(seconds, work, what), name=f"hearts-{what}", daemon=True
        ).start()
    log.info(
        "embedded worker: lanes %s in-process, clocks looked at every %.1fs", ", ".join(LANES), CLOCK_TICK
    )


def stop() -> None:
    """Tasks run by Celery again (eager in tests); the threads stay, idle (they are daemons)."""
    jobs.run_here(None)


def overdue_clocks(limit: int = 100) -> list[tuple[int, int]]:
    """(table, version) of the open tables whose turn clock has run out."""
    closed = [Table.Status.FINISHED, Table.Status.ABANDONED]
    due = Table.objects.filter(deadline__lte=timezone.now()).exclude(status__in=closed)
    return list(due.order_by("deadline").values_list("pk", "version")[:limit])


def _clocks() -> None:
    """Queue a clock task on the clock lane for each overdue deadline, within CLOCK_TICK of it
    (without Redis nothing else knows when a clock comes due but the sweep, a second apart)."""
    clocks = lane(jobs.CLOCKS_QUEUE)
    if clocks.idle():  # else the lane is busy with the last round's
        for table_id, version in overdue_clocks():
            jobs.enforce_clock_now(table_id, version)


def _sweep() -> None:
    """The safety net, on its own thread: what it acts on inline never holds up a clock."""
    sweep(inline=True)
    tournaments.resume_set_ups()


def _every(seconds: float, work: Callable[[], object], what: str) -> None:
    """Run `work` every `seconds` on this thread, for ever, keeping its database connection; a
    failed round is logged and the next one runs on a fresh connection (one failure must not stop
    a safety net)."""
    while True:
        time.sleep(seconds)
        try:
            work()
        except Exception:
            log.exception("embedded %s failed", what)
            close_old_connections()
