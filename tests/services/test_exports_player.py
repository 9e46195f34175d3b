"""A player's data export: one document of everything that is theirs (a finished game whole, a running
one only as they see it, never another seat's hidden card), valid against its committed JSON Schema;
made in the request or by the task (twice is once), readable by the player and their app only,
expired with its file; the same over REST and GraphQL."""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import storages
from django.test import override_settings
from django.utils import timezone
from jsonschema import Draft202012Validator
from rest_framework.test import APIClient

from games import accounts, privacy
from games.contracts.openapi import openapi_document
from games.contracts.player_export_schema import FORMAT as SCHEMA_FORMAT
from games.contracts.player_export_schema import SCHEMA_PATH, export_schema
from games.engine import state_from_dict
from games.engine.cards import names
from games.infra.ratelimit import RateLimited
from games.models import (
    App,
    ExportJob,
    Invite,
    Player,
    PlayerToken,
    PushDevice,
    Rating,
    RatingChange,
    Seat,
    Table,
)
from games.services import action_submit, exports, invite_create, seat_join, table_create
from games.tasks import run_export

pytestmark = pytest.mark.django_db

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "schemas" / "player-export.schema.json"
DEVICE_TOKEN = "fcm-registration-token-" + "x" * 40 + "Ab12Cd"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text())


def _play(table: Table, rng: random.Random, *, until: int | None = None) -> Table:
    """Random legal actions for whichever seat is to act, to the end (or for `until` actions)."""
    done = 0
    while until is None or done < until:
        table.refresh_from_db()
        if table.status == Table.Status.FINISHED:
            break
        state = state_from_dict(table.state)
        seat = rng.choice(state.to_act())
        action_submit(
            table_id=table.pk, position=seat, action=rng.choice(state.legal_actions(seat)).to_dict()
        )
        done += 1
    table.refresh_from_db()
    return table


def _seated(app: App, player: Player, *, bots: int = 3) -> Table:
    table = table_create(
        app=app, options={"players": 4, "target_score": 50}, bots=dict.fromkeys(range(1, 1 + bots), "basic")
    ).table
    assert table is not None
    seat_join(table_id=table.pk, player=player, position=0, scope=app)
    table.refresh_from_db()
    return table


@pytest.fixture
def world() -> dict[str, Any]:
    """Ada of an app, at a finished, a running and an open table, with an invite and a device."""
    app, _ = accounts.app_create(name="studio")
    ada, token = accounts.player_create(app=app, name="Ada", external_id="ext-ada")
    rng = random.Random(7)
    finished = _play(_seated(app, ada), rng)
    running = _play(_seated(app, ada), rng, until=12)  # the passes and a few cards of the first hand
    open_table = _seated(app, ada, bots=1)
    invite_create(table_id=open_table.pk, player=ada, scope=app, uses=3)
    PushDevice.objects.create(player=ada, scope=app.pk, kind="fcm", token=DEVICE_TOKEN, label="phone")
    assert finished.status == Table.Status.FINISHED and running.status == Table.Status.PLAYING
    assert open_table.status == Table.Status.OPEN
    return {
        "app": app,
        "ada": ada,
        "token": token,
        "finished": finished,
        "running": running,
        "open": open_table,
    }


