"""GraphQL play cost: the playCard mutation against a bare graphene mutation locking and updating one row."""

from __future__ import annotations

import importlib.util
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

# This file is named like the `graphql` package: keep its folder off the import path.
BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH]
sys.path.insert(0, str(BENCH.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")

import django  # noqa: E402

django.setup()

import graphene  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, override_settings, setup_test_environment  # noqa: E402
from django.urls import include, path  # noqa: E402

from games.graphql.view import HeartsGraphQLView  # noqa: E402
from games.models import Table  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_api", BENCH / "api.py")
assert _spec is not None and _spec.loader is not None
bench_api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_api)
Game = bench_api.Game

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
PLAYS_PER_ROUND = int(os.environ.get("BENCH_PLAYS", "100"))


class Bump(graphene.Mutation):
    """The baseline: lock one table row, bump its version, answer the version."""

    class Arguments:
        table_id = graphene.Int(required=True)

    version = graphene.Int()

    def mutate(root: Any, info: Any, table_id: int) -> Bump:
        with transaction.atomic():
            table = Table.objects.select_for_update().get(pk=table_id)
            table.version += 1
            table.save(update_fields=["version"])
        return Bump(version=table.version)


class BareMutation(graphene.ObjectType):
    bump = Bump.Field()


class BareQuery(graphene.ObjectType):
    ok = graphene.Boolean()


bare_schema = graphene.Schema(query=BareQuery, mutation=BareMutation)

urlpatterns = [
    path("api/v1/", include("games.api.urls")),
    path("graphql/", HeartsGraphQLView.as_view(graphiql=False)),
    path("bare-graphql/", HeartsGraphQLView.as_view(schema=bare_schema, graphiql=False)),
]

PLAY = """mutation($t: Int!, $c: String!) { playCard(tableId: $t, card: $c) {
  table { version status game { hand trick { seat card } legalActions { cards } toAct } }
  errors { code } } }"""
BARE = "mutation($t: Int!) { bump(tableId: $t) { version } }"


def post(token: str, url: str, query: str, **variables: Any) -> dict[str, Any]:
    r = Client().post(
        url,
        {"query": query, "variables": variables},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert r.status_code == 200, r.content
    body = r.json()
    assert "errors" not in body, body
    return body


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
    plays: list[float] = []
    bares: list[float] = []
    queries: list[int] = []
    ratios: list[float] = []
    for _ in range(ROUNDS):
        round_plays: list[float] = []
        round_bares: list[float] = []
        while len(round_plays) < PLAYS_PER_ROUND:
            step = game.next_request()
            if step is None:
                game = Game(rng)
                continue
            who, action, is_play = step
            if not is_play:  # passes and moon choices go through REST, untimed
                r = who.post(f"/api/v1/tables/{game.table}/actions", action, format="json")
                assert r.status_code == 200
                continue
            token = who._credentials["HTTP_AUTHORIZATION"].split()[1]
            with CaptureQueriesContext(connection) as captured:
                start = time.perf_counter()
                body = post(token, "/graphql/", PLAY, t=game.table, c=action["card"])
                round_plays.append(time.perf_counter() - start)
            assert body["data"]["playCard"]["errors"] == [], body
            queries.append(len(captured))
            # The baseline, interleaved call by call so that noise hits both alike.
            start = time.perf_counter()
            post(token, "/bare-graphql/", BARE, t=game.table)
            round_bares.append(time.perf_counter() - start)
        plays += round_plays
        bares += round_bares
        ratios.append(statistics.median(round_plays) / statistics.median(round_bares))
    print(f"graphql_play_ms: {statistics.median(plays) * 1000:.2f}")
    print(f"graphql_bare_mutation_ms: {statistics.median(bares) * 1000:.2f}")
    print(f"graphql_play_vs_bare_ratio: {statistics.median(ratios):.2f}")
    print(f"graphql_queries_per_play: {statistics.median(queries):.0f}")


if __name__ == "__main__":
    main()
