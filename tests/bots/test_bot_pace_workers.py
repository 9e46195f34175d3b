"""The pace of bots with real Celery workers on Redis and PostgreSQL, in real time: at a table with
a person, each bot card comes at least the pace after the move before it and the person's clock
starts when their turn does; a bot-only table is not paced unless asked; and a paced move waits
without holding a worker (one worker keeps many paced tables moving at once)."""

from __future__ import annotations

import datetime as dt
import itertools
import random
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest

from bots.strategy import decide
from games import services
from games.engine import state_from_dict, view
from games.models import Move, Player, Table

pytestmark = [
    pytest.mark.needs_postgres,
    pytest.mark.needs_redis,
    pytest.mark.django_db(transaction=True),  # workers must see committed rows
]
Workers = Callable[..., subprocess.Popen[bytes]]


def _wait(table_id: int, until: Callable[[Table], bool], seconds: float) -> Table:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        table = Table.objects.get(pk=table_id)
        if until(table):
            return table
        time.sleep(0.05)
    table = Table.objects.get(pk=table_id)
    raise AssertionError(f"table {table_id} did not get there in {seconds}s: {table}")


def _plays(table_id: int) -> list[Move]:
    return list(Move.objects.filter(table_id=table_id, kind="play").order_by("seq"))


def _gaps_before_bot_cards(table_id: int, person: int) -> list[float]:
    """Seconds between each bot card and the move just before it (bot or person), in the log."""
    moves = list(Move.objects.filter(table_id=table_id).order_by("seq"))
    return [
        (move.created_at - before.created_at).total_seconds()
        for before, move in itertools.pairwise(moves)
        if move.kind == "play" and move.position != person and before.kind in ("play", "pass")
    ]


def _persons_turn(table: Table) -> bool:
    return table.state is not None and 0 in state_from_dict(table.state).to_act()


def _play_as_person(table_id: int, player: Player, cards: int) -> Table:
    """The person at seat 0 passes and plays `cards` cards as the basic bot would, each when their
    turn comes; the table when they have played them and their turn came back."""
    rng = random.Random(3)
    played = 0
    while True:
        table = _wait(table_id, _persons_turn, 30)
        if played == cards:
            return table
        action: dict[str, Any] = decide(view(state_from_dict(table.state), 0), "basic", rng)
        services.action_submit(table_id=table_id, action=action, player=player)
        played += action["type"] == "play"


def test_at_a_table_with_a_person_each_bot_card_waits_the_pace_and_the_persons_clock_is_whole(
    workers: Workers, settings: Any
) -> None:
    settings.BOT_PACE_MS = 400  # the default pace, here and in the worker (the test's own commits)
    workers(BOT_PACE_MS="400")
    out = services.table_create(bots={1: "basic", 2: "basic", 3: "basic"}, clocks={"play": 30})
    assert out.table is not None
    person = Player.objects.create(name="ada")
    services.seat_join(table_id=out.table.pk, player=person)
    table = _play_as_person(out.table.pk, person, cards=4)
    gaps = _gaps_before_bot_cards(table.pk, person=0)
    assert len(gaps) >= 9, gaps  # three bot cards a trick, four tricks
    assert min(gaps) >= 0.4, gaps
    # The person's clock started when their turn came, after the bots' paced cards: it is whole.
    last = Move.objects.filter(table=table).order_by("-seq").first()
    assert last is not None and table.deadline is not None
    left = (table.deadline - last.created_at).total_seconds()
    assert 29 <= left <= 30.5, left


def test_a_bot_only_table_is_not_paced_unless_asked(workers: Workers, settings: Any) -> None:
    settings.BOT_PACE_MS = 700
    workers(BOT_PACE_MS="700")
    unpaced = services.table_create(options={"target_score": 50}, bots=dict.fromkeys(range(4), "basic"))
    assert unpaced.table is not None
    _wait(unpaced.table.pk, lambda t: t.hand_number >= 2, 60)
    # The first hand's 52 cards in far less than the 51 paces of 0.7 s between them.
    first_hand = [m.created_at for m in _plays(unpaced.table.pk) if m.hand == 1]
    assert len(first_hand) == 52
    assert (first_hand[-1] - first_hand[0]).total_seconds() < 10
    asked = services.table_create(
        options={"target_score": 50}, bots=dict.fromkeys(range(4), "basic"), bot_pace_ms=250
    )
    assert asked.table is not None
    _wait(asked.table.pk, lambda t: len(_plays(t.pk)) >= 8, 30)
    plays = _plays(asked.table.pk)
    gaps = [(b.created_at - a.created_at).total_seconds() for a, b in itertools.pairwise(plays)]
    assert min(gaps) >= 0.25, gaps


def test_paced_moves_hold_no_worker(workers: Workers) -> None:
    """One worker process (concurrency 1) and six tables paced at 0.5 s: a worker that slept out
    the pace would make at most two moves a second in all; waiting in the broker, the tables'
    paces run side by side."""
    tables = []
    for _ in range(6):
        out = services.table_create(
            options={"target_score": 50}, bots=dict.fromkeys(range(4), "basic"), bot_pace_ms=500
        )
        assert out.table is not None
        tables.append(out.table.pk)
    workers(queues="bots")
    for table_id in tables:  # the passes are not paced; the cards are
        _wait(table_id, lambda t: t.status == Table.Status.PLAYING, 30)
    before = sum(len(_plays(t)) for t in tables)
    window = 4.0
    time.sleep(window)
    made = sum(len(_plays(t)) for t in tables) - before
    assert made > 2 * window * 1.5, made  # a sleeping worker: at most 2 a second
    assert made <= 6 * (window / 0.5 + 1), made  # and no table ran ahead of its pace
    for table_id in tables:
        plays = _plays(table_id)
        gaps = [(b.created_at - a.created_at) for a, b in itertools.pairwise(plays)]
        assert min(gaps) >= dt.timedelta(seconds=0.5), (table_id, gaps)
