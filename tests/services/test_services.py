"""The single write path: whole games through games.services, versions, idempotency, races, replay."""

from __future__ import annotations

import json
import random
import threading

import pytest
from django.db import connection

from games import services
from games.engine import state_from_dict, state_to_dict
from games.errors import ServiceError
from games.models import Hand, Move, Player, ScoreRow, Table
from games.services import action_submit, bot_add, seat_join, seat_leave, table_create

pytestmark = pytest.mark.django_db


def _players(n: int) -> list[Player]:
    return [Player.objects.create(name=f"p{i}") for i in range(n)]


def _full_table(players: int = 4, **options: object) -> Table:
    table = table_create(options={"players": players, **options}).table
    for p in _players(players):
        seat_join(table_id=table.pk, player=p)
    table.refresh_from_db()
    return table


def _play_to_the_end(table: Table, rng: random.Random) -> Table:
    """Scripted clients: every seat the game waits for submits a random legal action."""
    while True:
        table.refresh_from_db()
        if table.status == Table.Status.FINISHED:
            return table
        state = state_from_dict(table.state)
        seat = rng.choice(state.to_act())
        action = rng.choice(state.legal_actions(seat)).to_dict()
        action_submit(table_id=table.pk, position=seat, action=action, expected_version=table.version)


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
@pytest.mark.parametrize(
    ("players", "variant"),
    [(3, "classic"), (4, "classic"), (5, "omnibus"), (6, "classic"), (7, "omnibus"), (6, "cancellation")],
)
def test_whole_game_through_services_is_stored_and_replays_exactly(players: int, variant: str) -> None:
    table = _play_to_the_end(_full_table(players, variant=variant, target_score=50), random.Random(players))
    state = state_from_dict(table.state)
    assert state.is_over and table.status == Table.Status.FINISHED
    # Replaying the deal and the move log rebuilds the stored state exactly.
    assert state_to_dict(services.table_replay(table)) == table.state
    # One version per logged move, numbered without gaps.
    assert list(table.moves.values_list("seq", flat=True)) == list(range(1, table.version + 1))
    # The scoresheet rows match the engine's running totals, hand by hand.
    for row in state.sheet:
        stored = ScoreRow.objects.filter(table=table, hand_number=row["hand"]).order_by("position")
        assert [r.points for r in stored] == row["points"]
        assert [r.total for r in stored] == row["totals"]
    assert Hand.objects.filter(table=table, finished=True).count() == len(state.sheet) == table.hand_number


def test_game_starts_when_the_last_seat_is_taken() -> None:
    table = table_create(options={"players": 4}, bots={0: "random", 2: "random"}).table
    a, b = _players(2)
    seat_join(table_id=table.pk, player=a)
    table.refresh_from_db()
    assert table.status == Table.Status.OPEN and table.state is None
    seat_join(table_id=table.pk, player=b)
    table.refresh_from_db()
    assert table.status == Table.Status.PASSING
    assert table.moves.last().kind == Move.Kind.START


def test_stale_version_is_refused_and_changes_nothing() -> None:
    table = _full_table(4, target_score=50)
    state = state_from_dict(table.state)
    action = state.legal_actions(0)[0].to_dict()
    with pytest.raises(ServiceError) as info:
        action_submit(table_id=table.pk, position=0, action=action, expected_version=table.version - 1)
    assert info.value.code == "stale_version" and info.value.kind == "conflict"
    assert info.value.details["version"] == table.version
    fresh = Table.objects.get(pk=table.pk)
    assert (fresh.version, fresh.state) == (table.version, table.state)


def test_simultaneous_passes_with_the_same_version_never_reject_each_other() -> None:
    table = _full_table(4)
    state = state_from_dict(table.state)
    seen = table.version
    for seat in range(4):
        action = state.legal_actions(seat)[0].to_dict()
        action_submit(table_id=table.pk, position=seat, action=action, expected_version=seen)
    table.refresh_from_db()
    assert table.status == Table.Status.PLAYING and table.version == seen + 4


def _key(key: str, owner: str = "player:1") -> services.Idempotency:
    """An idempotency key whose stored answer is the table version the request produced."""

    def render(out: services.Outcome) -> tuple[int, str]:
        assert out.table is not None
        return 200, json.dumps({"version": out.table.version})

    return services.Idempotency(owner, key, f"fp-{key}", render)


def test_repeated_idempotency_key_applies_once_and_a_different_request_is_refused() -> None:
    table = _full_table(4)
    state = state_from_dict(table.state)
    first, other = state.legal_actions(1)[0].to_dict(), state.legal_actions(1)[1].to_dict()
    done = action_submit(table_id=table.pk, position=1, action=first, idempotency=_key("k-1"))
    again = action_submit(table_id=table.pk, position=1, action=first, idempotency=_key("k-1"))
    assert not done.replayed and again.replayed
    assert again.response == done.response == (200, json.dumps({"version": table.version + 1}))
    assert Move.objects.filter(table=table, kind=Move.Kind.PASS).count() == 1
    changed = services.Idempotency("player:1", "k-1", "fp-other", _key("k-1").render)
    with pytest.raises(ServiceError) as info:
        action_submit(table_id=table.pk, position=1, action=other, idempotency=changed)
    assert info.value.code == "idempotency_key_reused"
    # The same key from someone else is another key.
    own = state.legal_actions(2)[0].to_dict()
    fresh = action_submit(table_id=table.pk, position=2, action=own, idempotency=_key("k-1", "player:2"))
    assert not fresh.replayed


