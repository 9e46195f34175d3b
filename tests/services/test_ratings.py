"""Ratings: rated games move people's ratings (against bots' fixed ones), unrated and abandoned
tables move nothing, seats away at the end are placed last, racing finishes lose no update, and
the replay recomputes every stored rating exactly."""

from __future__ import annotations

import datetime as dt
import random
import threading

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from games.engine import state_from_dict
from games.errors import ServiceError
from games.models import Player, Rating, RatingChange, Table
from games.ratings import BOT_RATINGS, MU, SIGMA, history, leaderboard, ratings_of
from games.services import action_submit, clock_expired, seat_join, table_abandon, table_create
from games.services.ratings import places
from games.services.ratings_replay import ratings_replay

pytestmark = pytest.mark.django_db


def _table(people: list[Player], bots: dict[int, str] | None = None, *, rated: bool = True) -> Table:
    table = table_create(
        options={"players": 4, "target_score": 50}, bots=bots or {}, rated=rated, clocks={"away_after": 2}
    ).table
    assert table is not None
    for p in people:
        seat_join(table_id=table.pk, player=p)
    table.refresh_from_db()
    return table


def _finish(table: Table, rng: random.Random) -> Table:
    """Every seat the game waits for plays a random legal action (bots' and away seats' moves
    made as the server makes them: for the seat, not as its player)."""
    while True:
        table.refresh_from_db()
        if table.status == Table.Status.FINISHED:
            return table
        state = state_from_dict(table.state)
        seat = rng.choice(state.to_act())
        action = rng.choice(state.legal_actions(seat)).to_dict()
        action_submit(table_id=table.pk, position=seat, action=action)


def _people(n: int) -> list[Player]:
    return [Player.objects.create(name=f"p{i}") for i in range(n)]


def test_places_follow_the_totals_with_ties_shared_and_away_seats_last() -> None:
    assert places([40, 12, 40, 99], [False] * 4) == [2, 1, 2, 4]
    assert places([40, 12, 40, 99], [False, True, False, False]) == [1, 4, 1, 3]
    assert places([5, 6, 7], [True, False, True]) == [2, 1, 2]


def test_a_rated_game_against_bots_moves_the_people_and_never_the_bots() -> None:
    ada, bob = _people(2)
    table = _finish(_table([ada, bob], {2: "basic", 3: "strong"}), random.Random(1))
    totals = state_from_dict(table.state).totals
    changes = {c.player_id: c for c in RatingChange.objects.filter(table=table)}
    assert set(changes) == {ada.pk, bob.pk}
    for player in (ada, bob):
        change, rating = changes[player.pk], Rating.objects.get(player=player, family="classic-4")
        seat = table.seat_of(player.pk)
        assert change.place == 1 + sum(1 for t in totals if t < totals[seat])
        assert (change.mu_before, change.sigma_before) == (MU, SIGMA)
        assert (rating.mu, rating.sigma, rating.games) == (change.mu_after, change.sigma_after, 1)
        assert rating.sigma < SIGMA  # one game taught the system something
        assert rating.score == rating.mu - 3 * rating.sigma
    # The better placed person gains more than the worse placed one.
    best, worst = sorted((ada, bob), key=lambda p: changes[p.pk].place)
    if changes[best.pk].place < changes[worst.pk].place:
        assert changes[best.pk].mu_after - MU > changes[worst.pk].mu_after - MU
    assert (BOT_RATINGS["basic"].mu, BOT_RATINGS["strong"].mu) == (25.0, 42.0)  # published, fixed
    # The game over's move says what changed, publicly, with the other events.
    event = next(e for m in table.moves.all() for e in m.events if e[0] == "ratings_changed")
    assert event[2] is None
    assert event[1]["family"] == "classic-4"
    assert {c["seat"]: (c["mu"], c["sigma"], c["place"]) for c in event[1]["changes"]} == {
        c.position: (c.mu_after, c.sigma_after, c.place) for c in changes.values()
    }


def test_an_unrated_table_changes_no_rating() -> None:
    people = _people(4)
    table = _finish(_table(people, rated=False), random.Random(2))
    assert table.status == Table.Status.FINISHED
    assert not Rating.objects.exists() and not RatingChange.objects.exists()
    assert not any(e[0] == "ratings_changed" for m in table.moves.all() for e in m.events)


def test_an_abandoned_rated_table_changes_no_rating() -> None:
    people = _people(4)
    table = _table(people)
    table_abandon(table_id=table.pk)
    table.refresh_from_db()
    assert table.status == Table.Status.ABANDONED
    assert not Rating.objects.exists() and not RatingChange.objects.exists()


