"""Celery tasks that move tables on without a client: bot moves, turn clocks, webhook sends, and the sweep."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import time
from collections.abc import Iterator

import redis
from celery import Task, shared_task
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, close_old_connections, connection
from django.db.models import Q, QuerySet
from django.utils import timezone

import games.records.archive as archive
from games import push, records, services, webhooks
from games.errors import ServiceError
from games.infra import jobs, notify, pressure
from games.models import Table
from games.services import botturns, hints, review
from games.services import exports as data_exports
from games.services.record import has_people
from hearts_service import outages
from hearts_service.health import published_at

log = logging.getLogger(__name__)

# Reliability: a task is acknowledged only when it has finished (a worker killed mid-task leaves
# it to another worker), retried with backoff when the database is briefly unavailable, and
# stopped if it runs away. Every task is safe to run twice: it acts only for the version it
# was queued for.
RELIABLE = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": (OperationalError, InterfaceError, DatabaseError),
    "retry_backoff": 0.5,
    "retry_backoff_max": 10,
    "retry_jitter": True,
    "max_retries": 8,
    "soft_time_limit": 60,
    "time_limit": 90,
}
# A turn clock's task retries at a steady short interval while the database is unavailable, not
# with the backoff of the others (Celery doubles 1 s up to 10 s, with full jitter): a deadline that
# passed during a PostgreSQL restart was acted on 1 to 2.7 s after the database came back (the load
# run's restart, bench/README.md), the retry waiting out its backoff. Few clocks come due during an
# outage, so a retry every tenth of a second costs little (a retry waits for a connection in the
# pool, up to DB_POOL_TIMEOUT, while the database is away: few are made); after CLOCK_RETRIES (30 s)
# the sweep, which queues every clock overdue by more than CLOCK_GRACE, takes over.
CLOCK_RETRY_SECONDS = 0.1
CLOCK_RETRIES = 300
# ... and tried again at once, in the task, on a connection that broke: after a restart, each of a
# process's idle pooled connections fails the first query given to it, and a retry through the
# queue waited 0.3 to 0.7 s more for its turn in the lane after the database was back (stop 56).
BROKEN_RETRIES = 3
BOT_GRACE = dt.timedelta(seconds=2)  # a bot move owed for longer than this has lost its task
CLOCK_GRACE = dt.timedelta(milliseconds=500)  # a clock overdue by more was lost (Redis, a dead worker)


# Moves per bot task. On the people lane a worker goes back to the queue often, so a table's moves
# interleave with the other people tables' (and a person's stream sees them as they come); a
# bot-only table has nobody waiting on each move, so its task plays longer and costs fewer
# queue round trips per move. Eager runs (one process) play the whole hand at once.
MOVES_PER_TASK = {jobs.PEOPLE_QUEUE: 8, jobs.BOTS_QUEUE: 26}
# The sweep queues a table's bot task again at most once per version and this many seconds, and
# never while that task may still be waiting in its queue (`_waiting_since`): on a busy lane a task
# can wait for longer than BOT_GRACE without being lost, and a duplicate queued behind it would only
# make the queue longer (past capacity the people lane drowned in such duplicates: at 320 tables of
# bench/load.py, 2,363 of its 5,446 tasks found their version gone).
REQUEUE_SECONDS = {jobs.PEOPLE_QUEUE: 10, jobs.BOTS_QUEUE: 30}
# A task is published when its table's transaction has committed, a few milliseconds after the
# table's `updated_at`; a table changed later than this before the oldest waiting task's
# publication may still have its task in the queue.
PUBLISH_MARGIN = dt.timedelta(seconds=1)


@shared_task(name="games.play_bots", bind=True, **RELIABLE)
def play_bots(self: Task, table_id: int, version: int) -> int:
    """The moves bots owe at `table_id` as of `version`; returns how many versions it advanced."""
    try:
        queue = str((self.request.delivery_info or {}).get("routing_key") or jobs.PEOPLE_QUEUE)
        eager = self.request.is_eager  # one process: play (and ask brought bots) on to the end
        first = None
        if not eager and jobs.lane_kind(queue) == jobs.BOTS_QUEUE:
            first = botturns.first_read(table_id)
            if _moved_lately(first) and pressure.yield_to_people() > 0:
                first = None  # a bot-only table waited while people's work queued: read it again
        limit = None if eager else MOVES_PER_TASK[jobs.lane_kind(queue)]
        asks = None if eager else 1
        out = services.bots_play(table_id=table_id, version=version, limit=limit, asks=asks, first=first)
    except ServiceError as exc:  # the table is gone (deleted): nothing is owed
        log.info("play_bots for table %s: %s", table_id, exc.code)
        return 0
    return 0 if out.table is None else out.table.version - version


def _moved_lately(row: Table | None) -> bool:
    """Whether the table moved within BOT_GRACE: only then may its task yield to people's work, so
    that under a long overload a bot-only table still moves every few seconds (yielding before
    every task starved a flood's tables for more than 20 s in bench/load.py's 200-table run)."""
    return row is not None and timezone.now() - row.updated_at < BOT_GRACE


@shared_task(
    name="games.enforce_clock",
    bind=True,
    **{
        **RELIABLE,
        "retry_backoff": False,
        "default_retry_delay": CLOCK_RETRY_SECONDS,
        "max_retries": CLOCK_RETRIES,
    },
)
def enforce_clock(self: Task, table_id: int, version: int | None) -> int:
    """Sent when the table's clock came due (games.infra.clocks; `version` None) or by the sweep:
    acts for the late seats if the table's deadline has passed (and it is still at `version`);
    returns 1 when it acted, else 0. A connection that broke (its idle pooled connections are
    broken once PostgreSQL has restarted, and each is found at its use) is given back and the clock
    tried again at once, up to BROKEN_RETRIES times; the database out of reach is Celery's retry.
    Once the database is back from such an outage (the task was retried, met a broken connection or
    waited longer than CLOCK_GRACE for one), the task also acts on the other clocks that came due
    meanwhile (`catch_up`)."""
    started = time.monotonic()
    for attempt in range(BROKEN_RETRIES + 1):
        try:
            out = services.clock_expired(table_id=table_id, version=version)
        except ServiceError as exc:  # the table is gone (deleted): no clock to enforce
            log.info("enforce_clock for table %s: %s", table_id, exc.code)
            out = None
        except (OperationalError, InterfaceError) as exc:
            if attempt == BROKEN_RETRIES or not outages.broken_connection(exc) or connection.in_atomic_block:
                raise  # (inside a caller's transaction, an eager run, nothing may be given back)
            outages.renew_connections(exc)  # the pool's idle ones tested (at most every 0.5 s)
            close_old_connections()  # the broken one dropped: the next query takes another
            continue
        waited = time.monotonic() - started > CLOCK_GRACE.total_seconds()  # for a connection, as a rule
        if (attempt or self.request.retries or waited) and not connection.in_atomic_block:
            catch_up(table_id)
        return 0 if out is None or out.table is None else 1
    raise AssertionError("not reached: the last attempt returns or raises")


# After an outage of the database, every clock that came due meanwhile has its task retrying (every
# CLOCK_RETRY_SECONDS, in the lane's two processes), and each one's first query after the return
# costs a new connection and its statements prepared again, in a machine busy with every process
# reconnecting: the later ones of a 5-s restart's six were acted on 300 to 360 ms after the return,
# three rounds of the lane behind the first (bench/README.md, stop 56). So a clock task that got
# through after an outage (retried, or held up waiting for a connection: each of the lane's
# processes has one such task when the database comes back) acts on the others too, on its
# connection already made, earliest deadline first, and their own tasks then find nothing to do.
# Each table is claimed first (CAUGHT_UP, in Redis), so that the lane's processes, each catching up
# after its own task, share the list instead of queueing on the same rows (without Redis each acts
# on every one: a clock acted on twice is refused by its version). A table another transaction
# holds is left alone (`wait=False`): its holder is acting on it (the table's own clock task, a
# reader acting for the late seat, the person), and waiting on its row held up the catch-up 37 to 75
# ms a table, every clock behind it waiting too (stop 60). The tables go CATCH_UP_BATCH at a time,
# claimed in one Redis round trip and acted on in one transaction (services.clocks_expired): a
# table on its own cost seven round trips (the claim; the transaction's begin, lock, seat, write
# and commit; the wake-up), each a wait on a machine busy with every process reconnecting, and a
# table's time was 20 to 45 ms for 4 to 8 ms of the process's CPU (stop 60). At most
# CATCH_UP_TABLES: after a long outage the sweep and their own tasks do the rest.
CATCH_UP_TABLES = 50
CATCH_UP_BATCH = 4
CAUGHT_UP = "hearts:clocks:caught-up:{table}:{version}"


def catch_up(done: int, limit: int = CATCH_UP_TABLES) -> int:
    """Act on the clocks overdue now (but table `done`'s): how many were acted on."""
    due = list(
        _open_tables()
        .filter(deadline__lte=timezone.now())
        .exclude(pk=done)
        .order_by("deadline")
        .values_list("pk", "version")[:limit]
    )
    acted, started = 0, time.monotonic()
    for first in range(0, len(due), CATCH_UP_BATCH):
        try:
            acted += services.clocks_expired(_claimed(due[first : first + CATCH_UP_BATCH]))
        except ServiceError:  # one of them could not be acted on: their own tasks will
            continue
        except DatabaseError:  # away again: their own tasks retry
            log.info("clock catch-up stopped: the database", exc_info=True)
            break
    if acted:
        took = (time.monotonic() - started) * 1000
        log.info("clock catch-up after an outage: %d overdue tables acted on in %.0f ms", acted, took)
    return acted


def _claimed(due: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The tables of `due` nobody else claimed to catch up on (claimed now, in one round trip)."""
    keys = [CAUGHT_UP.format(table=table_id, version=version) for table_id, version in due]
    return [table for table, mine in zip(due, _first_claims(keys, 5.0), strict=True) if mine]


# The sweep shares the clock lane with the turn clocks, and beat sends one every SWEEP_SECONDS. While
# the database was down each one waited DB_POOL_TIMEOUT for a connection and was then retried with
# backoff: in the load run's 5-s restart, 16 sweeps and retries held both of the lane's processes,
# and the clocks due meanwhile were taken from the queue only 0.6 s after the database was back
# (bench/README.md, stop 56). So a sweep run by a worker is never retried (the next one comes within
# SWEEP_SECONDS), runs only where no other is running (SWEEP_LOCK, held at most SWEEP_LOCK_SECONDS),
# and does nothing within half a period of the last one's end (SWEPT: the ones queued behind a slow
# or blocked sweep); without Redis to say, it runs: it is the safety net for Redis's own failures. And
# it waits at most half a period for a database connection (outages.connection_within), not
# DB_POOL_TIMEOUT: a sweep blocked for 4.6 s still held one of the lane's two processes.
SWEEP_LOCK, SWEPT = "hearts:sweep:running", "hearts:sweep:done"
SWEEP_LOCK_SECONDS = 30.0
SWEEP_OPTIONS = {k: v for k, v in RELIABLE.items() if k not in ("autoretry_for", "max_retries")}


@contextlib.contextmanager
def sweep_turn() -> Iterator[bool]:
    """Whether this sweep is to run (see SWEEP_LOCK); True when Redis cannot say."""
    client = notify.shared_redis()
    lock, mine = None, True
    if client is not None:
        try:
            if client.exists(SWEPT):
                mine = False
            else:
                lock = client.lock(SWEEP_LOCK, timeout=SWEEP_LOCK_SECONDS, blocking=False)
                if not lock.acquire():
                    lock, mine = None, False
        except redis.RedisError:
            lock = None
    try:
        yield mine
    finally:
        if client is not None and lock is not None:
            with contextlib.suppress(redis.RedisError):  # LockError too: it outlived its lock
                client.set(SWEPT, "1", px=max(1, int(settings.SWEEP_SECONDS * 500)))
                lock.release()


@shared_task(name="games.sweep", bind=True, **SWEEP_OPTIONS)
def sweep(self: Task, limit: int = 500, inline: bool = False) -> int:
    """The safety net for lost messages (a Redis restart, a worker killed before it queued the
    next task): every clock overdue by more than CLOCK_GRACE, and every bot move owed for longer
    than BOT_GRACE whose task is not still waiting in its queue, gets a task again (acted on here
    with `inline`, as the embedded worker does).
    On-time clocks are left to their ETA tasks, so the sweep does not compete with them. The
    correspondence reminders that came due are recorded here, each in a short transaction: their
    time is in the database only (Table.reminder_at), so nothing else would find them. A worker's
    sweep runs only when no other is running or just ended (`sweep_turn`); called directly (the
    embedded worker, tests) it always runs."""
    if inline or self.request.called_directly or self.request.is_eager:
        return _sweep(limit, inline)
    with sweep_turn() as mine:
        if not mine:
            return 0
        wait = settings.SWEEP_SECONDS / 2
        if not outages.connection_within(wait):  # the database is away: the next sweep tries again
            log.info("sweep: no database connection within %.2f s", wait)
            return 0
        return _sweep(limit, inline)


def _sweep(limit: int, inline: bool) -> int:
    now = timezone.now()
    due = _open_tables().filter(
        Q(deadline__lte=now - CLOCK_GRACE) | Q(bot_turn=True, updated_at__lte=now - BOT_GRACE)
    )
    found = 0
    rows = list(due.values_list("pk", "version", "deadline", "app_id", "seating", "updated_at")[:limit])
    waiting = {} if inline else _waiting_since()
    for table_id, version, deadline, app_id, seating, updated_at in rows:
        overdue = deadline is not None and deadline <= now
        if inline:
            run = services.clock_expired if overdue else services.bots_play
            found += run(table_id=table_id, version=version).table is not None
            continue
        if overdue:
            enforce_clock.delay(table_id, version)
        else:
            lane = jobs.lane_of(people=has_people(seating), app_id=app_id or 0)
            oldest = waiting.get(lane)
            if oldest is not None and updated_at > oldest - PUBLISH_MARGIN:
                continue  # its task may still be in the queue, behind the oldest one waiting
            if not _first_requeue(table_id, version, REQUEUE_SECONDS[jobs.lane_kind(lane)]):
                continue  # queued again lately: that task is still waiting its turn
            play_bots.apply_async((table_id, version), queue=lane)
        found += 1
    if found:
        log.info("sweep found %d tables owed a move", found)
    # webhook deliveries and pushes whose task was lost
    found += webhooks.sweep(inline=inline) + push.sweep(inline=inline)
    if not inline:
        queue_housekeeping()
        if _first_in("tournament-set-ups", SET_UP_SWEEP_SECONDS):  # a set-up task lost or killed
            found += services.tournaments.resume_set_ups()
    return found + services.remind_due(now=now)  # correspondence reminders come due (recorded here)


def _waiting_since() -> dict[str, dt.datetime]:
    """When the oldest task still waiting in each bot task queue (people, and the bot lane's
    sub-queues) was published, for the queues that hold one: a table's task published since then
    is waiting its turn, not lost. One Redis round trip (the tail of each list,
    hearts_service.health); nothing when Redis cannot say (the sweep then requeues as before)."""
    client = notify.shared_redis()
    if client is None:
        return {}
    names = [jobs.PEOPLE_QUEUE, *jobs.bot_queues()]
    try:
        with client.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.lindex(name, -1)
            tails = pipe.execute()
    except redis.RedisError:
        return {}
    stamps = {name: published_at(tail) for name, tail in zip(names, tails, strict=True)}
    return {name: dt.datetime.fromtimestamp(at, dt.UTC) for name, at in stamps.items() if at is not None}


def _first_requeue(table_id: int, version: int, seconds: int) -> bool:
    """Whether the sweep has not queued this table's task for this version in the last `seconds`
    (a duplicate task does nothing)."""
    return _first_claim(f"hearts:requeued:{table_id}:{version}", seconds)


def _first_claim(key: str, seconds: float) -> bool:
    """Whether nobody claimed `key` in the last `seconds` (claimed now): `_first_claims` of one."""
    return _first_claims([key], seconds)[0]


def _first_claims(keys: list[str], seconds: float) -> list[bool]:
    """For each key, whether nobody claimed it in the last `seconds` (claimed now; all in one round
    trip); True when Redis cannot say: what a claim guards is safe to do twice (refused by its
    version, or a task that does nothing)."""
    client = notify.shared_redis()
    if client is None or not keys:
        return [True] * len(keys)
    try:
        with client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.set(key, "1", nx=True, px=max(1, int(seconds * 1000)))
            return [bool(mine) for mine in pipe.execute()]
    except redis.RedisError:
        return [True] * len(keys)


def _open_tables() -> QuerySet[Table]:
    """Tables not finished or abandoned (an open table may be in a quick-play wait)."""
    return Table.objects.exclude(status__in=[Table.Status.FINISHED, Table.Status.ABANDONED])


@shared_task(name="games.deliver_webhook", **{**RELIABLE, "soft_time_limit": 30, "time_limit": 45})
def deliver_webhook(delivery_id: str) -> str:
    """One attempt at a webhook delivery (routed to the `webhooks` queue). Safe to run twice:
    it claims the delivery first, and does nothing when it is done, claimed or not yet due."""
    return webhooks.attempt(delivery_id)


@shared_task(name="games.deliver_push", **{**RELIABLE, "soft_time_limit": 30, "time_limit": 45})
def deliver_push(message_id: str) -> str:
    """One attempt at a push notification (routed to the `push` queue). Safe to run twice: it claims
    the message first, and does nothing when it is done, claimed or not yet due."""
    return push.attempt(message_id)


@shared_task(name="games.run_export", **{**RELIABLE, "soft_time_limit": 600, "time_limit": 660})
def run_export(job_uuid: str) -> str:
    """Make a player's export document (routed to the `bulk` queue). Safe to run twice: the job's
    row is locked while it runs and a job no longer pending is left alone (games.services.exports)."""
    return data_exports.run_export(job_uuid)


# Housekeeping (docs/data.md): sealing, archiving and expired exports, on the bulk lane, queued by
# the sweep at most once a HOUSEKEEPING_SECONDS across every process (a Redis key), never run inside
# the sweep: the clocks never wait for it. The embedded run (no Redis) runs it in a thread of its
# own (games.embedded). The orphan sweep lists the whole archive storage, so it runs once an hour.
HOUSEKEEPING_SECONDS = 60
SET_UP_SWEEP_SECONDS = 30  # how often the sweep looks for tournament set-ups left unfinished
ORPHAN_SWEEP_SECONDS = 3600
_local_marks: dict[str, float] = {}  # without Redis: this process's last runs, by key


def _first_in(key: str, seconds: int) -> bool:
    """Whether nothing claimed `key` in the last `seconds` (claims it): across processes through
    Redis; in one process without it. A Redis that cannot say answers no: the work waits a turn."""
    client = notify.shared_redis()
    if client is None:
        now = time.monotonic()
        if now - _local_marks.get(key, -float(seconds)) < seconds:
            return False
        _local_marks[key] = now
        return True
    try:
        return bool(client.set(f"hearts:{key}", "1", nx=True, ex=seconds))
    except redis.RedisError:
        return False


def queue_housekeeping() -> bool:
    """Queue the housekeeping task on the bulk lane unless a process did in the last minute (with
    workers only: in eager mode, the embedded thread runs it)."""
    if jobs.eager() or notify.shared_redis() is None:
        return False
    if not _first_in("housekeeping", HOUSEKEEPING_SECONDS):
        return False
    housekeeping.apply_async(queue=jobs.BULK_QUEUE)
    return True


@shared_task(name="games.housekeeping", **{**RELIABLE, "soft_time_limit": 300, "time_limit": 360})
def housekeeping() -> dict[str, int]:
    """Seal the games over for SEAL_AFTER_SECONDS, archive those past their retention period,
    delete orphan archive files (hourly) and expired exports; what each step did."""
    done = {"sealed": records.seal_due(), "archived": archive.archive_due()}
    if _first_in("archive-orphans", ORPHAN_SWEEP_SECONDS):
        done["orphans"] = archive.sweep_orphans()
    try:
        from games.services.exports import expire
    except ImportError:
        log.info("housekeeping: no export expiry (games.services.exports.expire) yet")
    else:
        done["exports_expired"] = expire()
    if any(done.values()):
        log.info("housekeeping: %s", done)
    return done


@shared_task(name="games.set_up_tournament", **{**RELIABLE, "soft_time_limit": 300, "time_limit": 360})
def set_up_tournament(tournament_id: int) -> int:
    """Create the tables a new tournament lacks (routed to the `bulk` queue; the embedded run's bulk
    lane). Safe to run twice, or again after a worker died half-way: it creates only the missing
    ones, a batch to a transaction under the tournament's row lock (games.services.tournaments)."""
    return services.tournaments.set_up(tournament_id)


@shared_task(name="games.compute_hint", **RELIABLE)
def compute_hint(key: str, view: str, level: str, seed: int) -> bool:
    """A hint, on the `hints` lane: computed from the seat's view alone (the request sends it; this
    worker never reads the table) and kept in the cache under `key`, where the waiting request
    reads it (games.services.hints)."""
    hints.store(key, json.loads(view), level, seed)
    return True


@shared_task(name="games.review_hand", **RELIABLE)
def review_hand(table_id: int, hand: int, seat: int, level: str) -> bool:
    """A hand's review for one seat, on the `hints` lane: computed from the move log (each
    decision within REVIEW_THINK_MS) and kept in the cache, where the waiting request reads it
    (games.services.review). False: the table is gone."""
    return review.store(table_id, hand, seat, level) is not None