def test_a_retried_table_creation_creates_one_table() -> None:
    first = table_create(options={"players": 4}, idempotency=_key("create-1", "app:9"))
    again = table_create(options={"players": 4}, idempotency=_key("create-1", "app:9"))
    assert again.replayed and again.response == first.response
    assert Table.objects.count() == 1


def test_engine_codes_pass_through_with_their_kind() -> None:
    table = _full_table(4)
    with pytest.raises(ServiceError) as info:
        action_submit(table_id=table.pk, position=0, action={"type": "play", "card": "2C"})
    assert (info.value.code, info.value.kind) == ("wrong_phase", "rules")
    with pytest.raises(ServiceError) as info:
        action_submit(table_id=table.pk, position=0, action={"type": "pass", "cards": ["ZZ", "2C", "3C"]})
    assert (info.value.code, info.value.kind) == ("invalid_card", "malformed")
    assert info.value.details["token"] == "ZZ"
    with pytest.raises(ServiceError) as info:
        action_submit(table_id=table.pk + 999, position=0, action={"type": "play", "card": "2C"})
    assert (info.value.code, info.value.kind) == ("not_found", "not_found")


def test_seats_join_leave_and_bots() -> None:
    table = table_create(options={"players": 3}).table
    a, b = _players(2)
    seat_join(table_id=table.pk, player=a, position=2)
    with pytest.raises(ServiceError) as info:
        seat_join(table_id=table.pk, player=b, position=2)
    assert info.value.code == "seat_taken"
    with pytest.raises(ServiceError) as info:
        seat_join(table_id=table.pk, player=a)
    assert info.value.code == "already_seated"
    seat_leave(table_id=table.pk, player=a)
    bot_add(table_id=table.pk, level="random")
    bot_add(table_id=table.pk, level="random")
    seat_join(table_id=table.pk, player=b)
    table.refresh_from_db()
    assert table.status == Table.Status.PASSING
    assert [(s.position, s.bot_level, s.player_id) for s in table.seats.all()] == [
        (0, "random", None),
        (1, "random", None),
        (2, "", b.pk),
    ]
    with pytest.raises(ServiceError) as info:
        seat_leave(table_id=table.pk, player=b)
    assert info.value.code == "table_not_open"


def test_bad_options_are_refused_naming_the_option() -> None:
    with pytest.raises(ServiceError) as info:
        table_create(options={"players": 11})
    assert (info.value.code, info.value.kind) == ("invalid_option", "malformed")
    assert info.value.details["option"] == "players"
    assert Table.objects.count() == 0


@pytest.mark.needs_postgres
@pytest.mark.django_db(transaction=True)
def test_twenty_racing_clients_submitting_the_same_play_apply_it_once() -> None:
    table = _full_table(4, target_score=50)
    rng = random.Random(3)
    state = state_from_dict(table.state)
    while state.phase == "passing":  # get past the pass to a play
        seat = state.to_act()[0]
        action = rng.choice(state.legal_actions(seat)).to_dict()
        action_submit(table_id=table.pk, position=seat, action=action)
        table.refresh_from_db()
        state = state_from_dict(table.state)
    seat, version = state.turn, table.version
    play = state.legal_actions(seat)[0].to_dict()
    barrier = threading.Barrier(20)
    results: list[str] = []
    lock = threading.Lock()

    def client() -> None:
        barrier.wait()
        try:
            action_submit(table_id=table.pk, position=seat, action=play, expected_version=version)
            outcome = "applied"
        except ServiceError as exc:
            outcome = exc.code
        finally:
            connection.close()
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=client) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("applied") == 1
    assert set(results) == {"applied", "stale_version"}
    table.refresh_from_db()
    assert table.version == version + 1
    assert Move.objects.filter(table=table, kind=Move.Kind.PLAY).count() == 1


@pytest.mark.needs_postgres
@pytest.mark.django_db(transaction=True)
def test_twenty_racing_retries_with_one_idempotency_key_act_once_and_all_get_the_first_answer() -> None:
    table = _full_table(4, target_score=50)
    action = state_from_dict(table.state).legal_actions(2)[0].to_dict()
    barrier = threading.Barrier(20)
    answers: list[tuple[bool, tuple[int, str] | None]] = []
    lock = threading.Lock()

    def client() -> None:
        barrier.wait()
        try:
            out = action_submit(table_id=table.pk, position=2, action=action, idempotency=_key("race"))
        finally:
            connection.close()
        with lock:
            answers.append((out.replayed, out.response))

    threads = [threading.Thread(target=client) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(replayed for replayed, _ in answers) == [False] + [True] * 19
    assert len({response for _, response in answers}) == 1
    assert Move.objects.filter(table=table, kind=Move.Kind.PASS).count() == 1


def test_a_service_error_survives_pickling_with_its_code_and_details() -> None:
    """Celery reports task failures by pickling them: the code and details must come through."""
    import pickle

    error = pickle.loads(pickle.dumps(ServiceError("stale_version", "old", kind="conflict", version=3)))
    assert (error.code, error.message, error.kind, error.details) == (
        "stale_version",
        "old",
        "conflict",
        {"version": 3},
    )