def _strings(node: Any) -> Iterator[str]:
    """Every key and string value, but the table's options (`omnibus_card: "JD"` names a rule)."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            if key != "options":
                yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def _hidden_from(table: Table, seat: int) -> set[str]:
    """The card codes of a running table that `seat` may not see: every other seat's hand now,
    but the cards `seat` itself passed them."""
    state = state_from_dict(table.state)
    others = set().union(*(names(state.hands[s]) for s in range(len(state.hands)) if s != seat))
    return others - set(names(state.passes[seat]))


@pytest.mark.slow
def test_the_document_holds_the_players_data_and_no_card_they_may_not_see(
    world: dict[str, Any], schema: dict[str, Any]
) -> None:
    ada, finished, running, open_table = world["ada"], world["finished"], world["running"], world["open"]
    doc = exports.player_document(ada)
    Draft202012Validator(schema).validate(doc)
    assert (doc["format"], doc["schema"]) == (exports.FORMAT, exports.SCHEMA_PATH)
    assert doc["profile"] == {
        "id": ada.pk,
        "app": world["app"].pk,
        "name": "Ada",
        "external_id": "ext-ada",
        "language": "",
        "created_at": doc["profile"]["created_at"],
    }
    assert len(doc["tokens"]) == 1 and doc["tokens"][0]["revoked_at"] is None
    tables = {t["id"]: t for t in doc["tables"]}
    assert set(tables) == {finished.pk, running.pk, open_table.pk}
    whole = tables[finished.pk]
    assert whole["game"]["format"] == "hearts-game/1" and whole["view"] is None
    assert whole["game"]["game_seed"] == finished.seed  # the finished game is whole
    assert tables[running.pk]["game"] is None and tables[running.pk]["view"]["your_seat"] == 0
    assert tables[open_table.pk]["view"]["status"] == "open"
    assert {m["seat"] for m in doc["moves"]} == {0}  # only their own seat's moves
    assert {m["table"] for m in doc["moves"]} == {finished.pk, running.pk, open_table.pk}
    assert [i["uses_left"] for i in doc["invites"]] == [3] and "code_hash" not in json.dumps(doc)
    (device,) = doc["devices"]
    assert device["token_end"] == "Ab12Cd" and DEVICE_TOKEN not in json.dumps(doc)
    # No card of the running table that Ada may not see, anywhere that table shows up.
    hidden = _hidden_from(running, 0)
    assert len(hidden) >= 20
    about_running = [tables[running.pk], [m for m in doc["moves"] if m["table"] == running.pk]]
    leaked = hidden & set(_strings(about_running))
    assert not leaked, leaked
    for secret in (running.seed, *(h.seed for h in running.hands.filter(finished=False))):
        assert secret not in json.dumps(doc)


def test_the_committed_schema_is_the_generated_one() -> None:
    """Regenerate with:
    python -m games.contracts.player_export_schema > docs/schemas/player-export.schema.json"""
    generated = export_schema(openapi_document())
    Draft202012Validator.check_schema(generated)
    assert json.loads(SCHEMA_FILE.read_text()) == generated
    assert (SCHEMA_FORMAT, SCHEMA_PATH) == (exports.FORMAT, exports.SCHEMA_PATH)
    assert "#/components/" not in json.dumps(generated)


def test_a_small_export_is_done_in_the_request_and_its_file_is_the_document(schema: dict[str, Any]) -> None:
    app, _ = accounts.app_create(name="studio")
    bob, _ = accounts.player_create(app=app, name="Bob")
    job = exports.request_export(accounts.Principal(app=None, player=bob), bob.pk)
    assert job.status == ExportJob.Status.DONE and job.file == f"{job.uuid}.json"
    stored = storages["exports"].open(job.file).read()
    assert len(stored) == job.size
    doc = json.loads(stored)
    Draft202012Validator(schema).validate(doc)
    assert doc["profile"]["name"] == "Bob" and doc["tables"] == []
    assert job.expires_at is not None and job.expires_at > timezone.now() + dt.timedelta(hours=1)
    with pytest.raises(RateLimited) as limited:  # one job a minute per player
        exports.request_export(accounts.Principal(app=app, player=None), bob.pk)
    assert limited.value.limit == "export" and 1 <= limited.value.retry_after <= 60
    assert ExportJob.objects.filter(player=bob).count() == 1


@override_settings(EXPORT_INLINE_MAX_TABLES=0)
def test_a_large_export_is_pending_until_the_task_and_a_second_run_changes_nothing(
    schema: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    app, _ = accounts.app_create(name="studio")
    cy, _ = accounts.player_create(app=app, name="Cy")
    _seated(app, cy, bots=1)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        job = exports.request_export(accounts.Principal(app=app, player=None), cy.pk)
    assert job.status == ExportJob.Status.PENDING and not job.file and len(queued) == 1
    assert exports.job_body(job)["document"] is None
    assert run_export(str(job.uuid)) == "done"
    job.refresh_from_db()
    first = (job.file, job.size, job.finished_at, storages["exports"].open(job.file).read())
    assert job.status == ExportJob.Status.DONE
    Draft202012Validator(schema).validate(json.loads(first[3]))
    assert run_export(str(job.uuid)) == "done"  # a duplicate delivery: nothing changes
    job.refresh_from_db()
    assert (job.file, job.size, job.finished_at, storages["exports"].open(job.file).read()) == first
    assert sorted(storages["exports"].listdir("")[1]).count(f"{job.uuid}.json") == 1


@override_settings(EXPORT_INLINE_MAX_TABLES=0)
def test_a_rerun_after_a_worker_died_past_the_write_overwrites_the_same_file(
    django_capture_on_commit_callbacks: Any,
) -> None:
    app, _ = accounts.app_create(name="studio")
    dee, _ = accounts.player_create(app=app, name="Dee")
    _seated(app, dee, bots=1)
    with django_capture_on_commit_callbacks(execute=False):
        job = exports.request_export(accounts.Principal(app=app, player=None), dee.pk)
    storage = storages["exports"]
    storage.save(exports.document_name(job), __import__("io").BytesIO(b"half a document"))
    assert run_export(str(job.uuid)) == "done"
    job.refresh_from_db()
    assert job.file == exports.document_name(job)  # the same name, not a renamed second copy
    assert json.loads(storage.open(job.file).read())["profile"]["name"] == "Dee"
    assert [n for n in storage.listdir("")[1] if n.startswith(str(job.uuid))] == [job.file]


def test_expire_deletes_jobs_and_files_past_their_time() -> None:
    app, _ = accounts.app_create(name="studio")
    eve, _ = accounts.player_create(app=app, name="Eve")
    job = exports.request_export(accounts.Principal(app=None, player=eve), eve.pk)
    storage = storages["exports"]
    assert storage.exists(job.file)
    assert exports.expire(now=timezone.now()) == 0  # not yet
    assert exports.expire(now=job.expires_at + dt.timedelta(seconds=1)) == 1
    assert not storage.exists(job.file) and not ExportJob.objects.filter(pk=job.pk).exists()


def _client(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_rest_the_player_and_their_app_read_it_and_anyone_else_gets_404(schema: dict[str, Any]) -> None:
    app, key = accounts.app_create(name="studio")
    _, other_key = accounts.app_create(name="elsewhere")
    fay, fay_token = accounts.player_create(app=app, name="Fay")
    _, gus_token = accounts.player_create(app=app, name="Gus")
    made = _client(fay_token).post("/api/v1/me/exports", {}, format="json")
    assert made.status_code == 201, made.content
    job = made.json()
    assert job["status"] == "done" and job["document"] == f"/api/v1/exports/{job['id']}/document"
    for reader in (fay_token, key):
        assert _client(reader).get(f"/api/v1/exports/{job['id']}").json() == job
        download = _client(reader).get(job["document"])
        assert download.status_code == 200 and download["Content-Type"] == "application/json"
        Draft202012Validator(schema).validate(json.loads(download.content))
    for stranger in (gus_token, other_key):
        for path in (f"/api/v1/exports/{job['id']}", job["document"]):
            refused = _client(stranger).get(path)
            assert refused.status_code == 404 and refused.json()["code"] == "not_found"
    # An app exports its own players only; the schema is served where the document says.
    assert _client(other_key).post(f"/api/v1/players/{fay.pk}/exports").json()["code"] == "not_found"
    assert _client(key).post("/api/v1/me/exports").json()["code"] == "player_token_required"
    assert _client(fay_token).post(f"/api/v1/players/{fay.pk}/exports").json()["code"] == "app_key_required"
    again = _client(key).post(f"/api/v1/players/{fay.pk}/exports")
    assert again.status_code == 429 and again.json()["code"] == "rate_limited" and again["Retry-After"]
    assert APIClient().get(SCHEMA_PATH).json() == schema


@override_settings(EXPORT_INLINE_MAX_TABLES=0)
def test_rest_a_pending_export_answers_202_and_no_document_yet(
    django_capture_on_commit_callbacks: Any,
) -> None:
    app, key = accounts.app_create(name="studio")
    hal, _ = accounts.player_create(app=app, name="Hal")
    _seated(app, hal, bots=1)
    with django_capture_on_commit_callbacks(execute=False):
        made = _client(key).post(f"/api/v1/players/{hal.pk}/exports")
    assert made.status_code == 202 and made.json()["status"] == "pending"
    pending = _client(key).get(f"/api/v1/exports/{made.json()['id']}/document")
    assert pending.status_code == 422 and pending.json()["code"] == "not_finished"


def test_graphql_creates_and_reads_an_export_for_its_owner_only() -> None:
    app, key = accounts.app_create(name="studio")
    ivy, ivy_token = accounts.player_create(app=app, name="Ivy")
    _, jon_token = accounts.player_create(app=app, name="Jon")
    mutation = "mutation { createMyExport { export { id status size document } errors { code } } }"
    out = _client(ivy_token).post("/graphql/", {"query": mutation}, format="json").json()
    made = out["data"]["createMyExport"]
    assert made["errors"] == [] and made["export"]["status"] == "done" and made["export"]["size"] > 0
    query = "query($id: String!) { export(id: $id) { id status document } }"
    variables = {"id": made["export"]["id"]}
    for reader, seen in ((key, True), (ivy_token, True), (jon_token, False)):
        answer = (
            _client(reader)
            .post("/graphql/", {"query": query, "variables": variables}, format="json")
            .json()["data"]["export"]
        )
        assert (answer is not None) == seen
        if seen:
            assert answer["document"] == made["export"]["document"]
    by_app = "mutation($p: Int!) { createPlayerExport(playerId: $p) { export { id } errors { code } } }"
    stranger = accounts.app_create(name="elsewhere")[1]
    refused = (
        _client(stranger)
        .post("/graphql/", {"query": by_app, "variables": {"p": ivy.pk}}, format="json")
        .json()["data"]["createPlayerExport"]
    )
    assert refused == {"export": None, "errors": [{"code": "not_found"}]}


def _leaves(node: Any) -> Iterator[Any]:
    """Every value of the document, containers included (a move's action is a whole dict)."""
    yield node
    if isinstance(node, dict):
        for value in node.values():
            yield from _leaves(value)
    elif isinstance(node, list):
        for value in node:
            yield from _leaves(value)


def _shown(value: Any) -> Any:
    """A stored value as the document writes it."""
    if isinstance(value, dt.datetime):
        return value.isoformat().replace("+00:00", "Z")
    return value


@pytest.mark.slow
def test_every_field_games_privacy_marks_exported_is_in_the_document(world: dict[str, Any]) -> None:
    """The classification and the export cannot drift: each `exported` field's value, for every row
    of the player's, is somewhere in their document (a device's token as its last characters)."""
    ada, app = world["ada"], world["app"]
    other, _ = accounts.player_create(app=app, name="Bea")
    Rating.objects.create(app=app, player=ada, family="classic-4", mu=26.5, sigma=7.25, score=4.75, games=1)
    RatingChange.objects.create(
        table=world["finished"], player=ada, family="classic-4", position=0, place=2,
        mu_before=25.0, sigma_before=8.25, mu_after=26.5, sigma_after=7.25,
    )  # fmt: skip
    accounts.set_language(ada, "eu")
    ada.refresh_from_db()
    doc = exports.player_document(ada)
    values = [_shown(v) for v in _leaves(doc)]
    rows_of: dict[str, list[Any]] = {
        "Player": [ada],
        "PlayerToken": list(PlayerToken.objects.filter(player=ada)),
        "Table": list(Table.objects.filter(seats__player=ada)),
        "Seat": list(Seat.objects.filter(player=ada)),
        "Move": [  # their actions (a join's payload is only their id)
            m
            for t in Table.objects.filter(seats__player=ada)
            for m in t.moves.filter(position=t.seat_of(ada.pk), kind__in=["pass", "play", "moon"])
        ],
        "Invite": list(Invite.objects.filter(created_by=f"player:{ada.pk}")),
        "Rating": list(Rating.objects.filter(player=ada)),
        "RatingChange": list(RatingChange.objects.filter(player=ada)),
        "PushDevice": list(PushDevice.objects.filter(player=ada)),
    }
    assert other.pk not in [r.pk for r in rows_of["Player"]]
    missing = []
    for label, field in privacy.FIELDS.items():
        if not field.exported:
            continue
        model, name = label.split(".")[1:]
        rows = rows_of.get(model)
        assert rows, f"{label}: the test has no row of {model} to look for"
        for row in rows:
            value = getattr(row, f"{name}_id" if name in ("app", "player", "table") else name)
            if label == "games.PushDevice.token":
                value = value[-exports.DEVICE_TOKEN_SHOWN :]
            if label == "games.Table.seating":  # the player's own seat row, as the game shows it
                value = next(s["name"] for s in value if s["player"] == ada.pk)
            if _shown(value) not in values:
                missing.append((label, value))
    assert not missing, f"exported in games.privacy but not in the document: {missing[:5]}"
