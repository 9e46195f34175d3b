"""Duplicate tournaments: the API's answer equals bots.tournament's on the same seed, bad input is
refused with a code, racing finishes complete a tournament once, and its tables verify and replay."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from bots import tournament as command
from games.accounts import app_create
from games.models import Tournament
from games.services.tournaments import tournament_create
from games.standings import standings

pytestmark = pytest.mark.django_db(transaction=True)  # on_commit hooks fire: eager tasks play the tables


def client(key: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return c


def test_a_bot_only_tournament_gives_exactly_the_gap_and_interval_of_the_command() -> None:
    app, _ = app_create(name="measure")
    made = tournament_create(app=app, entrants=[{"bot": "basic"}, {"bot": "random"}], deal_sets=6, seed=7)
    done = Tournament.objects.get(pk=made.pk)  # eager tasks: every table played out on creation
    assert done.status == "finished" and done.tables_finished == done.tables_total == 24
    expected = command.run("basic", "random", deal_sets=6, seed=7, progress=False)
    table = {row["entrant"]: row for row in standings(done)["entrants"]}
    assert table[0]["relative_points"] == expected.gap
    assert (table[0]["ci95_low"], table[0]["ci95_high"]) == expected.gap_ci95
    assert table[0]["points_per_hand"] == expected.candidate_points_per_hand
    assert table[1]["points_per_hand"] == expected.reference_points_per_hand
    assert table[1]["relative_points"] == pytest.approx(-expected.gap)
    assert table[0]["rank"] == 1 and table[1]["rank"] == 2
