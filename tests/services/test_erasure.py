"""Erasing a player: after whole games, every row of every table, every stored file and every log line
is free of their personal data; their games still verify, their running game goes on played by the
server, the others' ratings still replay, and REST, GraphQL and the Python SDK erase alike, once."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import random
import uuid
from typing import Any

import httpx
import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

import games.records.archive as archive
from games import accounts, records, services
from games.engine import state_from_dict
from games.exports import game_document, transcript
from games.models import (
    ExportJob,
    Move,
    Player,
    PlayerToken,
    PushDevice,
    QuickPlay,
    Rating,
    Table,
    WebhookDelivery,
)
from games.privacy import pseudonym
from games.ratings import leaderboard
from games.services.erasure import erase_player, scrub_names
from games.services.ratings_replay import ratings_replay
from games.verify import check_export
from games.webhooks import endpoint_create

MARKERS = ("Zqxmarker", "zqx-ext-77", "zqxdevicetoken", "zqx-label", "zqx-export")


def client(secret: str | None = None) -> APIClient:
    c = APIClient()
    if secret:
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return c


def gql(secret: str, query: str, **variables: Any) -> dict[str, Any]:
    answer = client(secret).post("/graphql/", {"query": query, "variables": variables}, format="json")
    assert answer.status_code == 200, answer.content
    body: dict[str, Any] = answer.json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


def _table(app: Any, people: list[Player], *, rated: bool = False) -> Table:
    table = services.table_create(
        options={"players": 4, "target_score": 50},
        bots={2: "basic", 3: "basic"},
        clocks={"pass": None, "play": None, "moon": None},
        rated=rated,
        app=app,
    ).table
    assert table is not None
    for p in people:
        services.seat_join(table_id=table.pk, player=p)
    return Table.objects.get(pk=table.pk)


def _play(table: Table, rng: random.Random, *, moves: int | None = None) -> Table:
    """The seats the game waits for play random legal actions (as the service acts for a seat)."""
    made = 0
    while moves is None or made < moves:
        table.refresh_from_db()
        if table.status == Table.Status.FINISHED:
            break
        assert table.state is not None
        state = state_from_dict(table.state)
        seat = rng.choice(state.to_act())
        action = rng.choice(state.legal_actions(seat)).to_dict()
        services.action_submit(table_id=table.pk, position=seat, action=action)
        made += 1
    table.refresh_from_db()
    return table


def _dump_database() -> str:
    """Every value of every row of every table, as text (the sealed records decoded)."""
    out = []
    with connection.cursor() as cursor:
        for name in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(name)}")
            for row in cursor.fetchall():
                for value in row:
                    if isinstance(value, memoryview | bytes):
                        value = bytes(value).decode("utf-8", "replace")
                    out.append(str(value))
    for table in Table.objects.filter(record__isnull=False):
        out.extend(json.dumps(m.events) for m in records.decode(table, bytes(table.record.data)))
    for table in Table.objects.exclude(archive=""):  # the archives' records, decoded
        out.extend(json.dumps(m.events) for m in records.decode(table, archive.load(table).data))
    return "\n".join(out)


def _dump_files() -> str:
    out = []
    for name in ("archives", "exports"):
        location = getattr(storages[name], "location", None)
        for root, _, files in os.walk(location or "/nonexistent"):
            for file in files:
                with open(os.path.join(root, file), "rb") as f:
                    out.append(f.read().decode("utf-8", "replace"))
    return "\n".join(out)


def test_the_walker_renames_only_the_players_own_dicts() -> None:
    data: dict[str, Any] = {
        "seating": [
            {"position": 0, "player": 7, "name": "Ada"},
            {"position": 1, "player": 70, "name": "Bob"},
            {"position": 2, "player": None, "name": None},
        ],
        "player": {"id": 7, "name": "Ada", "external_id": "u-1"},
        "tournament": {"id": 7, "name": "Spring cup"},
        "events": [["seat_taken", {"seat": 0, "player": 7, "name": "Ada"}, None, 0]],
    }
    scrubbed = scrub_names(data, 7, "Erased-x")
    assert scrubbed["seating"][0]["name"] == "Erased-x" and scrubbed["seating"][1]["name"] == "Bob"
    assert scrubbed["player"] == {"id": 7, "name": "Erased-x", "external_id": ""}
    assert scrubbed["tournament"] == {"id": 7, "name": "Spring cup"}  # not a player's dict
    assert scrubbed["events"][0][1]["name"] == "Erased-x"
    assert data["seating"][0]["name"] == "Ada"  # the input is left as it was


@pytest.mark.slow  # whole games through the service
@pytest.mark.django_db(transaction=True)
def test_after_erasure_no_marker_is_left_anywhere_and_the_games_still_hold(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger: the service's, the access log, the libraries'
    app, key = accounts.app_create(name="the app")
    endpoint_create(app=app, url="http://127.0.0.1:9/hook", event_types=["*"])
    endpoint_create(app=app, url="http://127.0.0.1:9/erased", event_types=["player.erased"])
    zed, zed_token = accounts.player_create(app=app, name="Zqxmarker Name", external_id="zqx-ext-77")
    accounts.set_language(zed, "eu")
    bob, bob_token = accounts.player_create(app=app, name="Bob")
    PushDevice.objects.create(
        player=zed, scope=app.pk, kind="fcm", token="zqxdevicetoken-1", label="zqx-label", language="eu"
    )
    rng = random.Random(36)

    finished = _play(_table(app, [zed, bob], rated=True), rng)
    assert finished.status == Table.Status.FINISHED
    # A table Zed sat at and left before it began: it finishes without them, its log (then its
    # sealed record) still naming them; and a finished game of theirs already in the archive.
    left = _table(app, [zed])
    services.seat_leave(table_id=left.pk, player=zed)
    services.seat_join(table_id=left.pk, player=bob)
    services.bot_add(table_id=left.pk, level="basic")
    left = _play(left, rng)
    assert left.status == Table.Status.FINISHED and left.seat_of(zed.pk) is None
    archived = _play(_table(app, [zed, bob]), rng)
    later = timezone.now() + dt.timedelta(days=1)
    assert records.seal(left.pk, now=later) and records.seal(finished.pk, now=later)
    assert archive.archive(archived.pk)
    assert "Zqxmarker" in _dump_database() + _dump_files()
    running = _play(_table(app, [zed, bob]), rng, moves=6)
    assert running.status != Table.Status.FINISHED
    zed_seat = running.seat_of(zed.pk)
    assert zed_seat is not None
    open_table = services.table_create(app=app).table
    assert open_table is not None
    services.seat_join(table_id=open_table.pk, player=zed)
    services.invite_create(table_id=open_table.pk, player=zed, scope=app)
    # Bob's retried join keeps its answer, which shows Zed's seat by name.
    joined = client(bob_token).post(
        f"/api/v1/tables/{open_table.pk}/join", {}, format="json", HTTP_IDEMPOTENCY_KEY="bob-join"
    )
    assert joined.status_code == 200 and "Zqxmarker Name" in joined.content.decode()
    services.quick_play(player=zed, app=app, wait_seconds=300)
    storages["exports"].save("zqx-export.json", ContentFile(b'{"name": "Zqxmarker Name"}'))
    ExportJob.objects.create(
        uuid=uuid.uuid4(), app=app, player=zed, requested_by=f"player:{zed.pk}", file="zqx-export.json"
    )
    assert "Zqxmarker" in _dump_database()
    before = Move.objects.filter(table=running).count()

    erased = client(key).delete(f"/api/v1/players/{zed.pk}")
    assert erased.status_code == 200, erased.content
    answer = erased.json()
    assert answer["id"] == zed.pk and answer["erased"] is True

    # Once: a second erase (GraphQL, then the service) answers the same and changes nothing.
    mutation = "mutation($id: Int!) { erasePlayer(playerId: $id) { id erased erasedAt errors { code } } }"
    again = gql(key, mutation, id=zed.pk)["erasePlayer"]
    assert again == {"id": zed.pk, "erased": True, "erasedAt": answer["erased_at"], "errors": []}
    assert erase_player(zed.pk, by="test").body() == answer
    told = WebhookDelivery.objects.filter(event_types=["player.erased"])
    assert told.count() == 2 and {d.table_id for d in told} == {None}  # the "*" endpoint and the other
    body = json.loads(told.first().body)  # type: ignore[union-attr]
    assert body["type"] == "player.erased" and body["player"] == zed.pk
    assert body["erased_at"] == answer["erased_at"] and "external_id" not in body

    # Nothing personal is left: not in the database, not in a stored file, not in a log line.
    database, files = _dump_database(), _dump_files()
    for marker in MARKERS:
        assert marker not in database, marker
        assert marker not in files, marker
        assert marker not in caplog.text, marker
    zed.refresh_from_db()
    assert (zed.name, zed.external_id, zed.language) == (pseudonym(zed.pk), "", "")
    assert not PlayerToken.objects.filter(player=zed).exists()
    assert not QuickPlay.objects.filter(player=zed).exists()
    assert client(zed_token).get("/api/v1/me").status_code == 401

    # The finished games keep the seat, as the pseudonym, and still verify: sealed or archived.
    for game in (finished, archived):
        game.refresh_from_db()
        assert game.seat_of(zed.pk) is not None
        document = game_document(game)
        assert check_export(document)["ok"]
        assert pseudonym(zed.pk) in transcript(document)
    assert pseudonym(zed.pk) in json.dumps([m.events for m in records.moves(Table.objects.get(pk=left.pk))])
    assert [r.player_id for r in leaderboard(app, "classic-4")] == [bob.pk]
    assert ratings_replay()[1] == []

    # The open table's seat was left; the running game goes on, the server playing Zed's seat.
    open_table.refresh_from_db()
    assert open_table.seat_of(zed.pk) is None
    running.refresh_from_db()
    assert running.seating[zed_seat]["away"] and running.seating[zed_seat]["name"] == pseudonym(zed.pk)
    running = _play(running, rng)  # Bob and the bots to the end; the server acts for Zed's seat
    assert running.status == Table.Status.FINISHED
    served = Move.objects.filter(table=running, position=zed_seat, seq__gt=before, kind__in=["pass", "play"])
    assert served.exists()
    assert not Rating.objects.filter(player=zed).exists()  # the game's end gave no rating back
    assert ratings_replay()[1] == []


@pytest.mark.django_db(transaction=True)
def test_a_guest_erases_themselves_by_rest_graphql_and_the_sdk_and_another_app_cannot() -> None:
    from hearts_client import HeartsClient
    from hearts_client.errors import NotFound

    from hearts_service.wsgi import application

    guest = client().post("/api/v1/guests", {"name": "Zqxmarker Guest"}, format="json").json()
    gone = client(guest["token"]).delete("/api/v1/me")
    assert gone.status_code == 200 and gone.json()["id"] == guest["player"]["id"]
    assert client(guest["token"]).delete("/api/v1/me").status_code == 401  # the token went with them

    other = client().post("/api/v1/guests", {"name": "Other"}, format="json").json()
    mutation = "mutation { eraseMe { id erased errors { code } } }"
    assert gql(other["token"], mutation)["eraseMe"] == {
        "id": other["player"]["id"],
        "erased": True,
        "errors": [],
    }

    _, key = accounts.app_create(name="mine")
    _, stranger_key = accounts.app_create(name="another")
    theirs = client(key).post("/api/v1/players", {"name": "Zqxmarker Sdk"}, format="json").json()
    wsgi = httpx.WSGITransport(app=application)
    with httpx.Client(transport=wsgi) as apps, httpx.Client(transport=wsgi) as strangers:
        with pytest.raises(NotFound):
            HeartsClient("http://localhost", stranger_key, http=strangers).players.erase(
                theirs["player"]["id"]
            )
        sdk = HeartsClient("http://localhost", key, http=apps)
        first = sdk.players.erase(theirs["player"]["id"])
        assert first["erased"] and sdk.players.erase(theirs["player"]["id"]) == first
    with httpx.Client(transport=wsgi) as mine:
        self_made = client().post("/api/v1/guests", {"name": "Zqxmarker Self"}, format="json").json()
        me = HeartsClient("http://localhost", self_made["token"], http=mine)
        assert me.me.erase()["id"] == self_made["player"]["id"]
    assert not Player.objects.filter(name__startswith="Zqxmarker").exists()
    assert client(key).delete("/api/v1/players/999999").status_code == 404
