"""The broker transport (games.infra.broker): one Redis client per channel, messages as kombu's."""

from __future__ import annotations

import json

import pytest
import redis
from celery import current_app
from kombu import Connection

from games.infra import broker, jobs
from tests.conftest import celery_eager
from tests.service.test_settings import SETUP, start


@pytest.mark.needs_redis
def test_a_channel_publishes_every_message_through_one_client_and_a_worker_reads_them(redis_url: str) -> None:
    url = redis_url
    celery_eager(False)  # published, not run here
    queue = "test-broker"
    task = current_app.tasks[jobs.PLAY_BOTS]
    with Connection(url, transport=broker.NAME) as conn:
        channel = conn.default_channel
        assert isinstance(channel, broker.Channel)
        producer = current_app.amqp.Producer(conn)
        for n in range(3):
            task.apply_async((7, n), queue=queue, producer=producer)
        assert channel._create_client() is channel._create_client()  # kombu's makes one per call
        # What a worker of the queue would take: kombu's own transport reads the messages back.
        with Connection(url) as stock:
            got = [stock.SimpleQueue(queue, no_ack=True).get(timeout=2) for _ in range(3)]
    assert sorted(json.loads(m.body)[0][1] for m in got) == [0, 1, 2]
    assert all(m.headers["task"] == jobs.PLAY_BOTS for m in got)
    redis.Redis.from_url(url).delete(queue)


@pytest.mark.parametrize(
    ("url", "transport"),
    [("redis://127.0.0.1:6379/0", broker.NAME), ("rediss://127.0.0.1:6380/0", "None"), ("", "None")],
)
def test_the_settings_use_it_for_a_plain_redis_broker_only(url: str, transport: str) -> None:
    """rediss:// (TLS) and Sentinel keep kombu's transport, whose connection parameters they need."""
    code = (
        SETUP
        + "; from django.conf import settings; print(getattr(settings, 'CELERY_BROKER_TRANSPORT', None))"
    )
    done = start(code, REDIS_URL=url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == transport
