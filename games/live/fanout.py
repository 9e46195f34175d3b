"""Stream fan-out: one Redis subscription per web process, one database read per table change.

Per event loop (one uvicorn worker process) a Hub holds one redis.asyncio pub/sub connection. A
channel (`hearts:<db>:table:<id>`, `hearts:<db>:player:<id>`) is subscribed when the first stream that needs
it opens and unsubscribed once the last one has closed (reference counted); one reader task
dispatches the wake-ups. Each followed table has a Feed: when a wake-up (or the safety poll) says
the table reached a version beyond the feed's last read, the feed reads the table row and its new
moves once, in one worker thread, and wakes every stream following the table (table streams and
the player streams that include it); each stream then redacts its own events from that shared read
(games.reads.visible_events with its own seat) and builds its own `your_turn`. Wake-ups arriving
while a read is in flight join it (or cause one more read when they announce a later version).
A wake-up that carries its change (games.changes: the row and moves its commit wrote) is taken
as that read when it continues the feed's last one, without a query or a thread.

Nothing depends on Redis: the move log is the truth and a message only a wake-up. Every
STREAM_POLL_SECONDS one query reads the versions of all followed tables (and the unfinished tables
of all followed players), which covers a lost message and a Redis that is down; when the connection
fails the reader reconnects with backoff, resubscribes, and polls at once. Without REDIS_URL (the
embedded run) the wake-ups come from this process's own commits (notify.listen_here), and the
poll. Authorization is per stream, when it opens (see streams.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import redis.asyncio as aioredis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from games import changes, reads, services
from games.engine import state_from_dict
from games.infra import metrics, notify, presence, spectators
from hearts_service import outages, tracing

if TYPE_CHECKING:  # types only: the queries are in games.reads
    from games.engine import State
    from games.models import Move, Table

log = logging.getLogger(__name__)
T = TypeVar("T")

KEEP = 64  # moves a feed keeps, for streams a little behind the others
CONFIRM_SECONDS = 1.0  # longest a stream waits for its subscription before its first read
MAX_BACKOFF = 5.0  # longest pause between two attempts to reach Redis
IDLE_PING = 30.0  # a silent subscription is pinged, so a dead connection is noticed
MAX_TABLES = 100  # most tables followed for one player (as streams.MAX_TABLES)
HUB_CHANNEL = "hearts:streams"  # always subscribed: a pub/sub connection needs one channel


async def db(fn: Callable[..., T], *args: Any) -> T:
    """Run a database read in a worker thread; the connection is given back after each read, so
    an idle stream holds none."""

    def run() -> T:
        try:
            return fn(*args)
        except Exception as exc:
            outages.renew_connections(exc)  # a database back from a restart, a statement prepared stale
            raise
        finally:
            close_old_connections()

    return await sync_to_async(run, thread_sensitive=False)()


@dataclass
class Read:
    """One shared read of a table: its row, and its moves from `lo` up to its version."""

    table: Table
    moves: list[Move]
    lo: int
    cut: int | None = None  # with a spectator delay: the last move delayed spectators may see
    due: float | None = None  # a delay in seconds: when (epoch seconds) the next move comes due
    _state: State | None = field(default=None, repr=False)
    origin: Any = None  # with tracing on: the span of this read (hearts_service.tracing.fanout_span)

    @property
    def version(self) -> int:
        return self.table.version

    def state(self) -> State | None:
        """The table's engine state, parsed once for every stream of this read."""
        if self._state is None and self.table.state is not None:
            self._state = state_from_dict(self.table.state)
        return self._state

    def moves_from(self, first: int) -> list[Move] | None:
        """The moves from sequence `first` to the version, or None when this read lacks some."""
        if first > self.version:
            return []
        if first < self.lo:
            return None
        return [m for m in self.moves if m.seq >= first]


@dataclass
class Got:
    """What one shared read brought: the table row, its moves from `start`, and its spectator cut."""

    table: Table
    moves: list[Move]
    start: int | None
    cut: int | None = None
    due: float | None = None


