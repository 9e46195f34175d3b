"""Whole-game export: the document of a finished game, its transcript, and games.verify checking it."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest

from games import exports, verify
from games.engine import state_from_dict
from games.errors import ServiceError
from games.models import Player, Table
from games.services import action_submit, seat_join, table_create

pytestmark = pytest.mark.django_db


def _finished_table(players: int, variant: str, seed: int) -> Table:
    table = table_create(options={"players": players, "variant": variant, "target_score": 50}).table
    for i in range(players):
        seat_join(table_id=table.pk, player=Player.objects.create(name=f"p{i}"))
    rng = random.Random(seed)
    while True:
        table.refresh_from_db()
        if table.status == Table.Status.FINISHED:
            return table
        state = state_from_dict(table.state)
        seat = rng.choice(state.to_act())
        action = rng.choice(state.legal_actions(seat)).to_dict()
        action_submit(table_id=table.pk, position=seat, action=action, expected_version=table.version)


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
@pytest.mark.parametrize(("players", "variant"), [(4, "classic"), (3, "classic"), (6, "cancellation")])
def test_an_exported_game_verifies_in_one_call_and_reads_as_a_transcript(players: int, variant: str) -> None:
    table = _finished_table(players, variant, seed=players)
    document = json.loads(json.dumps(exports.game_document(table)))  # what a client receives

    assert document["format"] == exports.FORMAT
    assert document["game_seed"] == table.seed
    assert len(document["hands"]) == table.hand_number
    assert document["totals"] == table.state["totals"]
    assert document["winners"] and all(
        document["totals"][w] == min(document["totals"]) for w in document["winners"]
    )
    assert [m["seq"] for m in document["moves"]] == list(range(1, table.version + 1))
    report = verify.check_export(document)
    assert report == {
        "ok": True,
        "hands": [
            {"hand": n, "seed_ok": True, "commitment_ok": True, "deal_ok": True}
            for n in range(1, table.hand_number + 1)
        ],
        "replay_ok": True,
        "problems": [],
    }

    text = exports.transcript(document)
    tricks = sum(len(h["tricks"]) for h in document["hands"])
    assert text.count("  trick ") == tricks
    assert text.count("was dealt") == players * len(document["hands"])
    for hand in document["hands"]:
        assert f"Hand {hand['hand']} (" in text
        assert hand["seed"] in text
    assert text.rstrip().splitlines()[-1].startswith("Won by ")


def test_a_changed_card_seed_commitment_or_move_is_found() -> None:
    document = json.loads(json.dumps(exports.game_document(_finished_table(4, "classic", seed=7))))

    swapped = copy.deepcopy(document)
    trick = swapped["hands"][0]["tricks"][3]
    trick["cards"][0], trick["cards"][1] = trick["cards"][1], trick["cards"][0]
    report = verify.check_export(swapped)
    assert not report["ok"] and not report["replay_ok"]
    assert any("hands [1]" in p for p in report["problems"])

    reseeded = copy.deepcopy(document)
    reseeded["hands"][1]["seed"] = "0" * 64
    report = verify.check_export(reseeded)
    assert not report["ok"]
    assert report["hands"][1] == {"hand": 2, "seed_ok": False, "commitment_ok": False, "deal_ok": False}

    recommitted = copy.deepcopy(document)
    recommitted["hands"][0]["published_commitment"] = "f" * 64
    report = verify.check_export(recommitted)
    assert report["problems"] == ["hand 1: commitment does not match"]

    illegal = copy.deepcopy(document)
    plays = [m for m in illegal["moves"] if m["kind"] == "play"]
    plays[0]["action"], plays[1]["action"] = plays[1]["action"], plays[0]["action"]
    report = verify.check_export(illegal)
    assert not report["ok"] and any("does not replay" in p for p in report["problems"])

    assert verify.check_export({"format": "something else"})["ok"] is False


def test_the_command_line_checks_an_export_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = exports.game_document(_finished_table(4, "classic", seed=11))
    good = tmp_path / "game.json"
    good.write_text(json.dumps(document))
    assert verify.main(["--export", str(good)]) == 0
    assert "game verified" in capsys.readouterr().err

    document["totals"][0] += 1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))
    assert verify.main(["--export", str(bad)]) == 1
    assert "MISMATCH" in capsys.readouterr().err


def test_a_game_still_being_played_cannot_be_exported() -> None:
    table = table_create(options={"players": 4}).table
    for i in range(4):
        seat_join(table_id=table.pk, player=Player.objects.create(name=f"p{i}"))
    table.refresh_from_db()
    with pytest.raises(ServiceError) as refused:
        exports.game_document(table)
    assert refused.value.code == "not_finished"


def test_rest_export_and_transcript_of_a_finished_game_and_refusal_before() -> None:
    from rest_framework.test import APIClient

    from games import accounts

    table = table_create(options={"players": 4, "target_score": 50}).table
    tokens = []
    for i in range(4):
        player, token = accounts.player_create(app=None, name=f"guest{i}")
        seat_join(table_id=table.pk, player=player)
        tokens.append(token)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {tokens[0]}")

    early = client.get(f"/api/v1/tables/{table.pk}/export")
    assert early.status_code == 422 and early.json()["code"] == "not_finished"
    assert client.get(f"/api/v1/tables/{table.pk}/transcript").json()["code"] == "not_finished"

    rng = random.Random(5)
    while True:
        table.refresh_from_db()
        if table.status == Table.Status.FINISHED:
            break
        state = state_from_dict(table.state)
        seat = rng.choice(state.to_act())
        action = rng.choice(state.legal_actions(seat)).to_dict()
        action_submit(table_id=table.pk, position=seat, action=action, expected_version=table.version)

    answer = client.get(f"/api/v1/tables/{table.pk}/export")
    assert answer.status_code == 200
    assert answer.json() == json.loads(json.dumps(exports.game_document(table)))
    assert verify.check_export(answer.json())["ok"]
    text = client.get(f"/api/v1/tables/{table.pk}/transcript")
    assert text.status_code == 200 and text["Content-Type"] == "text/plain; charset=utf-8"
    assert text.content.decode() == exports.transcript(answer.json())
    assert client.get("/api/v1/tables/999999/export").json()["code"] == "not_found"


EXPORT_QUERY = """query($id: Int!) { tableExport(id: $id) {
  format table gameSeed startedAt finishedAt totals winners
  options { players variant targetScore } clocks { pass play moon awayAfter }
  seats { seat name player bot }
  hands { hand seed dealCommitment publishedCommitment dealer passDirection dealt widow
          passes { to cards } tricks { leader cards winner } takenPoints moon { seat choice } points totals }
  moves { seq hand kind seat at action { type cards card choice } }
} }"""


def test_graphql_export_is_the_rest_document_typed_and_the_transcript_the_same_text() -> None:
    from games import accounts
    from tests.graphql.test_graphql import gql

    table = _finished_table(4, "classic", seed=3)
    _, token = accounts.player_create(app=None, name="reader")
    document = json.loads(json.dumps(exports.game_document(table)))

    data = gql(EXPORT_QUERY, token, id=table.pk)
    assert "errors" not in data, data
    got = data["data"]["tableExport"]
    assert got["gameSeed"] == document["game_seed"] and got["totals"] == document["totals"]
    assert got["winners"] == document["winners"]
    assert (
        got["options"]["targetScore"] == 50 and got["clocks"]["awayAfter"] == document["clocks"]["away_after"]
    )
    assert [h["dealt"] for h in got["hands"]] == [h["dealt"] for h in document["hands"]]
    assert [h["tricks"] for h in got["hands"]] == [h["tricks"] for h in document["hands"]]
    assert [h["publishedCommitment"] for h in got["hands"]] == [
        h["deal_commitment"] for h in document["hands"]
    ]
    assert [(m["seq"], m["kind"], m["seat"]) for m in got["moves"]] == [
        (m["seq"], m["kind"], m["seat"]) for m in document["moves"]
    ]
    plays = [m["action"]["card"] for m in got["moves"] if m["kind"] == "play"]
    assert plays == [m["action"]["card"] for m in document["moves"] if m["kind"] == "play"]

    text = gql("query($id: Int!) { tableTranscript(id: $id) }", token, id=table.pk)["data"]["tableTranscript"]
    assert text == exports.transcript(document)
    assert gql("query { tableExport(id: 999999) { table } }", token)["data"]["tableExport"] is None

    running = table_create(options={"players": 4}).table
    refused = gql("query($id: Int!) { tableExport(id: $id) { table } }", token, id=running.pk)
    assert refused["data"]["tableExport"] is None
    assert refused["errors"][0]["extensions"]["code"] == "not_finished"
