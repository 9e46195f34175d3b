"""Counting a request against its rate limits: one round trip for the token's and the app's windows
(games.infra.ratelimit) against the two pipelined round trips it made before, same process."""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

# bench/graphql.py is named like the `graphql` package: keep this folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")
# The machine's Redis, database 15, unless REDIS_URL names another: the windows counted are deleted.
os.environ["REDIS_URL"] = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/15"
os.environ["RATE_LIMITS_ENABLED"] = "true"

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from games.accounts import Principal  # noqa: E402
from games.infra import ratelimit  # noqa: E402
from games.infra.notify import shared_redis  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
REQUESTS = int(os.environ.get("BENCH_PLAYS", "200")) * 10  # per round and way
# High enough that no request of the run is refused: the cost of counting, not of refusing.
settings.RATE_LIMITS = {"token": "1000000000/day", "app": "1000000000/day", "address": "1000/day"}
PRINCIPAL = Principal(app=SimpleNamespace(pk=1), player=SimpleNamespace(pk=1), credential="bench-ratelimit")  # type: ignore[arg-type]


def two_trips(principal: Principal) -> tuple[ratelimit.Quota, ...]:
    """check_principal as it was before stop 57: the settings' rates parsed on every request, the
    token's window counted (INCR and EXPIRE NX in one pipeline), then, under its limit, the app's in
    a second pipeline."""
    client = shared_redis()
    assert client is not None
    rates = {name: ratelimit.Rate.parse(text) for name, text in settings.RATE_LIMITS.items()}
    now = time.time()
    quotas: tuple[ratelimit.Quota, ...] = ()
    for limit, ident in (("token", principal.credential), ("app", str(principal.app.pk))):  # type: ignore[union-attr]
        rate = rates[limit]
        window = int(now // rate.seconds)
        left = max(1, int((window + 1) * rate.seconds - now + 0.999))
        key = f"hearts:rl:{limit}:{ident}:{window}"
        with client.pipeline(transaction=False) as pipe:
            pipe.incr(key)
            pipe.expire(key, rate.seconds + 1, nx=True)
            count, _ = pipe.execute()
        quota = ratelimit.Quota(limit, rate, max(0, rate.count - int(count)), left)
        if int(count) > rate.count:
            raise ratelimit.RateLimited(limit, rate, left, (*quotas, quota))
        quotas = (*quotas, quota)
    return quotas


def cpu_us(way: str) -> float:
    count = ratelimit.check_principal if way == "one" else two_trips
    count(PRINCIPAL)  # connected, the script loaded
    start = time.process_time()
    for _ in range(REQUESTS):
        count(PRINCIPAL)
    return (time.process_time() - start) / REQUESTS * 1e6


def main() -> None:
    one, two = [], []
    for _ in range(ROUNDS):  # alternated, so that a noisy moment weighs on both
        one.append(cpu_us("one"))
        two.append(cpu_us("two"))
    client = shared_redis()
    assert client is not None
    for key in client.scan_iter("hearts:rl:*bench-ratelimit*"):
        client.delete(key)
    for key in client.scan_iter("hearts:rl:app:1:*"):
        client.delete(key)
    print(f"ratelimit_cpu_us_one_trip: {statistics.median(one):.1f}")
    print(f"ratelimit_cpu_us_two_trips: {statistics.median(two):.1f}")
    print(f"ratelimit_one_vs_two_trips_ratio: {statistics.median(one) / statistics.median(two):.2f}")


if __name__ == "__main__":
    main()