def _shared_read(table_id: int, since: int | None, kept_from: int | None = None) -> Got | None:
    """The table row and its moves after `since` (none when None). Like services.table_seen, a
    clock that ran out is acted on first (as its task would), so no stream shows a past deadline.
    A table with a spectator delay also gets its cut (the same for all its delayed spectators),
    and its moves from the cut on when the feed lacks them (`kept_from`: its first kept move),
    so that delayed spectators are served from this one read too."""
    metrics.stream_read("shared")
    table = reads.table_row(table_id)
    if table is None:
        return None
    if table.deadline is not None and table.deadline <= timezone.now():
        out = services.clock_expired(table_id=table.pk, version=table.version)
        table = out.table or reads.table_row(table_id) or table
    start = None if since is None else since + 1
    cut = due = None
    if table.spectator_delay and not reads.is_over(table):
        cut, when = reads.spectator_cut(table)
        due = None if when is None else when.timestamp()
        if start is None or kept_from is None or cut + 1 < kept_from:
            start = cut + 1 if start is None else min(start, cut + 1)
    moves = reads.moves_from(table, start) if start is not None and start <= table.version else []
    return Got(table, moves, start, cut, due)


def _merge(base: Read | None, got: Got) -> Read:
    table, moves, start = got.table, got.moves, got.start
    if start is None or len(moves) != table.version - start + 1:  # nothing to continue, or a gap
        return Read(table, [], table.version + 1, got.cut, got.due)
    kept = [m for m in base.moves if m.seq < start] if base is not None else []
    if kept and kept[-1].seq != start - 1:
        kept = []
    floor = table.version - KEEP + 1
    # A delayed table keeps its moves from the previous cut on (where its delayed spectators are)
    cuts = [c for c in (got.cut, base.cut if base is not None else None) if c is not None]
    floor = min(floor, min(cuts) + 1) if cuts else floor
    kept = [m for m in [*kept, *moves] if m.seq >= floor]
    return Read(table, kept, kept[0].seq if kept else table.version + 1, got.cut, got.due)


