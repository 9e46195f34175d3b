"""Queries and updates compiled once (games.prepared): they return and change exactly what the
ordinary queryset would, on SQLite and on PostgreSQL (CI), with int, str and UUID parameters."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.db import connection
from django.db.models import Count, Exists, OuterRef
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from games import services
from games.accounts import player_create
from games.models import PushDevice, PushMessage
from games.prepared import Prepared, PreparedUpdate

pytestmark = pytest.mark.django_db

_MESSAGE = Prepared(
    lambda message: PushMessage.objects.select_related("device", "device__player", "table").filter(
        uuid=message
    )[:1],
    [uuid.UUID],
)
_BY_KEY = Prepared(lambda device, key: PushMessage.objects.filter(device_id=device, key=key)[:1], [int, str])
_CLOSE = PreparedUpdate(PushMessage, ["status", "sent_at", "last_error"], ["uuid", "status", "claim"])


def _message(device: PushDevice, key: str, **fields: object) -> PushMessage:
    now = timezone.now()
    return PushMessage.objects.create(
        uuid=uuid.uuid4(), device=device, kind="turn", key=key, not_before=now, next_attempt_at=now, **fields
    )


def _closed(row: PushMessage) -> tuple[str, dt.datetime | None, str]:
    row.refresh_from_db()
    return row.status, row.sent_at, row.last_error


@pytest.fixture
def device() -> PushDevice:
    player = player_create(app=None, name="Ana")[0]
    return PushDevice.objects.create(player=player, kind="webpush", token="https://push.example/a", keys={})


def test_a_prepared_query_returns_what_the_queryset_returns(device: PushDevice) -> None:
    made = services.table_create(options={"target_score": 50}, bots={}, app=None)
    assert made.table is not None
    table = made.table
    first, second = _message(device, "a", table=table), _message(device, "b")
    for row in (first, second):
        for given in (row.uuid, str(row.uuid)):  # a UUID, or its text as a task carries it
            found = _MESSAGE.first(given)
            assert found is not None and found.pk == row.pk and found.uuid == row.uuid
            assert found.device.pk == device.pk and found.device.player.name == "Ana"
            assert found.not_before == row.not_before
    assert _MESSAGE.first(first.uuid).table.pk == table.pk  # type: ignore[union-attr]
    assert _MESSAGE.first(second.uuid).table is None  # type: ignore[union-attr]
    assert _MESSAGE.first(uuid.uuid4()) is None
    assert _BY_KEY.first(device.pk, "b").pk == second.pk  # type: ignore[union-attr]
    assert _BY_KEY.first(device.pk, "c") is None
    with CaptureQueriesContext(connection) as queries:
        _MESSAGE(first.uuid)
    assert len(queries) == 1


_WITH_COUNT = Prepared(
    lambda player: (
        PushDevice.objects.filter(player_id=player)
        .annotate(sent=Count("messages"), pending=Exists(PushMessage.objects.filter(device=OuterRef("pk"))))
        .order_by("pk")
    ),
    [int],
)


def test_annotations_come_back_as_the_querysets_own_attributes(device: PushDevice) -> None:
    _message(device, "a")
    _message(device, "b")
    other = PushDevice.objects.create(
        player=device.player, kind="webpush", token="https://push.example/b", keys={}
    )
    found = _WITH_COUNT(device.player_id)
    expected = list(_WITH_COUNT.build(device.player_id))
    assert [(d.pk, d.sent, d.pending) for d in found] == [(d.pk, d.sent, d.pending) for d in expected]
    assert [(d.pk, d.sent, d.pending) for d in found] == [(device.pk, 2, True), (other.pk, 0, False)]


def test_a_prepared_update_changes_only_the_rows_it_matches_and_says_how_many(device: PushDevice) -> None:
    claim = uuid.uuid4()
    held, unclaimed = _message(device, "a", claim=claim), _message(device, "b")
    done = timezone.now() + dt.timedelta(seconds=3)
    # the claim no longer holds: nothing changes
    assert _CLOSE("sent", done, "", held.uuid, "pending", uuid.uuid4()) == 0
    assert _CLOSE("sent", done, "", held.uuid, "sent", claim) == 0
    held.refresh_from_db()
    assert held.status == "pending" and held.sent_at is None
    # it holds: this row and no other
    assert _CLOSE("sent", done, "HTTP 201", held.uuid, "pending", claim) == 1
    held.refresh_from_db()
    unclaimed.refresh_from_db()
    assert _closed(held) == ("sent", done, "HTTP 201")
    assert (unclaimed.status, unclaimed.sent_at) == ("pending", None)
    # a where value None is `IS NULL`: the unclaimed row matches, the held one no longer does
    assert _CLOSE("failed", None, "x" * 300, unclaimed.uuid, "pending", None) == 1
    unclaimed.refresh_from_db()
    assert (unclaimed.status, unclaimed.last_error) == ("failed", "x" * 300)
    assert _CLOSE("failed", None, "", str(held.uuid), "sent", None) == 0
    with pytest.raises(TypeError):
        _CLOSE("sent", done)


def test_a_parameter_the_query_does_not_use_once_is_refused() -> None:
    twice = Prepared(lambda key: PushMessage.objects.filter(key=key, kind=key)[:1], [str])
    with pytest.raises(ValueError, match="each parameter once"):
        twice("x")
