"""REST play cost: POST /actions (a play) against a bare DRF endpoint that locks and updates one row."""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

# bench/graphql.py is named like the `graphql` package: keep this folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")

import django  # noqa: E402

django.setup()

from django.db import connection, transaction  # noqa: E402
from django.test.utils import CaptureQueriesContext, override_settings, setup_test_environment  # noqa: E402
from django.urls import include, path  # noqa: E402
from rest_framework.request import Request  # noqa: E402
from rest_framework.response import Response  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402
from rest_framework.views import APIView  # noqa: E402

from games.models import Table  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
PLAYS_PER_ROUND = int(os.environ.get("BENCH_PLAYS", "100"))


class BareWrite(APIView):
    """The baseline: authenticate like the API does, lock one row, update it, answer JSON."""

    def post(self, request: Request, table_id: int) -> Response:
        with transaction.atomic():
            table = Table.objects.select_for_update().get(pk=table_id)
            table.version += 1
            table.save(update_fields=["version"])
        return Response({"version": table.version})


urlpatterns = [
    path("api/v1/", include("games.api.urls")),
    path("bare/<int:table_id>", BareWrite.as_view()),
]


def client(token: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return c


class Game:
    """A 4-seat table of guests, played to its play phase; `next_play` is a legal play request."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.tokens = [
            APIClient().post("/api/v1/guests", {"name": f"b{i}"}, format="json").json()["token"]
            for i in range(4)
        ]
        self.table = (
            client(self.tokens[0]).post("/api/v1/tables", {"options": {}}, format="json").json()["id"]
        )
        for token in self.tokens:
            client(token).post(f"/api/v1/tables/{self.table}/join", {}, format="json")
        self.seats = {
            client(t).get(f"/api/v1/tables/{self.table}").json()["your_seat"]: t for t in self.tokens
        }

    def next_request(self) -> tuple[APIClient, dict[str, Any], bool] | None:
        """The client and body of the next action, and whether it is a play; None at the end."""
        body = client(self.tokens[0]).get(f"/api/v1/tables/{self.table}").json()
        if body["status"] == "finished":
            return None
        seat = self.rng.choice(body["game"]["to_act"])
        legal = client(self.seats[seat]).get(f"/api/v1/tables/{self.table}").json()["game"]["legal_actions"]
        if legal["type"] == "pass":
            return client(self.seats[seat]), {"type": "pass", "cards": legal["from"][:3]}, False
        if legal["type"] == "moon":
            return client(self.seats[seat]), {"type": "moon", "choice": "subtract"}, False
        return client(self.seats[seat]), {"type": "play", "card": self.rng.choice(legal["cards"])}, True


def main() -> None:
    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)  # a killed run's is replaced
    try:
        # Rate limits off: they count per token, and this makes hundreds of requests a second from
        # one token to the bare endpoint (a player's own-turn play is never limited anyway).
        with override_settings(ROOT_URLCONF=__name__, RATE_LIMITS_ENABLED=False):
            run()
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


def run() -> None:
    rng = random.Random(2026)
    game = Game(rng)
    bare_token = game.tokens[0]
    play_times: list[float] = []
    bare_times: list[float] = []
    queries: list[int] = []
    keyed_queries: list[int] = []
    keyed_times: list[float] = []
    ratios: list[float] = []
    serial = 0
    for _ in range(ROUNDS):
        plays: list[float] = []
        bares: list[float] = []
        while len(plays) < PLAYS_PER_ROUND:
            step = game.next_request()
            if step is None:
                game = Game(rng)
                continue
            who, action, is_play = step
            serial += 1
            # Every third play carries an Idempotency-Key (its answer is stored with the move).
            headers = {"HTTP_IDEMPOTENCY_KEY": f"k{serial}"} if serial % 3 == 0 else {}
            with CaptureQueriesContext(connection) as captured:
                start = time.perf_counter()
                r = who.post(f"/api/v1/tables/{game.table}/actions", action, format="json", **headers)
                elapsed = time.perf_counter() - start
            assert r.status_code == 200, r.json()
            if not is_play:
                continue
            if headers:
                keyed_times.append(elapsed)
                keyed_queries.append(len(captured))
                continue
            plays.append(elapsed)
            queries.append(len(captured))
            # The baseline, interleaved call by call so that noise hits both alike.
            start = time.perf_counter()
            r = client(bare_token).post(f"/bare/{game.table}", {}, format="json")
            bares.append(time.perf_counter() - start)
            assert r.status_code == 200
        play_times += plays
        bare_times += bares
        ratios.append(statistics.median(plays) / statistics.median(bares))
    print(f"play_ms: {statistics.median(play_times) * 1000:.2f}")
    print(f"bare_write_ms: {statistics.median(bare_times) * 1000:.2f}")
    print(f"play_vs_bare_write_ratio: {statistics.median(ratios):.2f}")
    print(f"queries_per_play: {statistics.median(queries):.0f}")
    keyed_ratio = statistics.median(keyed_times) / statistics.median(bare_times)
    print(f"keyed_play_vs_bare_write_ratio: {keyed_ratio:.2f}")
    print(f"queries_per_keyed_play: {statistics.median(keyed_queries):.0f}")


if __name__ == "__main__":
    main()