class Feed:
    """One table's shared reads for every stream of it in this process."""

    def __init__(self, table_id: int) -> None:
        self.table_id = table_id
        self.viewers: set[asyncio.Event] = set()
        self.read: Read | None = None
        self.floor: int | None = None  # before the first read: the oldest version a stream holds
        self.announced = 0  # the latest version a wake-up or the poll announced
        self.origin: Any = None  # with tracing on: the trace of the change last announced
        self.forced = False
        self.task: asyncio.Task[None] | None = None
        self.reads = 0
        self.timer: asyncio.TimerHandle | None = None  # a delay in seconds: the next cut's read

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()

    def offer(self, table: Table) -> None:
        """A stream's own read (on opening): where the feed's first read continues from."""
        if self.read is None:
            self.floor = table.version if self.floor is None else min(self.floor, table.version)
            if self.task is None:
                self.read = Read(table, [], table.version + 1)
        if (
            table.spectator_delay
            and not reads.is_over(table)
            and (self.read is None or self.read.cut is None)
        ):
            self.announce(None)  # delayed spectators are served from a shared read with the cut

    def announce(self, version: int | None, origin: Any = None, change: str | None = None) -> None:
        """The table reached `version` (None: unknown, read anyway): read it unless the last read
        or the one in flight covers it, or `change` (games.changes) continues the last read.
        `origin`: the trace of the change (hearts_service.tracing)."""
        if change is not None and version is not None and self._take(version, change, origin):
            return
        if origin is not None:
            self.origin = origin
        if version is None:
            self.forced = True
        else:
            self.announced = max(self.announced, version)
        if self.task is None and self._behind():
            self.task = asyncio.get_running_loop().create_task(self._refresh())
        elif self.task is None:
            self.origin = None  # read already: no read of this feed belongs to that change

    def _take(self, version: int, text: str, origin: Any) -> bool:
        """Take a carried change as this feed's next read, if it continues the last read with
        nothing in flight; False when the feed must read the database instead (or has nothing to
        do): a change that skips moves, a table with a spectator delay (its cut is read with the
        moves' times) or whose clock ran out (the read acts on it first), a message not understood."""
        base = self.read
        if self.task is not None or base is None or version <= base.version or base.cut is not None:
            return False
        try:
            change = changes.decode(text)
        except (ValueError, KeyError, TypeError):
            log.warning("stream feed of table %s: carried change not understood", self.table_id)
            return False
        table = change.table
        if (
            table.pk != self.table_id
            or change.first > base.version + 1
            or table.spectator_delay
            or (table.deadline is not None and table.deadline <= timezone.now())
        ):
            return False
        metrics.stream_read("carried")
        with tracing.fanout_span(self.table_id, origin or self.origin, len(self.viewers)) as traced:
            moves = [m for m in change.moves if m.seq > base.version]
            self.read = _merge(base, Got(table, moves, base.version + 1))
        self.read.origin, self.origin = traced, None
        self.announced = max(self.announced, version)
        for event in self.viewers:
            event.set()
        return True

    def _behind(self) -> bool:
        return self.forced or self.read is None or self.announced > self.read.version

    async def _refresh(self) -> None:
        try:
            while self._behind():
                self.forced = False
                base, target = self.read, self.announced
                since = base.version if base is not None else self.floor
                kept_from = base.lo if base is not None else None
                origin, self.origin = self.origin, None
                with tracing.fanout_span(self.table_id, origin, len(self.viewers)) as traced:
                    got = await db(_shared_read, self.table_id, since, kept_from)
                self.reads += 1
                if got is None:
                    return
                table = got.table
                if self.announced == target and table.version < target:
                    self.announced = table.version  # a version the database lacks: no more reads for it
                if base is not None and table.version < base.version:
                    continue  # never go back
                self.read = _merge(base, got)
                self.read.origin = traced
                self._schedule(got.due)
                if base is None or self.read.version > base.version or self.read.cut != base.cut:
                    for event in self.viewers:
                        event.set()
        except Exception:  # a failed read wakes nobody; the next wake-up or poll reads again
            log.exception("stream feed of table %s: shared read failed", self.table_id)
        finally:
            self.task, self.origin = None, None

    def _schedule(self, due: float | None) -> None:
        """A delay in seconds moves the cut with time alone: read again when the next move is due."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if due is not None:
            loop = asyncio.get_running_loop()
            self.timer = loop.call_later(max(0.0, due - time.time()) + 0.01, self.announce, None)


class Follow:
    """One stream's registrations with its process's hub: the tables it follows (their feeds) and,
    for a player's stream, the player's channel. `event` is set when one of its feeds has a newer
    read; `discover` when the player may sit at a table it does not follow yet."""

    def __init__(self, hub: Hub, player_id: int | None, present_as: int | None = None) -> None:
        self.hub, self.player_id = hub, player_id
        # The player this stream tells about their tables (games.infra.presence: no push to them).
        self.present_as = present_as
        self.entry = f"{os.getpid()}-{uuid.uuid4().hex}"
        self.event = asyncio.Event()
        self.tables: set[int] = set()
        self.discover = False
        self.watching: tuple[int, str] | None = None  # a spectator stream: (table, its entry)

    async def spectate(self, table_id: int) -> None:
        """Count this stream as one of the table's spectators (games.infra.spectators) until it closes."""
        self.watching = (table_id, f"{os.getpid()}-{uuid.uuid4().hex}")
        self.hub.spectating[self.watching[1]] = table_id
        await db(spectators.opened, [self.watching])

    async def follow(self, table_ids: Iterable[int]) -> None:
        """Follow exactly these tables (subscribed before this returns, unless Redis is down)."""
        wanted = set(table_ids)
        dropped, added = self.tables - wanted, wanted - self.tables
        self.tables = wanted
        for table_id in dropped:
            self.hub.drop_feed(table_id, self.event)
        channels = [self.hub.add_feed(table_id, self.event) for table_id in sorted(added)]
        await self.hub.subscribe(channels)
        if self.present_as is not None and (added or dropped):
            gone = [(t, self.present_as, self.entry) for t in dropped]
            new = [(t, self.present_as, self.entry) for t in added]
            for entry in gone:
                self.hub.present.discard(entry)
            self.hub.present.update(new)
            await db(presence.closed, gone)
            await db(presence.opened, new)

    def read(self, table_id: int) -> Read | None:
        feed = self.hub.feeds.get(table_id)
        return feed.read if feed is not None else None

    def offer(self, table: Table) -> None:
        feed = self.hub.feeds.get(table.pk)
        if feed is not None and table.pk in self.tables:
            feed.offer(table)

    async def wait(self, timeout: float) -> None:
        """Until a feed has news for this stream, or `timeout` seconds. With asyncio.timeout, not
        wait_for: Python 3.11's wait_for loses a cancellation that meets the event's setting (it
        returns instead), and the stream's task went on following a table after its subscription
        was stopped (the socket's `stop`, awaiting it, then held the socket up)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self.event.wait()

    def close(self) -> None:
        for table_id in self.tables:
            self.hub.drop_feed(table_id, self.event)
        if self.present_as is not None and self.tables:
            gone = [(t, self.present_as, self.entry) for t in self.tables]
            self.hub.present.difference_update(gone)
            self.hub.background(db(presence.closed, gone))
        self.tables = set()
        if self.watching is not None:
            table_id, entry = self.watching
            self.hub.spectating.pop(entry, None)
            self.hub.background(db(spectators.closed, table_id, entry))
            self.watching = None
        if self.player_id is not None:
            watches = self.hub.players.get(self.player_id, set())
            watches.discard(self)
            if not watches:
                self.hub.players.pop(self.player_id, None)
            self.hub.unsubscribe(notify.player_channel(self.player_id))


class Hub:
    """This event loop's Redis subscription, feeds and safety poll, shared by all its streams."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.refs: Counter[str] = Counter()  # channel -> streams needing it
        self.subscribed: dict[str, asyncio.Future[bool]] = {}  # sent on this connection -> confirmed
        self.send_lock = asyncio.Lock()  # subscribe/unsubscribe commands go out in decision order
        self.feeds: dict[int, Feed] = {}
        self.players: dict[int, set[Follow]] = {}
        self.spectating: dict[str, int] = {}  # open spectator streams: entry -> table
        self.present: set[presence.Entry] = set()  # (table, player, stream) of open player streams
        self.pending: set[asyncio.Task[Any]] = set()
        self.pubsub: Any = None
        self.client: aioredis.Redis | None = None
        self.connected = False
        self.connects = 0  # successful connections so far (1 unless Redis went away)
        self.tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        if self.tasks:
            return
        if settings.REDIS_URL:
            self.tasks.append(self.loop.create_task(self._listen()))
        else:  # one process: its own commits are the wake-ups (the poll stays as the safety net)
            notify.listen_here(self._wake_here)
        self.tasks.append(self.loop.create_task(self._poll()))

    def _wake_here(self, table_id: int, version: int, players: frozenset[int], change: str | None) -> None:
        """A wake-up published by this process (no Redis), from the thread that committed."""
        with contextlib.suppress(RuntimeError):  # this hub's loop is closed: nothing to wake
            self.loop.call_soon_threadsafe(self._news_here, table_id, version, players, change)

    def _news_here(self, table_id: int, version: int, players: frozenset[int], change: str | None) -> None:
        # Called in a copy of the committing thread's context: its span is the change's.
        origin = tracing.capture()
        feed = self.feeds.get(table_id)
        if feed is not None:
            feed.announce(version, origin, change)
        for player_id in players:
            self._player_news(player_id, table_id, version, origin)

    # -- registrations ----------------------------------------------------------------------

    def add_feed(self, table_id: int, event: asyncio.Event) -> str:
        feed = self.feeds.get(table_id)
        if feed is None:
            feed = self.feeds[table_id] = Feed(table_id)
        feed.viewers.add(event)
        channel = notify.table_channel(table_id)
        self.refs[channel] += 1
        return channel

    def drop_feed(self, table_id: int, event: asyncio.Event) -> None:
        feed = self.feeds.get(table_id)
        if feed is not None:
            feed.viewers.discard(event)
            if not feed.viewers:
                feed.close()
                del self.feeds[table_id]
        self.unsubscribe(notify.table_channel(table_id))

    async def following(self, player_id: int | None = None, present_as: int | None = None) -> Follow:
        self.start()
        follow = Follow(self, player_id, present_as)
        if player_id is not None:
            self.players.setdefault(player_id, set()).add(follow)
            channel = notify.player_channel(player_id)
            self.refs[channel] += 1
            await self.subscribe([channel])
        return follow

    async def subscribe(self, channels: list[str]) -> None:
        """Subscribe these channels (counted already in `refs`) if this connection lacks them,
        and wait for Redis to confirm (briefly: while Redis is down the poll covers them)."""
        if not settings.REDIS_URL or not channels:
            return
        waits = []
        async with self.send_lock:
            new = [c for c in channels if c not in self.subscribed]
            for channel in new:
                self.subscribed[channel] = self.loop.create_future()
            if new and self.connected:
                try:
                    await self.pubsub.subscribe(*new)
                except Exception as exc:  # the reader notices too, reconnects and resubscribes
                    log.warning("streams: subscribe failed: %s", exc)
            waits = [self.subscribed[c] for c in channels if c in self.subscribed]
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CONFIRM_SECONDS):  # (not wait_for: see Follow.wait)
                await asyncio.gather(*map(asyncio.shield, waits))

    def unsubscribe(self, channel: str) -> None:
        """One stream less needs `channel`; the last one's leaving unsubscribes at the next sweep."""
        self.refs[channel] -= 1
        if self.refs[channel] <= 0:
            del self.refs[channel]

    async def _sweep(self) -> None:
        async with self.send_lock:
            stale = [c for c in self.subscribed if c not in self.refs]
            for channel in stale:
                future = self.subscribed.pop(channel)
                if not future.done():
                    future.set_result(False)
            if stale and self.connected:
                try:
                    await self.pubsub.unsubscribe(*stale)
                except Exception as exc:
                    log.warning("streams: unsubscribe failed: %s", exc)

    # -- Redis --------------------------------------------------------------------------------

    async def _connect(self) -> None:
        client = aioredis.Redis.from_url(
            settings.REDIS_URL,
            socket_connect_timeout=1,
            retry=Retry(NoBackoff(), 0),  # the hub reconnects itself, with backoff
            client_name=f"hearts-streams-{os.getpid()}",
        )
        pubsub = client.pubsub()
        try:
            async with self.send_lock:
                for channel in self.refs:
                    self.subscribed.setdefault(channel, self.loop.create_future())
                await pubsub.subscribe(HUB_CHANNEL, *self.subscribed)
                self.client, self.pubsub, self.connected = client, pubsub, True
                self.connects += 1
        except BaseException:
            await _close(pubsub, client)
            raise

    async def _disconnect(self) -> None:
        async with self.send_lock:
            pubsub, client = self.pubsub, self.client
            self.pubsub, self.client, self.connected = None, None, False
            for future in self.subscribed.values():
                if not future.done():
                    future.set_result(False)
            self.subscribed = {}
        await _close(pubsub, client)

    async def _listen(self) -> None:
        delay = 0.1
        while True:
            try:
                await self._connect()
                if self.connects > 1:
                    log.warning("streams: Redis subscription back (%d channels)", len(self.subscribed))
                    if self.present:  # a restarted Redis lost them: no push to a player watching
                        self.background(db(presence.refresh, list(self.present)))
                delay = 0.1
                self.loop.create_task(self.poll_now())  # wake-ups may have been lost meanwhile
                while True:
                    message = await self.pubsub.get_message(timeout=IDLE_PING)
                    if message is None:
                        await self.pubsub.ping()
                    else:
                        self._dispatch(message)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("streams poll: Redis subscription lost or unavailable: %s", exc)
            await self._disconnect()
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF)

    def _dispatch(self, message: dict[str, Any]) -> None:
        kind, channel, data = message["type"], message["channel"], message["data"]
        channel = channel.decode() if isinstance(channel, bytes) else str(channel)
        if kind == "subscribe":
            future = self.subscribed.get(channel)
            if future is not None and not future.done():
                future.set_result(True)
            return
        if kind != "message":
            return
        data = data.decode() if isinstance(data, bytes) else str(data)
        # `;<traceparent>` with tracing on, then `;<change>` when carried (notify.send)
        data, _, rest = data.partition(";")
        trace, _, change = rest.partition(";")
        origin = tracing.from_traceparent(trace) if trace else None
        tail = channel.rpartition(":")[2]
        try:
            if not tail.isdigit():
                return
            if channel == notify.table_channel(int(tail)):
                feed = self.feeds.get(int(tail))
                if feed is not None:
                    feed.announce(int(data), origin, change or None)
            elif channel == notify.player_channel(int(tail)):
                table, _, version = data.partition(":")
                self._player_news(int(tail), int(table), int(version), origin)
        except ValueError:
            log.warning("streams: malformed wake-up %r on %s", data[:40], channel)

    def _player_news(self, player_id: int, table_id: int, version: int | None, origin: Any = None) -> None:
        feed = self.feeds.get(table_id)
        if feed is not None:
            feed.announce(version, origin)
        for follow in self.players.get(player_id, ()):
            if table_id not in follow.tables:
                follow.discover = True
                follow.event.set()

    # -- the safety poll ------------------------------------------------------------------------

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(settings.STREAM_POLL_SECONDS)
            await self.poll_now()
            await self._sweep()
            if self.spectating:  # keep this process's spectator entries from expiring
                with contextlib.suppress(Exception):
                    await db(spectators.refresh, [(t, e) for e, t in self.spectating.items()])
            if self.present:  # and its players' presence (games.infra.presence)
                with contextlib.suppress(Exception):
                    await db(presence.refresh, list(self.present))

    def background(self, work: Any) -> None:
        """Run a coroutine without waiting for it (kept referenced until it is done)."""
        task = self.loop.create_task(work)
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def poll_now(self) -> None:
        """One query for the versions of every followed table and the unfinished tables of every
        followed player; a feed behind reads, a player at a new table finds it."""
        tables, players = list(self.feeds), list(self.players)
        if not tables and not players:
            return
        try:
            versions, seated = await db(_poll_read, tables, players)
        except Exception:
            log.exception("streams: poll failed")
            return
        for table_id, version in versions.items():
            feed = self.feeds.get(table_id)
            if feed is not None:
                feed.announce(version)
        for player_id, table_ids in seated.items():
            for follow in self.players.get(player_id, ()):
                if table_ids - follow.tables:
                    follow.discover = True
                    follow.event.set()


