"""A tournament's set-up (games.services.tournaments.set_up, the bulk task): the creation answers
before any table exists, a set-up delivered twice creates no table twice, and one killed half-way
leaves whole batches that the sweep's `resume_set_ups` finds and a second run completes."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from games import standings
from games.accounts import app_create
from games.infra import jobs
from games.models import Table, Tournament
from games.services import tournaments
from games.services.tournaments import set_up, tournament_create, unfinished_set_ups

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...], str]]:
    """The tasks queued, kept instead of run (as a worker that has not taken them yet)."""
    kept: list[tuple[str, tuple[Any, ...], str]] = []
    monkeypatch.setattr(jobs, "_here", lambda name, args, queue, delay: kept.append((name, args, queue)))
    return kept


def _bots_tournament(deal_sets: int) -> Tournament:
    app, _ = app_create(name="setup")
    out = tournament_create(app=app, entrants=[{"bot": "random"}, {"bot": "random"}], deal_sets=deal_sets)
    return Tournament.objects.get(pk=out.made.pk)


def test_the_creation_answers_starting_and_queues_the_set_up_on_the_bulk_lane(queued: list[Any]) -> None:
    tournament = _bots_tournament(3)
    assert queued == [(jobs.SET_UP_TOURNAMENT, (tournament.pk,), jobs.BULK_QUEUE)]
    body = standings.body(tournament)
    assert body["status"] == "starting" and body["tables_created"] == 0 and body["tables_total"] == 12
    assert not Table.objects.exists()


def test_a_set_up_delivered_twice_creates_each_table_once(queued: list[Any]) -> None:
    tournament = _bots_tournament(3)
    assert set_up(tournament.pk, batch=5) == 12
    assert set_up(tournament.pk, batch=5) == 0  # the duplicate delivery finds nothing to do
    pairs = list(Table.objects.filter(tournament=tournament).values_list("deal_set", "rotation"))
    assert len(pairs) == len(set(pairs)) == 12
    assert standings.body(tournament)["status"] == "running"
    # Each table's bot task went to the bot lane on its batch's commit.
    assert sum(1 for name, _, queue in queued if name == jobs.PLAY_BOTS and queue.startswith("bots")) == 12


def test_a_set_up_killed_half_way_keeps_whole_batches_and_the_sweep_finds_the_rest(
    queued: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    tournament = _bots_tournament(3)
    real, opened = tournaments._open_table, []

    def dies_on_the_seventh(t: Tournament, deal_set: int, rotation: int) -> Table:
        if len(opened) == 6:
            raise SystemExit("worker killed")
        opened.append((deal_set, rotation))
        return real(t, deal_set, rotation)

    monkeypatch.setattr(tournaments, "_open_table", dies_on_the_seventh)
    with pytest.raises(SystemExit):
        set_up(tournament.pk, batch=5)
    assert Table.objects.filter(tournament=tournament).count() == 5  # the first batch; the second rolled back
    assert standings.body(tournament)["status"] == "starting"
    assert unfinished_set_ups() == []  # within its grace: its task may still be running
    later = unfinished_set_ups(grace=dt.timedelta(0))
    assert later == [tournament.pk]
    monkeypatch.setattr(tournaments, "_open_table", real)
    assert set_up(tournament.pk, batch=5) == 7
    assert Table.objects.filter(tournament=tournament).count() == 12
    assert unfinished_set_ups(grace=dt.timedelta(0)) == []
