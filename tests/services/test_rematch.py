"""Rematch: every person at a finished table asks for it; a new table starts, seats moved one place."""

from __future__ import annotations

import random
import threading

import pytest
from django.db import connection

from games.errors import ServiceError
from games.models import Move, Player, Table
from games.services import rematch, seat_join, table_create
from tests.api.test_exports import _finished_table

pytestmark = pytest.mark.django_db


def _people_and_bots() -> tuple[Table, list[Player]]:
    """A finished 4-seat game of four people."""
    table = _finished_table(4, "classic", seed=1)
    return table, [Player.objects.get(pk=s["player"]) for s in table.seating if s["player"]]


def test_a_rematch_starts_when_every_person_accepts_with_the_seats_rotated_one_place() -> None:
    table, people = _people_and_bots()
    first = rematch(table_id=table.pk, player=people[0]).table
    assert first is not None and first.rematch_votes == [people[0].pk]
    assert not Table.objects.filter(rematch_of=table).exists()
    proposed = Move.objects.filter(table=table, kind="rematch").get()
    assert [e[0] for e in proposed.events] == ["rematch_proposed"]

    again = rematch(table_id=table.pk, player=people[0]).table  # asking twice changes nothing
    assert again is not None and again.version == first.version

    for p in people[1:-1]:
        rematch(table_id=table.pk, player=p)
    assert not Table.objects.filter(rematch_of=table).exists()
    last = rematch(table_id=table.pk, player=people[-1]).table
    new = Table.objects.get(rematch_of=table)
    started = Move.objects.filter(table=table, kind="rematch").order_by("-seq").first()
    assert started is not None and started.events[-1][:2] == ["rematch_started", {"new_table": new.pk}]
    assert last is not None and last.status == Table.Status.FINISHED  # the old game is as it was

    assert new.options == table.options and new.clocks == table.clocks and new.app_id == table.app_id
    assert new.seed != table.seed
    assert new.status == Table.Status.PASSING  # every seat is taken: it started
    for old in table.seating:
        moved = new.seating[(old["position"] + 1) % 4]
        assert (moved["player"], moved["bot"]) == (old["player"], old["bot"])
    # once started, asking again changes nothing and makes no second table
    assert rematch(table_id=table.pk, player=people[0]).table.version == last.version
    assert Table.objects.filter(rematch_of=table).count() == 1


def test_bots_accept_by_themselves() -> None:
    table = table_create(
        options={"players": 4, "target_score": 50}, bots={1: "basic", 2: "basic", 3: "random"}
    ).table
    person = Player.objects.create(name="solo")
    seat_join(table_id=table.pk, player=person)
    table.refresh_from_db()
    # play the person's seat at random to the end (the bots play themselves in process)
    from games.engine import state_from_dict
    from games.services import action_submit, bots_play

    rng = random.Random(4)
    while True:
        table.refresh_from_db()
        if table.status == Table.Status.FINISHED:
            break
        state = state_from_dict(table.state)
        if 0 not in state.to_act():  # the bots' moves run after each commit (tasks in process)
            bots_play(table_id=table.pk, version=table.version)
            continue
        action = rng.choice(state.legal_actions(0)).to_dict()
        action_submit(table_id=table.pk, player=person, action=action)
    rematch(table_id=table.pk, player=person)
    new = Table.objects.get(rematch_of=table)
    assert [s["bot"] for s in new.seating] == ["random", None, "basic", "basic"]
    assert new.seating[1]["player"] == person.pk


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
def test_only_a_seated_player_of_a_finished_game_can_ask() -> None:
    table, people = _people_and_bots()
    outsider = Player.objects.create(name="outsider")
    with pytest.raises(ServiceError) as refused:
        rematch(table_id=table.pk, player=outsider)
    assert refused.value.code == "not_seated"
    running = table_create(options={"players": 4}, bots={1: "basic", 2: "basic", 3: "basic"}).table
    seat_join(table_id=running.pk, player=people[0])
    with pytest.raises(ServiceError) as early:
        rematch(table_id=running.pk, player=people[0])
    assert early.value.code == "not_finished"


@pytest.mark.django_db(transaction=True)
def test_the_last_two_players_accepting_at_once_start_exactly_one_rematch() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("racing transactions need PostgreSQL's row locks (SQLite serialises the whole database)")
    table, people = _people_and_bots()
    for p in people[:-2]:
        rematch(table_id=table.pk, player=p)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def accept(player: Player) -> None:
        try:
            barrier.wait()
            rematch(table_id=table.pk, player=player)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=accept, args=(p,)) for p in people[-2:]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert Table.objects.filter(rematch_of=table).count() == 1
    assert sorted(Table.objects.get(pk=table.pk).rematch_votes) == sorted(p.pk for p in people)


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
def test_rematch_over_rest_and_graphql_with_its_events() -> None:
    from rest_framework.test import APIClient

    from games import accounts
    from tests.graphql.test_graphql import gql

    table = table_create(options={"players": 4, "target_score": 50}, bots={1: "basic", 3: "basic"}).table
    people = []
    for name in ("ana", "bo"):
        player, token = accounts.player_create(app=None, name=name)
        seat_join(table_id=table.pk, player=player)
        people.append((player, token))
    from games.engine import state_from_dict
    from games.services import action_submit, bots_play

    rng = random.Random(9)
    while True:
        table.refresh_from_db()
        if table.status == Table.Status.FINISHED:
            break
        state = state_from_dict(table.state)
        mine = [s for s in state.to_act() if table.seating[s]["player"] is not None]
        if not mine:
            bots_play(table_id=table.pk, version=table.version)
            continue
        action = rng.choice(state.legal_actions(mine[0])).to_dict()
        action_submit(table_id=table.pk, position=mine[0], action=action)

    rest = APIClient()
    rest.credentials(HTTP_AUTHORIZATION=f"Bearer {people[0][1]}")
    asked = rest.post(f"/api/v1/tables/{table.pk}/rematch", {}, format="json")
    assert asked.status_code == 200, asked.json()
    assert asked.json()["rematch"] == {"asked": [0], "table": None}
    assert asked.json()["rematch_of"] is None

    payload = gql(
        "mutation($t: Int!) { rematch(tableId: $t) { errors { code } table { rematch { asked table } } } }",
        people[1][1],
        t=table.pk,
    )["data"]["rematch"]
    assert payload["errors"] == []
    new_id = payload["table"]["rematch"]["table"]
    assert payload["table"]["rematch"]["asked"] == [0, 2] and new_id is not None
    new = rest.get(f"/api/v1/tables/{new_id}").json()
    assert new["rematch_of"] == table.pk and new["your_seat"] == 1  # ana moved from seat 0 to 1
    events = rest.get(f"/api/v1/tables/{table.pk}/events?after={asked.json()['version'] - 1}").json()[
        "events"
    ]
    assert [e["type"] for e in events] == ["rematch_proposed", "rematch_accepted", "rematch_started"]
    assert events[-1]["new_table"] == new_id
    outsider = APIClient()
    outsider.credentials(HTTP_AUTHORIZATION=f"Bearer {accounts.player_create(app=None, name='x')[1]}")
    refused = outsider.post(f"/api/v1/tables/{table.pk}/rematch", {}, format="json")
    assert refused.status_code == 422 and refused.json()["code"] == "not_seated"