def test_a_seat_away_when_the_game_ends_is_placed_last() -> None:
    ada, bob = _people(2)
    table = _table([ada, bob], {2: "basic", 3: "basic"})
    away_seat = table.seat_of(bob.pk)
    assert away_seat is not None
    # Bob's clock runs out twice in a row: his seat is marked away and the server plays it.
    later = timezone.now() + dt.timedelta(days=1)
    while not Table.objects.get(pk=table.pk).seating[away_seat]["away"]:
        table.refresh_from_db()
        state = state_from_dict(table.state)
        if away_seat in state.to_act():
            clock_expired(table_id=table.pk, now=later)
            later += dt.timedelta(days=1)
        else:
            seat = state.to_act()[0]
            action_submit(table_id=table.pk, position=seat, action=state.legal_actions(seat)[0].to_dict())
    table = _finish(table, random.Random(3))
    assert table.seating[away_seat]["away"]
    assert RatingChange.objects.get(table=table, player=bob).place == 4
    totals = state_from_dict(table.state).totals
    present = [t for s, t in enumerate(totals) if s != away_seat]
    ada_seat = table.seat_of(ada.pk)
    assert ada_seat is not None
    expected = 1 + sum(1 for t in present if t < totals[ada_seat])
    assert RatingChange.objects.get(table=table, player=ada).place == expected
    assert ratings_replay() == (1, [])


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
def test_history_and_leaderboard_read_what_the_games_did() -> None:
    people = _people(4)
    first = _finish(_table(people), random.Random(4))
    second = _finish(_table(people), random.Random(5))
    ada = people[0]
    changes = list(history(None, ada.pk))
    assert [c.table_id for c in changes] == [second.pk, first.pk]  # newest first
    assert changes[0].mu_before == changes[1].mu_after  # the second game starts where the first ended
    body = ratings_of(None, ada.pk)
    assert [(r["family"], r["games"]) for r in body["ratings"]] == [("classic-4", 2)]
    board = list(leaderboard(None, "classic-4"))
    assert len(board) == 4
    assert [r.score for r in board] == sorted((r.score for r in board), reverse=True)
    with pytest.raises(ServiceError) as caught:
        list(leaderboard(None, "classic-11"))
    assert caught.value.code == "invalid_filter"
    with pytest.raises(ServiceError) as missing:
        ratings_of(None, 10**12)
    assert missing.value.code == "not_found"
    with pytest.raises(ServiceError) as bad:
        table_create(rated="yes")  # type: ignore[arg-type]
    assert bad.value.code == "invalid_input"


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
def test_the_replay_recomputes_every_rating_exactly_and_catches_a_changed_one() -> None:
    people = _people(5)
    for n, seats in enumerate([people[:4], people[1:], [people[0], people[2]]]):
        bots = dict.fromkeys(range(len(seats), 4), "expert")
        _finish(_table(seats, bots), random.Random(10 + n))
    assert ratings_replay() == (3, [])
    call_command("ratings_replay")
    Rating.objects.filter(player=people[2]).update(mu=30.0)
    games, problems = ratings_replay()
    assert games == 3 and len(problems) == 1 and f"player {people[2].pk}" in problems[0]
    with pytest.raises(CommandError):
        call_command("ratings_replay")


@pytest.mark.needs_postgres
@pytest.mark.django_db(transaction=True)
def test_two_tables_with_the_same_players_finishing_at_once_lose_no_update() -> None:
    people = _people(4)
    # A first game gives them rating rows (else the two inserts of new rows would already queue
    # the second game behind the first, and the row locks would go untested).
    _finish(_table(people), random.Random(19))
    tables = [_table(people) for _ in range(2)]
    # Play both up to the last action of the game, then make both last actions at the same moment.
    last: list[tuple[int, dict[str, object]]] = []
    for n, table in enumerate(tables):
        rng = random.Random(20 + n)
        while True:
            table.refresh_from_db()
            state = state_from_dict(table.state)
            seat = rng.choice(state.to_act())
            action = rng.choice(state.legal_actions(seat))
            probe = state_from_dict(table.state)
            probe.push(seat, action)
            if probe.is_over:
                last.append((seat, action.to_dict()))
                break
            action_submit(table_id=table.pk, position=seat, action=action.to_dict())
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def finish(table: Table, seat: int, action: dict[str, object]) -> None:
        barrier.wait()
        try:
            action_submit(table_id=table.pk, position=seat, action=action)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=finish, args=(t, seat, action))
        for t, (seat, action) in zip(tables, last, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for player in people:
        rating = Rating.objects.get(player=player)
        assert rating.games == 3
        _, first, second = RatingChange.objects.filter(player=player).order_by("id")
        assert (second.mu_before, second.sigma_before) == (first.mu_after, first.sigma_after)
        assert (rating.mu, rating.sigma) == (second.mu_after, second.sigma_after)
    assert ratings_replay() == (3, [])
