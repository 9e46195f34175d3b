"""Publishing a task to Redis: kombu's own Redis transport against games.infra.broker's, and its staged
message (the bot task a commit owes, pushed with the wake-ups), same process."""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

# bench/graphql.py is named like the `graphql` package: keep this folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")
# The machine's Redis, database 15, unless REDIS_URL names another: what is published is deleted.
os.environ["REDIS_URL"] = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/15"

import django  # noqa: E402

django.setup()

import redis  # noqa: E402
from celery import current_app  # noqa: E402
from django.conf import settings  # noqa: E402
from kombu import Connection  # noqa: E402

from games.infra import broker, jobs  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
PUBLISHES = int(os.environ.get("BENCH_PLAYS", "100")) * 10  # per round and transport
QUEUE = "bench-broker"


def cpu_us_per_publish(transport: str) -> float:
    """The CPU time of one bot task's publish (as jobs.send makes it), on a fresh connection."""
    task = current_app.tasks[jobs.PLAY_BOTS]
    with Connection(settings.REDIS_URL, transport=transport) as conn:
        producer = current_app.amqp.Producer(conn)
        task.apply_async((1, 0), queue=QUEUE, producer=producer)  # connect and declare first
        start = time.process_time()
        for n in range(PUBLISHES):
            task.apply_async((1, n), queue=QUEUE, producer=producer)
        spent = time.process_time() - start
    redis.Redis.from_url(settings.REDIS_URL).delete(QUEUE)
    return spent / PUBLISHES * 1e6


def cpu_us_per_staged() -> float:
    """The CPU time of one bot task made by `broker.staged` (as games.services.record does after a
    commit) and LPUSHed in a pipeline of its own: in the service it rides on the wake-up's round
    trip, which is made anyway, so this is an upper bound."""
    client = redis.Redis.from_url(settings.REDIS_URL)
    key, message = broker.staged(current_app, jobs.PLAY_BOTS, (1, 0), QUEUE)  # the channel, made once
    client.lpush(key, message)
    start = time.process_time()
    for n in range(PUBLISHES):
        key, message = broker.staged(current_app, jobs.PLAY_BOTS, (1, n), QUEUE)
        with client.pipeline(transaction=False) as pipe:
            pipe.lpush(key, message)
            pipe.execute()
    spent = time.process_time() - start
    client.delete(QUEUE)
    return spent / PUBLISHES * 1e6


def cpu_us_per_making() -> float:
    """The CPU time of `broker.staged` alone: what a commit's bot task adds to the publisher thread's
    round trip, which it makes anyway for the wake-up (besides the LPUSH's few bytes in that pipeline)."""
    broker.staged(current_app, jobs.PLAY_BOTS, (1, 0), QUEUE)
    start = time.process_time()
    for n in range(PUBLISHES):
        broker.staged(current_app, jobs.PLAY_BOTS, (1, n), QUEUE)
    return (time.process_time() - start) / PUBLISHES * 1e6


def main() -> None:
    current_app.conf.task_always_eager = False  # the settings' own with REDIS_URL: published, not run
    stock, ours, staged, making = [], [], [], []
    for _ in range(ROUNDS):  # alternate, so that the machine's swings fall on all alike
        stock.append(cpu_us_per_publish("redis"))
        ours.append(cpu_us_per_publish(broker.NAME))
        staged.append(cpu_us_per_staged())
        making.append(cpu_us_per_making())
    print(f"publish_cpu_us_kombu: {statistics.median(stock):.1f}")
    print(f"publish_cpu_us_ours: {statistics.median(ours):.1f}")
    ratio = statistics.median(o / s for o, s in zip(ours, stock, strict=True))
    print(f"publish_ours_vs_kombu_ratio: {ratio:.2f}")
    print(f"publish_cpu_us_staged: {statistics.median(staged):.1f}")
    ratio = statistics.median(m / o for m, o in zip(staged, ours, strict=True))
    print(f"publish_staged_vs_ours_ratio: {ratio:.2f}")
    print(f"staged_making_cpu_us: {statistics.median(making):.1f}")


if __name__ == "__main__":
    main()
