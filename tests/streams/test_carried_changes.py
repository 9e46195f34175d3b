"""A table change carried in its wake-up (games.changes): exactly what the database then holds, and
taken by a stream feed only when it continues the feed's last read."""

from __future__ import annotations

import datetime as dt
import json
import random
from typing import Any

import pytest
from django.utils import timezone

from games import changes, reads
from games.accounts import Principal
from games.engine import state_from_dict
from games.infra import notify
from games.live import events, fanout
from games.models import Player, Table
from games.services import action_submit, seat_join, table_create


def _full_table() -> Table:
    table = table_create(options={"players": 4}).table
    assert table is not None
    for i in range(4):
        seat_join(table_id=table.pk, player=Player.objects.create(name=f"p{i}"))
    table.refresh_from_db()
    return table


def _columns(table: Table) -> dict[str, Any]:
    return {f.attname: f.value_from_object(table) for f in Table._meta.concrete_fields}


@pytest.mark.needs_postgres
@pytest.mark.django_db
def test_each_write_carries_the_row_and_moves_the_database_then_holds(
    monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    published: list[tuple[int, int, str | None]] = []
    monkeypatch.setattr(
        notify,
        "publish",
        lambda table_id, version, players, *, clock, change=None: published.append(
            (table_id, version, change)
        ),
    )
    table, rng = _full_table(), random.Random(7)
    for _ in range(12):  # the four passes, then plays (a pass that leaves others to pass too)
        table.refresh_from_db()
        before = table.version
        state = state_from_dict(table.state)
        seat = rng.choice(state.to_act())
        with django_capture_on_commit_callbacks(execute=True):
            action_submit(
                table_id=table.pk,
                position=seat,
                action=rng.choice(state.legal_actions(seat)).to_dict(),
                expected_version=table.version,
            )
        table_id, version, text = published[-1]
        assert (table_id, version) == (table.pk, before + 1) and text is not None
        change = changes.decode(text)
        stored = reads.table_row(table.pk)
        assert stored is not None and _columns(change.table) == _columns(stored)
        assert change.first == before + 1
        logged = reads.moves_from(stored, before + 1)
        # equal to the byte, keys in the same order: the answers built from either serialise alike
        assert json.dumps([(m.seq, m.events) for m in change.moves]) == json.dumps(
            [(m.seq, m.events) for m in logged]
        )
        assert json.dumps(_columns(change.table), default=str) == json.dumps(_columns(stored), default=str)


def _table(version: int, **fields: Any) -> Table:
    return Table(pk=5, version=version, options={}, seating=[], clocks={}, state={"format": 0}, **fields)


def _text(table: Table, first: int) -> str:
    rows = [
        {"seq": seq, "events": [["card_played", {"seat": 0}, None, 1]]}
        for seq in range(first, table.version + 1)
    ]
    text = changes.encode(table, first, json.dumps(rows), json.dumps(table.state))
    assert text is not None
    return text


def _feed_at(version: int) -> fanout.Feed:
    feed = fanout.Feed(5)
    feed.offer(_table(version))  # as a stream's own read on opening
    return feed


def test_a_change_that_continues_the_last_read_is_taken_without_a_read() -> None:
    feed = _feed_at(3)
    feed.announce(5, None, _text(_table(5), 4))
    read = feed.read
    assert feed.task is None and read is not None and read.version == 5  # no read was started
    assert [m.seq for m in read.moves] == [4, 5] and read.table.state == {"format": 0}
    feed.announce(6, None, _text(_table(6), 4))  # overlapping what it has: the new move only
    assert feed.read is not None and [m.seq for m in feed.read.moves] == [4, 5, 6]


@pytest.mark.parametrize(
    ("why", "table", "first"),
    [
        ("it skips move 4", _table(5), 5),
        ("a spectator delay", _table(4, spectator_delay={"moves": 2}), 4),
        ("a clock that ran out", _table(4, deadline=timezone.now() - dt.timedelta(seconds=1)), 4),
    ],
)
def test_a_change_the_feed_cannot_continue_is_read_from_the_database(
    why: str, table: Table, first: int
) -> None:
    feed = _feed_at(3)
    assert not feed._take(table.version, _text(table, first), None), why
    assert feed.read is not None and feed.read.version == 3


def test_a_change_not_understood_or_not_newer_is_not_taken(caplog: pytest.LogCaptureFixture) -> None:
    feed = _feed_at(3)
    assert not feed._take(4, "{not json", None)
    assert "carried change not understood" in caplog.text
    assert not feed._take(3, _text(_table(3), 3), None)  # nothing newer than the last read
    other = _table(4)
    other.pk = 6
    assert not feed._take(4, _text(other, 4), None)  # another table's
    assert feed.read is not None and feed.read.version == 3  # unchanged


@pytest.mark.django_db
def test_a_shared_reads_your_turn_is_the_one_the_table_body_gives(settings: Any) -> None:
    """A seated viewer's `your_turn` is built from the parsed state (events._turn_of_seat), not
    from the whole table body: the same event, field for field, at every turn of passes and plays."""
    settings.REDIS_URL = ""  # the body's spectator count from this process
    table, rng = _full_table(), random.Random(11)
    seats = {s.position: Principal(app=None, player=s.player) for s in table.seats.select_related("player")}
    compared = 0
    for _ in range(40):
        table.refresh_from_db()
        state = state_from_dict(table.state)
        read = fanout.Read(table, [], table.version + 1)
        for viewer in seats.values():
            old = events.Batch(table, [], events.Position(table.version), more=False)
            events._set_turn(old, reads.table_body(table, viewer, state), viewer)
            new = events.shared_batch(read, [], viewer, events.Position(table.version))
            assert (new.your_turn, new.turn_key) == (old.your_turn, old.turn_key)
            compared += old.your_turn is not None
        seat = rng.choice(state.to_act())
        action = rng.choice(state.legal_actions(seat)).to_dict()
        action_submit(table_id=table.pk, position=seat, action=action, expected_version=table.version)
    assert compared >= 40  # four passes at once, then a turn at every play
