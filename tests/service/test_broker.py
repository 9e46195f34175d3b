"""The broker transport (games.infra.broker): one Redis client per channel, messages as kombu's; a
worker back on the broker within a fraction of a second after Redis restarts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import current_app
from kombu import Connection

from games.infra import broker, jobs
from hearts_service.observability import PUBLISHED_HEADER
from tests.conftest import celery_eager, skip_or_fail
from tests.live import _free_port, _spawn, _stop
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


def _normal(raw: bytes) -> dict[str, Any]:
    """A message as kombu's Redis transport stores it, without what differs between two sends of
    the same task: the ids, the publication time, the queue."""
    message = json.loads(raw)
    headers, properties = message["headers"], message["properties"]
    assert headers["id"] == headers["root_id"] == properties["correlation_id"]
    assert isinstance(headers.pop(PUBLISHED_HEADER), float)  # stamped by the publish signal
    eta = headers.pop("eta")
    for gone in ["id", "root_id"]:
        headers.pop(gone)
    for gone in ["correlation_id", "delivery_tag"]:
        properties.pop(gone)
    properties["delivery_info"].pop("routing_key")
    return {**message, "eta?": eta is not None}


@pytest.mark.needs_redis
@pytest.mark.parametrize("countdown", [None, 2.5])
def test_a_staged_message_is_the_one_apply_async_sends_and_a_worker_reads_it(
    redis_url: str, countdown: float | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`broker.staged` (the bot task pushed with a commit's wake-ups) makes the message Celery's
    `apply_async` makes, but for its ids and time: kombu's own transport reads it back."""
    celery_eager(False)
    app = current_app
    for name, value in [("broker_url", redis_url), ("broker_transport", broker.NAME)]:
        monkeypatch.setitem(app.conf, name, value)
        monkeypatch.setitem(app.conf, f"CELERY_{name.upper()}", value)
    monkeypatch.setattr(broker, "_publishers", {})
    monkeypatch.setattr(broker, "_stageable", {})
    assert broker.stageable(app, redis_url)
    assert not broker.stageable(app, redis_url + "0")  # another Redis than the broker's
    monkeypatch.setattr(broker, "_stageable", {})
    monkeypatch.setitem(app.conf, "task_send_sent_event", True)  # events staged messages do not send
    assert not broker.stageable(app, redis_url)
    monkeypatch.setitem(app.conf, "task_send_sent_event", False)
    monkeypatch.setattr(broker, "_stageable", {})
    client = redis.Redis.from_url(redis_url)
    sent, staged = "test-staged-sent", "test-staged-made"
    client.delete(sent, staged)
    with Connection(redis_url, transport=broker.NAME) as conn:
        app.tasks[jobs.PLAY_BOTS].apply_async(
            (7, 3), queue=sent, countdown=countdown, producer=app.amqp.Producer(conn)
        )
    key, message = broker.staged(app, jobs.PLAY_BOTS, (7, 3), staged, countdown)
    assert key == staged
    client.lpush(key, message)
    assert _normal(client.lindex(staged, 0)) == _normal(client.lindex(sent, 0))
    with Connection(redis_url) as stock:  # what a worker of the queue takes
        got = stock.SimpleQueue(staged, no_ack=True).get(timeout=2)
    assert json.loads(got.body)[0] == [7, 3]
    assert got.headers["task"] == jobs.PLAY_BOTS
    assert (got.headers["eta"] is None) == (countdown is None)
    client.delete(sent, staged)
    celery_eager(True)
    assert not broker.stageable(app, redis_url)  # eager: the task runs at once instead


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


def _redis_server(port: int, log: Path) -> subprocess.Popen[bytes]:
    cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = _spawn(cmd, dict(os.environ), log)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc
        except OSError:
            time.sleep(0.01)
    raise AssertionError("redis-server did not start")


def _connected(log: Path) -> int:
    return log.read_text(errors="replace").count("Connected to ")


@pytest.mark.slow
def test_a_worker_is_back_on_the_broker_within_a_second_of_a_redis_restart(tmp_path: Path) -> None:
    """A real worker on a Redis of its own, down for 2.5 s: kombu's intervals (2 s, then 4 s) would
    bring it back 3.5 s after Redis; the consumer's (broker.RECONNECT) within a second."""
    if shutil.which("redis-server") is None:
        skip_or_fail("redis-server is not installed")
    port = _free_port()
    env = {**os.environ, "REDIS_URL": f"redis://127.0.0.1:{port}/0", "LOG_LEVEL": "INFO"}
    env.pop("DATABASE_URL", None)  # nothing here touches a database
    procs = [_redis_server(port, tmp_path / "redis.log")]
    log = tmp_path / "worker.log"
    cmd = [sys.executable, "-m", "celery", "-A", "hearts_service", "worker", "--pool=solo"]
    procs.append(_spawn([*cmd, "-Q", "test-reconnect", "-n", f"r{port}@%h", "-l", "info"], env, log))
    try:
        deadline = time.monotonic() + 60
        while _connected(log) < 1:
            assert time.monotonic() < deadline and procs[1].poll() is None, log.read_text()
            time.sleep(0.05)
        time.sleep(0.5)  # consuming
        os.killpg(procs[0].pid, signal.SIGKILL)
        procs[0].wait()
        time.sleep(2.5)
        procs[0] = _redis_server(port, tmp_path / "redis.log")
        back = time.monotonic()
        while _connected(log) < 2:
            assert time.monotonic() < back + 10, log.read_text()[-3000:]
            time.sleep(0.02)
        assert time.monotonic() - back < 1.0
    finally:
        _stop(procs, graceful=False)


def test_the_settings_name_the_quick_consumer() -> None:
    from django.conf import settings

    assert settings.CELERY_WORKER_CONSUMER == broker.CONSUMER
    assert current_app.conf.worker_consumer == broker.CONSUMER
