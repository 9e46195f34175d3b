"""Celery's Redis transport with one Redis client per channel (kombu builds a new one per message),
and a worker consumer that reconnects to the broker within a fraction of a second."""

from __future__ import annotations

from typing import Any

from celery.worker.consumer import Consumer as CeleryConsumer
from kombu.transport import redis as kombu_redis

# kombu's Redis channel makes a redis.Redis object for every command it sends outside its event
# loop: for each task published, a client whose set-up (its response callbacks, twice) cost more
# than the LPUSH itself (bench/README.md, issue 37: 23% of a REST action's samples were the send of
# its bot task). A client over the channel's own connection pool is thread-safe and holds no state
# of its own, so one per channel does the same work; the asynchronous client (the worker's BRPOP)
# is kombu's as before.


class Channel(kombu_redis.Channel):  # type: ignore[misc]  # kombu is untyped
    _sync_client: Any = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:
            return super()._create_client(asynchronous=True)
        if self._sync_client is None:
            self._sync_client = super()._create_client()
        return self._sync_client


class Transport(kombu_redis.Transport):  # type: ignore[misc]
    Channel = Channel


NAME = f"{__name__}:Transport"  # settings.CELERY_BROKER_TRANSPORT for a redis:// broker


# How a worker reconnects once the broker went away. kombu's defaults (which Celery's consumer
# leaves in place, with no setting for them) wait 2 s after the first failed attempt, then 4, 6 ...
# up to 30: a Redis restart, down well under a second, stopped every lane for 2 s at least (in the
# load run the worst pushes, 1.2 to 1.7 s late, were all in that window: issue 35). Here attempts
# follow 0.1 s apart at first, growing by 0.1 s, then once a second: a refused connection costs
# nothing, and a worker is back at most a second after its broker.
RECONNECT = {"interval_start": 0.1, "interval_step": 0.1, "interval_max": 1.0}


class Consumer(CeleryConsumer):  # type: ignore[misc]  # celery is untyped
    """settings.CELERY_WORKER_CONSUMER: Celery's consumer, reconnecting on RECONNECT's intervals."""

    def ensure_connected(self, conn: Any) -> Any:
        ensure = conn.ensure_connection
        conn.ensure_connection = lambda *args, **kwargs: ensure(*args, **{**RECONNECT, **kwargs})
        return super().ensure_connected(conn)


CONSUMER = f"{__name__}:Consumer"  # settings.CELERY_WORKER_CONSUMER
