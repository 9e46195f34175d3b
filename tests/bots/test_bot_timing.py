"""A table's bots' thinking time and pace (games/bot_timing.py): set at creation over REST and
GraphQL, checked, shown on the table; the pace's default follows the seats; with no thinking
time, bots replay a seed exactly; with one, they are given it. (Real timings of the pace, with
workers: tests/bots/test_bot_pace_workers.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from games import services
from games.errors import ServiceError
from games.models import Move, Table
from games.services import botturns, play
from tests.api.test_api import client, guest
from tests.graphql.test_graphql import gql, ok

pytestmark = pytest.mark.django_db(transaction=True)  # on_commit hooks fire: bots play


def test_both_options_are_set_at_creation_and_shown_apart_from_the_clocks() -> None:
    _, token = guest("ada")
    r = client(token).post(
        "/api/v1/tables",
        {"bots": {"1": "expert"}, "clocks": {"play": 20}, "bot_think_ms": 250, "bot_pace_ms": 1200},
        format="json",
    )
    assert r.status_code == 201, r.content
    body = r.json()
    assert (body["bot_think_ms"], body["bot_pace_ms"]) == (250, 1200)
    assert body["clocks"] == {"pass": 60, "play": 20, "moon": 30, "away_after": 2}
    again = client(token).get(f"/api/v1/tables/{body['id']}").json()
    assert (again["bot_think_ms"], again["bot_pace_ms"]) == (250, 1200)
    made = ok(
        "mutation { createTable(botThinkMs: 10, botPaceMs: 0) "
        "{ table { id botThinkMs botPaceMs clocks { play } } errors { code } } }",
        token,
    )["table"]
    assert (made["botThinkMs"], made["botPaceMs"], made["clocks"]["play"]) == (10, 0, 30)


def test_out_of_bounds_values_are_refused_with_the_field_and_create_nothing() -> None:
    _, token = guest("ada")
    for field, bad in (
        ("bot_think_ms", 9),
        ("bot_think_ms", 5001),
        ("bot_think_ms", "100"),
        ("bot_pace_ms", -1),
        ("bot_pace_ms", 2001),
        ("bot_pace_ms", 1.5),
    ):
        r = client(token).post("/api/v1/tables", {field: bad}, format="json")
        assert (r.status_code, r.json()["code"]) == (400, "invalid_input"), (field, bad)
        assert field in str(r.json()), r.json()
    for kwargs in ({"bot_think_ms": 0}, {"bot_pace_ms": 2500}, {"bot_think_ms": True}):
        with pytest.raises(ServiceError) as refused:
            services.table_create(**kwargs)
        assert refused.value.code == "invalid_input"
        assert refused.value.details["field"] == next(iter(kwargs))
    refused_gql = gql(
        "mutation { createTable(botPaceMs: 5000) { table { id } errors { code field } } }", token
    )["data"]["createTable"]
    assert refused_gql["table"] is None and refused_gql["errors"][0]["code"] == "invalid_input"
    assert Table.objects.count() == 0


def test_by_default_a_table_with_a_person_is_paced_by_the_setting_and_a_bot_only_table_is_not(
    settings: Any,
) -> None:
    settings.BOT_PACE_MS = 700
    _, token = guest("ada")
    waiting = client(token).post("/api/v1/tables", {"bots": {"1": "basic"}}, format="json").json()
    assert waiting["bot_pace_ms"] == 0 and waiting["bot_think_ms"] is None  # nobody sits there yet
    seated = client(token).post(f"/api/v1/tables/{waiting['id']}/join", {}, format="json").json()
    assert seated["bot_pace_ms"] == 700
    bots_only = services.table_create(options={"target_score": 50}, bots=dict.fromkeys(range(4), "basic"))
    assert bots_only.table is not None
    shown = client(token).get(f"/api/v1/tables/{bots_only.table.pk}").json()
    assert shown["bot_pace_ms"] == 0 and shown["status"] == "finished"  # it played straight through
    asked = services.table_create(bots={1: "basic"}, bot_pace_ms=300).table
    assert asked is not None
    assert client(token).get(f"/api/v1/tables/{asked.pk}").json()["bot_pace_ms"] == 300


def _moves(table_id: int) -> list[tuple[str, int | None, dict[str, Any]]]:
    moves = Move.objects.filter(table_id=table_id).order_by("seq")
    return list(moves.values_list("kind", "position", "payload"))


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
def test_with_no_thinking_time_the_same_seed_plays_the_same_game(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixed budgets: strong and expert bots make the same decisions for the same seed."""
    monkeypatch.setenv("HEARTS_EXPERT_ITERATIONS", "30")  # a smaller fixed budget: a faster test
    levels = {0: "strong", 1: "expert", 2: "basic", 3: "basic"}
    tables = []
    for _ in range(2):
        out = services.table_create(options={"target_score": 50}, bots=levels, seed="same-seed")
        assert out.table is not None
        tables.append(Table.objects.get(pk=out.table.pk))
    assert all(t.status == Table.Status.FINISHED for t in tables)
    first, second = (_moves(t.pk) for t in tables)
    assert len(first) > 52 and first == second


def test_the_bots_are_given_the_tables_thinking_time(monkeypatch: pytest.MonkeyPatch) -> None:
    given: list[int | None] = []
    real = play.decide

    def spying(view: dict[str, Any], level: str, rng: Any, think_ms: int | None = None) -> dict[str, Any]:
        given.append(think_ms)
        return real(view, level, rng, think_ms=think_ms)

    monkeypatch.setattr(play, "decide", spying)
    monkeypatch.setattr(botturns, "decide", spying)  # where a thinking bot decides, before the lock
    timed = services.table_create(
        options={"target_score": 50}, bots={0: "strong", 1: "basic", 2: "strong", 3: "basic"}, bot_think_ms=15
    )
    assert timed.table is not None and Table.objects.get(pk=timed.table.pk).status == "finished"
    assert given and set(given) == {15}
    given.clear()
    services.table_create(options={"target_score": 50}, bots=dict.fromkeys(range(4), "basic"))
    assert given and set(given) == {None}
