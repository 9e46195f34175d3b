"""Hint latency: GET /tables/{id}/hint at the strong level (p50, p95), against a bare table read in
the same process, with the hint computed on a `hints` lane thread (the embedded worker's lane).

    python bench/hints.py           # in-process client, the database of the settings
    python bench/hints.py --served  # over HTTP: bench/load.py's stack (uvicorn, a Celery worker per
                                    # lane, `hints` among them, PostgreSQL and Redis of its own)
"""

from __future__ import annotations

import importlib.util
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# bench/graphql.py is named like the `graphql` package: keep this folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import override_settings, setup_test_environment  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from games import embedded  # noqa: E402
from games.infra import jobs  # noqa: E402

HINTS = int(os.environ.get("BENCH_PLAYS", "100"))  # hints asked (one per decision of a person)
LEVEL = "strong"


def in_process(token: str | None = None) -> Any:
    c = APIClient()
    if token:
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return c


client: Callable[..., Any] = in_process  # `--served`: an HTTP client of the served stack instead


class Game:
    """A 4-seat table of guests created with hints, played with random legal moves."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.tokens = [
            client().post("/api/v1/guests", {"name": f"h{i}"}, format="json").json()["token"]
            for i in range(4)
        ]
        r = client(self.tokens[0]).post("/api/v1/tables", {"hints": True}, format="json")
        assert r.status_code == 201, r.json()
        self.table = r.json()["id"]
        for token in self.tokens:
            client(token).post(f"/api/v1/tables/{self.table}/join", {}, format="json")
        self.seats = {
            client(t).get(f"/api/v1/tables/{self.table}").json()["your_seat"]: t for t in self.tokens
        }

    def seat_to_act(self) -> tuple[int, dict[str, Any]] | None:
        """The seat to act and its table body; None at the end."""
        body = client(self.tokens[0]).get(f"/api/v1/tables/{self.table}").json()
        if body["status"] == "finished":
            return None
        seat = self.rng.choice(body["game"]["to_act"])
        return seat, client(self.seats[seat]).get(f"/api/v1/tables/{self.table}").json()

    def act(self, seat: int, game: dict[str, Any]) -> None:
        legal = game["legal_actions"]
        if legal["type"] == "pass":
            action: dict[str, Any] = {"type": "pass", "cards": self.rng.sample(legal["from"], 3)}
        elif legal["type"] == "moon":
            action = {"type": "moon", "choice": "subtract"}
        else:
            action = {"type": "play", "card": self.rng.choice(legal["cards"])}
        r = client(self.seats[seat]).post(f"/api/v1/tables/{self.table}/actions", action, format="json")
        assert r.status_code == 200, r.json()


class Http:
    """The calls `Game` makes, over HTTP to a served stack (httpx, one kept connection)."""

    def __init__(self, http: Any, token: str | None) -> None:
        self.http, self.headers = http, {"Authorization": f"Bearer {token}"} if token else {}

    def get(self, url: str) -> Any:
        return self.http.get(url, headers=self.headers)

    def post(self, url: str, body: dict[str, Any], format: str = "json") -> Any:
        return self.http.post(url, json=body, headers=self.headers)


def served() -> None:
    """bench/load.py's stack, idle but for this client: the hint asked over HTTP, computed by the
    `hints` lane's Celery worker, on PostgreSQL."""
    import logging

    import httpx

    global client
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    # The stack's sessions weighed equal (load.py's AUTOGROUP_NICE): on an idle stack the weights
    # change nothing, and beside a busy test suite they would leave the hints lane no CPU.
    os.environ.setdefault("LOAD_AUTOGROUP_NICE", "0")
    spec = importlib.util.spec_from_file_location("hearts_bench_load", Path(__file__).with_name("load.py"))
    assert spec is not None and spec.loader is not None
    load = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = load  # its dataclasses look their module up
    spec.loader.exec_module(load)
    with tempfile.TemporaryDirectory() as tmp:
        stack = load.Stack(Path(tmp))
        try:
            stack.start()
            with httpx.Client(base_url=stack.base, timeout=30) as http:
                client = lambda token=None: Http(http, token)  # noqa: E731
                run()
        finally:
            stack.stop()


def main() -> None:
    if "--served" in sys.argv[1:]:
        served()
        return
    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)  # a killed run's is replaced
    jobs.run_here(embedded.hand)  # every task to its lane thread: the hint on the `hints` lane
    try:
        with override_settings(RATE_LIMITS_ENABLED=False, HINT_THINK_MS=30000):
            run()
    finally:
        jobs.run_here(None)
        connection.creation.destroy_test_db(old_name, verbosity=0)


def run() -> None:
    rng = random.Random(2026)
    game = Game(rng)
    hints: list[float] = []
    reads: list[float] = []
    while len(hints) < HINTS:
        step = game.seat_to_act()
        if step is None:
            game = Game(rng)
            continue
        seat, body = step
        if body["game"]["phase"] == "playing":
            token = game.seats[seat]
            start = time.perf_counter()
            r = client(token).get(f"/api/v1/tables/{game.table}/hint?level={LEVEL}")
            hints.append(time.perf_counter() - start)
            assert r.status_code == 200, r.json()
            start = time.perf_counter()  # the baseline: a bare read of the table, same process
            assert client(token).get(f"/api/v1/tables/{game.table}").status_code == 200
            reads.append(time.perf_counter() - start)
        game.act(seat, body["game"])
    p95 = statistics.quantiles(hints, n=20)[-1] if len(hints) > 1 else hints[0]
    print(f"hints_asked: {len(hints)}")
    print(f"hint_p50_ms: {statistics.median(hints) * 1000:.2f}")
    print(f"hint_p95_ms: {p95 * 1000:.2f}")
    print(f"read_p50_ms: {statistics.median(reads) * 1000:.2f}")
    print(f"hint_p50_vs_read_ratio: {statistics.median(hints) / statistics.median(reads):.2f}")


if __name__ == "__main__":
    main()
