"""Celery's Redis transport with one Redis client per channel (kombu builds a new one per message), a
worker consumer that reconnects to the broker within a fraction of a second, and a task's message
made without kombu's producer, for a pipeline of the caller's."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from celery import signals
from celery.worker.consumer import Consumer as CeleryConsumer
from kombu import serialization
from kombu.entity import maybe_delivery_mode
from kombu.transport import redis as kombu_redis
from kombu.utils import json as kombu_json
from kombu.utils.uuid import uuid

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


# -- a task's message for a pipeline of our own ---------------------------------------------------
# Celery's `apply_async` spends most of its CPU in kombu's producer machinery (a producer from the
# pool, the entities copied and declared, the retry wrapper), about 0.3 ms a task here against 0.03
# for the LPUSH it ends in (bench/README.md, stop 55: a tenth of a web process's samples were the bot
# task's send after a person's action). `staged` makes the same message with the same steps of
# Celery and kombu (Celery's task message and publish signals, kombu's serializer, the channel's
# `prepare_message` and delivery details) without that machinery, for a caller that pushes it in a
# Redis pipeline it sends anyway: the wake-ups of the commit that owes the task (games.infra.notify).


@dataclass(frozen=True)
class _Publisher:
    """What `staged` needs of a process's app, read once (Celery's settings are slow to look up)."""

    channel: Any  # a channel of the broker, for its pure methods (kombu's pinged Redis to make it)
    serializer: str
    delivery_mode: int


_publishers: dict[tuple[int, int], _Publisher] = {}  # per process and app
_stageable: dict[tuple[int, str], bool] = {}  # per app and Redis URL


def _publisher(app: Any) -> _Publisher:
    key = (os.getpid(), id(app))
    found = _publishers.get(key)
    if found is None:
        conf = app.conf
        mode = maybe_delivery_mode(conf.task_default_delivery_mode)
        found = _publishers[key] = _Publisher(
            app.connection_for_write().default_channel, conf.task_serializer, mode
        )
    return found


def stageable(app: Any, redis_url: str) -> bool:
    """Whether `staged` can make this app's messages for a Redis client of `redis_url` now: not in
    eager mode, and a broker that is this transport on that same Redis, with kombu's default key
    layout (no global key prefix) and no `task-sent` events to send (Celery's `task_send_sent_event`,
    off here). The broker's settings are read once per app and URL."""
    if app.conf.task_always_eager or not redis_url:
        return False
    key = (id(app), redis_url)
    known = _stageable.get(key)
    if known is None:
        conf = app.conf
        known = _stageable[key] = (
            conf.broker_url == redis_url
            and conf.broker_transport == NAME
            and not (conf.broker_transport_options or {}).get("global_keyprefix")
            and not conf.task_send_sent_event
        )
    return known


def staged(
    app: Any, name: str, args: tuple[Any, ...], queue: str, countdown: float | None = None
) -> tuple[str, str]:
    """The Redis list and the message with which `app.tasks[name].apply_async(args, queue=queue,
    countdown=countdown)` would send the task on this transport (a stageable app, a direct queue),
    the publish signals sent as Celery sends them; the caller LPUSHes it. Connects once per process
    (the channel); raises kombu's error when Redis is unreachable then."""
    task = app.tasks[name]
    amqp = app.amqp
    parent = app.current_worker_task
    root_id = parent_id = None
    if parent is not None:  # as send_task: the task a worker is running is the new one's parent
        root_id, parent_id = parent.request.root_id or parent.request.id, parent.request.id
    task_id = uuid()
    headers, properties, body, _ = amqp.create_task_message(  # the rest at send_task's defaults
        task_id,
        name,
        args,
        {},
        countdown=countdown,
        reply_to=app.thread_oid,
        time_limit=task.time_limit,
        soft_time_limit=task.soft_time_limit,
        root_id=root_id,
        parent_id=parent_id,
        ignore_result=task.ignore_result,
    )
    exchange, routing_key = "", queue  # a direct queue: kombu's anonymous exchange, as send_task_message
    signals.before_task_publish.send(
        sender=name,
        body=body,
        exchange=exchange,
        routing_key=routing_key,
        declare=[amqp.queues[queue]],
        headers=headers,
        properties=properties,
        retry_policy=None,
    )
    publisher = _publisher(app)
    content_type, content_encoding, data = serialization.dumps(body, serializer=publisher.serializer)
    properties["delivery_mode"] = publisher.delivery_mode
    channel = publisher.channel
    message = channel.prepare_message(data, 0, content_type, content_encoding, headers, properties)
    channel._inplace_augment_message(message, exchange, routing_key)
    signals.after_task_publish.send(
        sender=name, body=body, headers=headers, exchange=exchange, routing_key=routing_key
    )
    return channel._q_for_pri(queue, 0), kombu_json.dumps(message)
