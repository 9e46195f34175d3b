"""What the web's /metrics adds at each scrape: whether the database and Redis answer, and each
lane's queue depth and oldest task age, read from Redis (deploy/monitoring's alerts page on them).

The process metrics (games.infra.metrics) say what the service did; these say what it cannot see
from inside a request: a database or Redis that stopped answering, a lane whose workers stopped
taking work. They are computed when Prometheus scrapes (one `SELECT 1` and one Redis round trip,
each bounded by a short timeout), so every web replica reports them; the alerts take the maximum.

Kombu's Redis transport keeps a queue as a Redis list of its name: new messages are pushed on the
left and workers pop from the right, so the right end is the oldest message; its age comes from
the `hearts_published_at` header every task carries (hearts_service.observability). Tasks with a
countdown are held by a worker until due, not in the list, so they count in neither figure.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable

import redis
from django.conf import settings
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from games.infra import jobs, notify
from hearts_service.observability import PUBLISHED_HEADER
from hearts_service.views import _database_ready

log = logging.getLogger(__name__)


def queues() -> list[tuple[str, str]]:
    """Every queue the workers take from, with its lane: (queue, lane)."""
    named = [(q, q) for q in jobs.LANES if q != jobs.BOTS_QUEUE]
    return named + [(q, jobs.BOTS_QUEUE) for q in jobs.bot_queues()]


def published_at(message: bytes | None) -> float | None:
    """The publication time stamped on a queued message (None: no message, or no stamp)."""
    if message is None:
        return None
    try:
        stamp = json.loads(message).get("headers", {}).get(PUBLISHED_HEADER)
        return float(stamp) if stamp is not None else None
    except (ValueError, TypeError, AttributeError):
        return None


class Dependencies(Collector):
    """hearts_database_up, hearts_redis_up, hearts_queue_depth and hearts_queue_oldest_task_age_seconds
    (the last three only when REDIS_URL is set: without Redis, the embedded run, there are no queues)."""

    def collect(self) -> Iterable[Metric]:
        database = GaugeMetricFamily(
            "hearts_database_up", "1 if the database answered SELECT 1 at this scrape (as /readyz), else 0"
        )
        database.add_metric([], 1.0 if _database_ready() else 0.0)
        yield database
        if not settings.REDIS_URL:
            return
        up = GaugeMetricFamily("hearts_redis_up", "1 if Redis answered at this scrape, else 0")
        depth = GaugeMetricFamily(
            "hearts_queue_depth", "Tasks waiting in a lane's queue for a worker", labels=["queue", "lane"]
        )
        age = GaugeMetricFamily(
            "hearts_queue_oldest_task_age_seconds",
            "Age of the oldest task waiting in a lane's queue (0 when the queue is empty)",
            labels=["queue", "lane"],
        )
        named = queues()
        try:
            client = notify.shared_redis()
            assert client is not None  # REDIS_URL is set
            with client.pipeline(transaction=False) as pipe:
                for queue, _ in named:
                    pipe.llen(queue)
                    pipe.lindex(queue, -1)
                answers = pipe.execute()
        except (redis.RedisError, OSError) as exc:
            log.warning("metrics: redis check failed: %s", exc)
            up.add_metric([], 0.0)
            yield up
            return
        now = time.time()
        up.add_metric([], 1.0)
        for n, (queue, lane) in enumerate(named):
            length, oldest = int(answers[2 * n]), published_at(answers[2 * n + 1])
            depth.add_metric([queue, lane], float(length))
            age.add_metric([queue, lane], max(0.0, now - oldest) if length and oldest is not None else 0.0)
        yield from (up, depth, age)


REGISTRY = CollectorRegistry(auto_describe=False)
REGISTRY.register(Dependencies())
