"""Duplicate tournaments: the API's answer equals bots.tournament's on the same seed, bad input is
refused with a code, racing finishes complete a tournament once, and its tables verify and replay."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from bots import tournament as command
from games import exports, verify
from games.accounts import app_create, player_create
from games.engine import state_from_dict
from games.infra import jobs
from games.models import Move, Table, Tournament
from games.services import action_submit, bots_play, table_abandon
from games.services.tournaments import tournament_create
from games.standings import standings
from tests.graphql.test_graphql import gql

pytestmark = pytest.mark.django_db(transaction=True)  # on_commit hooks fire: eager tasks play the tables


def client(key: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return c


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
@pytest.mark.parametrize(
    ("candidate", "reference", "deal_sets", "seed"),
    [("basic", "random", 6, 7), ("strong", "basic", 2, 3)],  # strong: sampled worlds, its rng drawn often
)
def test_a_bot_only_tournament_gives_exactly_the_gap_and_interval_of_the_command(
    candidate: str, reference: str, deal_sets: int, seed: int
) -> None:
    app, _ = app_create(name="measure")
    entrants = [{"bot": candidate}, {"bot": reference}]
    made = tournament_create(app=app, entrants=entrants, deal_sets=deal_sets, seed=seed).made
    done = Tournament.objects.get(pk=made.pk)  # eager tasks: every table played out on creation
    assert done.status == "finished" and done.tables_finished == done.tables_total == deal_sets * 4
    expected = command.run(candidate, reference, deal_sets=deal_sets, seed=seed, progress=False)
    table = {row["entrant"]: row for row in standings(done)["entrants"]}
    assert table[0]["relative_points"] == expected.gap
    assert (table[0]["ci95_low"], table[0]["ci95_high"]) == expected.gap_ci95
    assert table[0]["points_per_hand"] == expected.candidate_points_per_hand
    assert table[1]["points_per_hand"] == expected.reference_points_per_hand
    assert table[1]["relative_points"] == pytest.approx(-expected.gap)
    ranks = [table[0]["rank"], table[1]["rank"]]
    assert ranks == ([1, 2] if expected.gap > 0 else [2, 1] if expected.gap < 0 else [1, 1])


def test_an_app_runs_a_bot_tournament_over_rest_and_reads_its_standings_and_tables() -> None:
    _, key = app_create(name="rest")
    body = {"entrants": [{"bot": "basic"}, {"bot": "random"}], "deal_sets": 3, "seed": "11"}
    r = client(key).post("/api/v1/tournaments", body, format="json")
    assert r.status_code == 201, r.json()
    made = r.json()
    assert made["tables_total"] == 12 and made["seed"] == "11"
    assert [e["name"] for e in made["entrants"]] == ["basic bot", "random bot"]
    got = client(key).get(f"/api/v1/tournaments/{made['id']}").json()
    assert got["status"] == "finished" and got["tables_finished"] == 12
    assert [t["id"] for t in client(key).get("/api/v1/tournaments").json()["results"]] == [made["id"]]
    table = client(key).get(f"/api/v1/tournaments/{made['id']}/standings").json()
    expected = command.run("basic", "random", deal_sets=3, seed=11, progress=False)
    best = next(row for row in table["entrants"] if row["entrant"] == 0)
    assert table["deal_sets_complete"] == 3
    assert best["relative_points"] == expected.gap
    assert (best["ci95_low"], best["ci95_high"]) == expected.gap_ci95
    tables = client(key).get(f"/api/v1/tournaments/{made['id']}/tables").json()["results"]
    assert sorted((t["deal_set"], t["rotation"]) for t in tables) == [
        (k, r) for k in range(3) for r in range(4)
    ]
    one = client(key).get(f"/api/v1/tables/{tables[0]['id']}").json()  # an ordinary table
    assert one["status"] == "finished" and one["options"]["hands"] == 1
    _, other = app_create(name="other")
    assert client(other).get(f"/api/v1/tournaments/{made['id']}").status_code == 404


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"entrants": [{"bot": "basic"}, {"bot": "genius"}], "deal_sets": 2}, "invalid_bot_level", None),
        ({"entrants": [{"bot": "basic"}, {"player": 999_999}], "deal_sets": 2}, "invalid_input", "entrants"),
        ({"entrants": [{"bot": "basic"}], "deal_sets": 2}, "invalid_input", "entrants"),
        (
            {"entrants": [{"bot": "basic"}, {"bot": "random", "seat": 2}], "deal_sets": 2},
            "invalid_input",
            None,
        ),
        (
            {"entrants": [{"bot": "basic"}, {"bot": "random"}], "deal_sets": 10_000},
            "invalid_input",
            "deal_sets",
        ),
        (
            {"entrants": [{"bot": "basic"}, {"bot": "random"}], "deal_sets": 2, "options": {"hands": 3}},
            "invalid_option",
            None,
        ),
    ],
)
def test_bad_tournaments_are_refused_with_a_code_and_make_nothing(
    body: dict[str, Any], code: str, field: str | None
) -> None:
    _, key = app_create(name="bad")
    r = client(key).post("/api/v1/tournaments", body, format="json")
    assert r.status_code == 400 and r.json()["code"] == code, r.json()
    if field:
        assert r.json()["field"] == field
    assert not Tournament.objects.exists() and not Table.objects.exists()


def test_a_player_of_another_app_cannot_be_entered_and_a_player_token_cannot_create() -> None:
    app, key = app_create(name="mine")
    theirs, _ = app_create(name="theirs")
    stranger, _ = player_create(app=theirs, name="stranger")
    mine, token = player_create(app=app, name="mine")
    body = {"entrants": [{"player": stranger.pk}, {"bot": "basic"}], "deal_sets": 1}
    r = client(key).post("/api/v1/tournaments", body, format="json")
    assert r.status_code == 400 and r.json()["code"] == "invalid_input"
    assert f"no player {stranger.pk} of this app" in r.json()["detail"]
    body = {"entrants": [{"player": mine.pk}, {"bot": "basic"}], "deal_sets": 1}
    assert client(token).post("/api/v1/tournaments", body, format="json").json()["code"] == "app_key_required"
    assert not Tournament.objects.exists()


def _at_last_move(table: Table) -> bool:
    """The next play ends the hand, and so the table (4 seats, one hand)."""
    state = state_from_dict(table.state)
    return state.phase == "playing" and len(state.tricks) == 12 and len(state.trick) == 3


@pytest.mark.needs_postgres
def test_racing_finishes_of_a_tournaments_last_tables_complete_it_exactly_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jobs, "play_bots", lambda *a, **kw: None)  # the test plays the tables itself
    app, _ = app_create(name="race")
    made = tournament_create(app=app, entrants=[{"bot": "basic"}, {"bot": "basic"}], deal_sets=1, seed=3).made
    tables = list(Table.objects.filter(tournament=made).order_by("rotation"))
    for table in tables[:2]:
        bots_play(table_id=table.pk, version=table.version)
    for table in tables[2:]:
        while not _at_last_move(table):
            bots_play(table_id=table.pk, version=table.version, limit=1)
            table.refresh_from_db()
    assert Tournament.objects.get(pk=made.pk).tables_finished == 2
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def finish(table: Table) -> None:
        barrier.wait()
        try:
            bots_play(table_id=table.pk, version=table.version)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=finish, args=(t,)) for t in tables[2:]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    done = Tournament.objects.get(pk=made.pk)
    assert done.status == "finished" and done.tables_finished == 4
    assert done.standings is not None and done.standings["deal_sets_complete"] == 1
    progress = [
        e[1]
        for move in Move.objects.filter(table__tournament=made)
        for e in move.events
        if e[0] == "tournament_progress"
    ]
    assert sorted(p["tables_finished"] for p in progress) == [1, 2, 3, 4]
    assert [p["status"] for p in progress].count("finished") == 1


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
def test_a_tournaments_tables_export_and_verify_like_any_table() -> None:
    app, _ = app_create(name="verify")
    made = tournament_create(app=app, entrants=[{"bot": "strong"}, {"bot": "basic"}], deal_sets=2).made
    tables = list(Table.objects.filter(tournament=made))
    assert len({t.seed for t in tables}) == 2  # one secret seed per deal set, shared by its rotations
    for table in tables:
        document = exports.game_document(table)
        report = verify.check_export(document)
        assert report["ok"] and report["replay_ok"], report
        assert [h["hand"] for h in report["hands"]] == [table.options.get("first_hand", 1)]


CREATE = """mutation($entrants: [EntrantInput!]!, $dealSets: Int!, $seed: String) {
  createTournament(entrants: $entrants, dealSets: $dealSets, seed: $seed, options: {players: 4}) {
    tournament { id status tablesTotal tablesCreated tablesFinished seed entrants { bot name } }
    errors { code field message }
  }
}"""
READ = """query($id: Int!) {
  tournament(id: $id) {
    status
    tablesFinished
    standings { dealSetsComplete entrants { entrant rank relativePoints ci95Low ci95High hands } }
    tables { dealSet rotation table { id status } }
  }
  tournaments { id }
}"""


def test_graphql_creates_the_same_tournament_and_reads_the_same_standings_as_rest() -> None:
    _, key = app_create(name="gql")
    entrants = [{"bot": "basic"}, {"bot": "random"}]
    made = gql(CREATE, key, entrants=entrants, dealSets=3, seed="11")["data"]["createTournament"]
    assert made["errors"] == [] and made["tournament"]["tablesTotal"] == 12
    # As created: answered before the set-up task made its tables (it runs on commit in the tests)
    assert made["tournament"]["status"] == "starting" and made["tournament"]["tablesCreated"] == 0
    assert made["tournament"]["seed"] == "11"
    read = gql(READ, key, id=made["tournament"]["id"])["data"]
    assert read["tournament"]["status"] == "finished" and read["tournament"]["tablesFinished"] == 12
    expected = command.run("basic", "random", deal_sets=3, seed=11, progress=False)
    best = next(row for row in read["tournament"]["standings"]["entrants"] if row["entrant"] == 0)
    assert best["relativePoints"] == expected.gap
    assert (best["ci95Low"], best["ci95High"]) == expected.gap_ci95
    assert len(read["tournament"]["tables"]) == 12
    assert {t["table"]["status"] for t in read["tournament"]["tables"]} == {"finished"}
    assert read["tournaments"] == [{"id": made["tournament"]["id"]}]
    refused = gql(CREATE, key, entrants=[{"bot": "basic"}, {"player": 12345}], dealSets=1)
    errors = refused["data"]["createTournament"]["errors"]
    assert errors[0]["code"] == "invalid_input" and errors[0]["field"] == "entrants"
    too_many = gql(CREATE, key, entrants=entrants, dealSets=100_000)["data"]["createTournament"]["errors"]
    assert too_many[0]["code"] == "invalid_input" and too_many[0]["field"] == "dealSets"


def test_a_retried_create_with_one_idempotency_key_makes_one_tournament_and_the_same_answer() -> None:
    _, key = app_create(name="retry")
    body = {"entrants": [{"bot": "random"}, {"bot": "random"}], "deal_sets": 1, "seed": "5"}
    first = client(key).post("/api/v1/tournaments", body, format="json", HTTP_IDEMPOTENCY_KEY="t-1")
    again = client(key).post("/api/v1/tournaments", body, format="json", HTTP_IDEMPOTENCY_KEY="t-1")
    assert first.status_code == again.status_code == 201
    assert first.content == again.content and again["Idempotent-Replayed"] == "true"
    assert Tournament.objects.count() == 1 and Table.objects.count() == 4
    other = client(key).post(
        "/api/v1/tournaments", {**body, "seed": "6"}, format="json", HTTP_IDEMPOTENCY_KEY="t-1"
    )
    assert other.status_code == 409 and other.json()["code"] == "idempotency_key_reused"


def test_with_people_the_tables_run_one_after_another_on_their_clocks_until_the_standings() -> None:
    app, _ = app_create(name="people")
    ada, _ = player_create(app=app, name="Ada")
    bob, _ = player_create(app=app, name="Bob")
    entrants = [{"player": ada.pk}, {"player": bob.pk}, {"bot": "basic"}]
    made = tournament_create(app=app, entrants=entrants, deal_sets=2, clocks={"play": 60}).made
    seen: list[int] = []
    while True:
        running = Table.objects.filter(tournament=made).exclude(status="finished")
        assert running.count() <= 1  # the people sit at every table: one at a time
        table = running.first()
        if table is None:
            break
        seen.append(table.pk)
        assert table.deadline is not None  # a person is to act: their clock runs
        who = {s["player"]: s["position"] for s in table.seating if s["player"]}
        assert set(who) == {ada.pk, bob.pk} and who[ada.pk] == table.rotation
        while table.status != "finished":
            state = state_from_dict(table.state)
            seat = next(s for s in state.to_act() if table.seating[s]["player"])
            person = ada if table.seating[seat]["player"] == ada.pk else bob
            action_submit(table_id=table.pk, player=person, action=state.legal_actions(seat)[0].to_dict())
            table.refresh_from_db()  # the bots' moves ran on commit (eager tasks)
        last = Move.objects.filter(table=table).order_by("-seq").first()
        assert last is not None and "tournament_progress" in [e[0] for e in last.events]
    assert len(seen) == 8
    order = [(t.rotation, t.deal_set) for t in Table.objects.filter(pk__in=seen).order_by("pk")]
    assert order == [(r, k) for r in range(4) for k in range(2)]  # a deal comes back after the others
    done = Tournament.objects.get(pk=made.pk)
    assert done.status == "finished"
    rows = done.standings["entrants"]
    assert {r["name"] for r in rows} == {"Ada", "Bob", "basic bot"}
    assert [r["hands"] for r in sorted(rows, key=lambda r: r["entrant"])] == [8, 8, 16]
    assert done.standings["deal_sets_complete"] == 2


def test_an_abandoned_table_still_ends_the_tournament_and_its_deal_set_is_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jobs, "play_bots", lambda *a, **kw: None)  # the test plays the tables itself
    app, _ = app_create(name="abandon")
    made = tournament_create(app=app, entrants=[{"bot": "basic"}, {"bot": "random"}], deal_sets=2).made
    tables = list(Table.objects.filter(tournament=made).order_by("deal_set", "rotation"))
    table_abandon(table_id=tables[0].pk)
    for table in tables[1:]:
        bots_play(table_id=table.pk, version=table.version)
    done = Tournament.objects.get(pk=made.pk)
    assert done.status == "finished" and done.tables_finished == 8
    assert done.standings["deal_sets_complete"] == 1  # deal set 0 lost a rotation
    assert {row["hands"] for row in done.standings["entrants"]} == {4, 12}
    abandoned = Move.objects.filter(table=tables[0], kind="abandon").get()
    assert [e[0] for e in abandoned.events] == ["table_abandoned", "table_finished", "tournament_progress"]


def test_graphql_create_with_an_idempotency_key_acts_once_and_answers_the_first_tournament() -> None:
    _, key = app_create(name="gql-retry")
    query = """mutation($key: String) {
      createTournament(entrants: [{bot: "random"}, {bot: "random"}], dealSets: 1, idempotencyKey: $key) {
        tournament { id status } replayed errors { code }
      }
    }"""
    first = gql(query, key, key="g-1")["data"]["createTournament"]
    again = gql(query, key, key="g-1")["data"]["createTournament"]
    assert first["errors"] == again["errors"] == [] and (first["replayed"], again["replayed"]) == (
        False,
        True,
    )
    assert again["tournament"] == first["tournament"]  # as first created
    assert Tournament.objects.count() == 1
