"""Celery's Redis transport with one Redis client per channel: kombu builds a new one per message."""

from __future__ import annotations

from typing import Any

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
