"""A bot task's first step (games.services.botturns.bots_play): a table whose bots all move inside the
transaction is locked at once, with no read before; one where a move is decided before the lock (a
bot that thinks, a brought bot) is read first, as before."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from games.models import Player, Table
from games.services import bot_add, seat_join, table_create
from games.services.botturns import bots_play

pytestmark = pytest.mark.django_db


def _person_and_bots(level: str) -> Table:
    """A person at seat 0 and three bots of `level`: the game starts, the bots owe their passes
    (the tests run no commit hooks here, so no task made them)."""
    table = table_create(options={"players": 4}).table
    assert table is not None
    seat_join(table_id=table.pk, player=Player.objects.create(name="person"), position=0)
    for position in (1, 2, 3):
        bot_add(table_id=table.pk, level=level, position=position)
    table.refresh_from_db()
    assert table.bot_turn and table.status == Table.Status.PASSING
    return table


def _table_reads(queries: list[dict[str, str]]) -> list[str]:
    """Each read of the table row, in order: 'locked' or 'unlocked' ('read' on SQLite, whose
    transaction locks the whole database and whose SQL has no FOR UPDATE)."""
    postgres = connection.vendor == "postgresql"
    return [
        ("locked" if "FOR UPDATE" in q["sql"] else "unlocked") if postgres else "read"
        for q in queries
        if q["sql"].startswith("SELECT") and 'FROM "games_table"' in q["sql"]
    ]


def _as_read(expected: list[str]) -> list[str]:
    return expected if connection.vendor == "postgresql" else ["read"] * len(expected)


def test_bots_that_move_in_the_transaction_are_played_without_a_read_before_the_lock() -> None:
    table = _person_and_bots("basic")
    with CaptureQueriesContext(connection) as captured:
        out = bots_play(table_id=table.pk, version=table.version)
    assert out.table is not None and out.table.version == table.version + 3  # the three passes
    assert _table_reads(captured.captured_queries) == _as_read(["locked"])


def test_a_stale_task_changes_nothing() -> None:
    table = _person_and_bots("basic")
    with CaptureQueriesContext(connection) as captured:
        out = bots_play(table_id=table.pk, version=table.version - 1)
    assert out.table is None
    assert not [q for q in captured.captured_queries if q["sql"].startswith(("UPDATE", "INSERT", "WITH"))]
    table.refresh_from_db()
    assert table.bot_turn  # still owed, to the task queued for its version


def test_a_bot_that_thinks_is_read_first_and_decides_before_the_lock() -> None:
    table = _person_and_bots("strong")
    with CaptureQueriesContext(connection) as captured:
        out = bots_play(table_id=table.pk, version=table.version, limit=1)
    assert out.table is not None and out.table.version == table.version + 1
    # the first lock finds a table whose move is decided before it and leaves it; the read without
    # the lock (its head, then the row for the state), the decision, then the lock that moves (then
    # the next task, queued for the other passes, which the tests run at once)
    reads = _table_reads(captured.captured_queries)
    assert reads[:4] == _as_read(["locked", "unlocked", "unlocked", "locked"])