def _poll_read(tables: list[int], players: list[int]) -> tuple[dict[int, int], dict[int, set[int]]]:
    metrics.stream_read("poll")
    seated = reads.unfinished_tables_of_players(players, MAX_TABLES) if players else {}
    return reads.table_versions(tables), seated


async def _close(pubsub: Any, client: aioredis.Redis | None) -> None:
    try:
        if pubsub is not None:
            await pubsub.aclose()
        if client is not None:
            await client.aclose()
    except Exception:
        pass


_hubs: dict[asyncio.AbstractEventLoop, Hub] = {}


def hub() -> Hub:
    """The running event loop's hub (one per web process under uvicorn)."""
    loop = asyncio.get_running_loop()
    found = _hubs.get(loop)
    if found is None:
        for old in [old for old in _hubs if old.is_closed()]:
            del _hubs[old]
        found = _hubs[loop] = Hub(loop)
    return found


@contextlib.asynccontextmanager
async def following(player_id: int | None = None, present_as: int | None = None) -> AsyncIterator[Follow]:
    """A stream's registration with the hub, for as long as the stream is open: `player_id`'s
    channel (a player's stream), and `present_as` the player it counts as present at the tables
    it follows (games.infra.presence)."""
    follow = await hub().following(player_id, present_as)
    kind = "table" if player_id is None else "player"
    metrics.stream_opened(kind)
    try:
        yield follow
    finally:
        metrics.stream_closed(kind)
        follow.close()
