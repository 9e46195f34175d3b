"""Archives: a finished table past its app's retention moves to one compressed file, answers every
read from it exactly as before, comes back on restore, and goes with its app's data."""

from __future__ import annotations

import datetime as dt
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.files.storage import storages
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

import games.records.archive as archive
from games import accounts
from games.engine import state_from_dict
from games.models import App, GameRecord, Move, Player, Table
from games.records.seal import seal
from games.services import action_submit, seat_join, table_create
from games.tasks import housekeeping
from games.verify import check_export

pytestmark = pytest.mark.django_db


def _client(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def _finished_table(app: App | None, player: Player, seed: int) -> Table:
    """A game to 50 where `player` sits at seat 0 and plays random legal cards; bots hold the rest."""
    out = table_create(
        app=app,
        options={"players": 4, "target_score": 50},
        bots={1: "basic", 2: "basic", 3: "basic"},
        clocks={"pass": None, "play": None, "moon": None},
    )
    assert out.table is not None
    table = out.table
    seat_join(table_id=table.pk, player=player)
    rng = random.Random(seed)
    while True:
        table.refresh_from_db()
        if table.status == Table.Status.FINISHED:
            return table
        assert table.state is not None
        state = state_from_dict(table.state)
        seat = rng.choice(state.to_act())
        action_submit(
            table_id=table.pk, position=seat, action=rng.choice(state.legal_actions(seat)).to_dict()
        )


def _pages(client: APIClient, table_id: int) -> dict[str, Any]:
    """Every read of a finished table's history, as bytes, the way a client pages them."""
    base = f"/api/v1/tables/{table_id}"
    answers: dict[str, Any] = {}
    for path in ("", "/export", "/transcript", "/hands", "/scoresheet", "/events", "/events?after=40"):
        response = client.get(base + path)
        answers[path] = (response.status_code, response.content)
    hands = client.get(base + "/hands").json()["hands"]
    for hand in hands:
        response = client.get(f"{base}/hands/{hand['number']}")
        answers[f"/hands/{hand['number']}"] = (response.status_code, response.content)
    after = 0
    while True:  # the move log, page by page
        response = client.get(f"{base}/moves?after={after}")
        answers[f"/moves?after={after}"] = (response.status_code, response.content)
        moves = response.json()["moves"]
        if not moves:
            break
        after = moves[-1]["seq"]
    return answers


@pytest.fixture(autouse=True, scope="module")
def own_archives(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """This module's archives in a directory of its own (each test starts it empty): kept until
    the module is done, as the suite's replay check reads the archived tables after each test."""
    location = str(tmp_path_factory.mktemp("archives"))
    backend = {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": location}}
    with override_settings(STORAGES={**django_settings.STORAGES, "archives": backend}):
        yield


@pytest.fixture(autouse=True)
def empty_archives() -> None:
    for path in _root().rglob("*.hga"):
        path.unlink()


@pytest.fixture
def game() -> dict[str, Any]:
    """An app's finished game, its player's and a spectator's tokens and the app's key."""
    app, key = accounts.app_create(name="cards")
    player, token = accounts.player_create(app=app, name="Ada")
    _, watcher = accounts.player_create(app=app, name="Watcher")
    table = _finished_table(app, player, seed=7)
    return {"app": app, "key": key, "player": token, "spectator": watcher, "table": table}


def _views(game: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {who: _pages(_client(game[who]), game["table"].pk) for who in ("player", "spectator", "key")}


def _files() -> list[str]:
    return sorted(str(p.relative_to(_root())) for p in _root().rglob("*.hga"))


def _root() -> Path:
    return Path(storages["archives"].path(""))


@pytest.mark.slow
def test_an_archived_table_answers_every_read_byte_for_byte_and_its_export_still_verifies(
    game: dict[str, Any],
) -> None:
    table = game["table"]
    before = _views(game)
    assert archive.archive(table.pk)
    table.refresh_from_db()
    assert table.archived_at is not None and table.state is None
    assert table.archive.startswith(f"{game['app'].pk}/{table.pk}-") and table.archive.endswith(".hga")
    assert not GameRecord.objects.filter(table=table).exists()
    assert not Move.objects.filter(table=table).exists()
    assert table.archive in _files()
    after = _views(game)
    for who in before:
        for path, answer in before[who].items():
            assert after[who][path] == answer, (who, path, _first_difference(answer[1], after[who][path][1]))
    export = _client(game["player"]).get(f"/api/v1/tables/{table.pk}/export").json()
    assert check_export(export)["ok"]


@pytest.mark.slow
def test_a_restored_table_is_sealed_again_with_its_state_and_the_same_answers(
    game: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    table = game["table"]
    assert seal(table.pk, now=timezone.now() + dt.timedelta(days=1))
    table.refresh_from_db()
    state = table.state  # sealed: kept only when the replay would not give it back
    before = _views(game)
    assert archive.archive(table.pk)
    name = Table.objects.get(pk=table.pk).archive
    with django_capture_on_commit_callbacks(execute=True):
        assert archive.restore(table.pk)
    table.refresh_from_db()
    assert table.archived_at is None and table.archive == "" and table.state == state
    assert GameRecord.objects.filter(table=table).exists()
    assert name not in _files()  # the file went once the restore was committed
    assert _views(game) == before
    assert not archive.restore(table.pk)  # not archived any more: nothing to restore


@pytest.mark.slow
def test_housekeeping_archives_what_is_past_its_apps_retention_and_nothing_younger(
    game: dict[str, Any],
) -> None:
    app, old = game["app"], game["table"]
    app.retention_days = 1
    app.save()
    player = Player.objects.get(app=app, name="Ada")
    young = _finished_table(app, player, seed=8)
    guest = Player.objects.create(name="guest")
    guest_old = _finished_table(None, guest, seed=9)
    with override_settings(SEAL_AFTER_SECONDS=0):
        assert housekeeping()["sealed"] == 3
    two_days_ago = timezone.now() - dt.timedelta(days=2)  # finished and sealed then
    Table.objects.filter(pk__in=[old.pk, guest_old.pk]).update(finished_at=two_days_ago)
    GameRecord.objects.filter(table__in=[old.pk, guest_old.pk]).update(created_at=two_days_ago)
    with override_settings(SEAL_AFTER_SECONDS=0, ARCHIVE_AFTER_DAYS=3):
        housekeeping()
        archived = set(Table.objects.filter(archived_at__isnull=False).values_list("pk", flat=True))
        assert archived == {old.pk}  # the guests' table waits for ARCHIVE_AFTER_DAYS (3 days)
    with override_settings(SEAL_AFTER_SECONDS=0, ARCHIVE_AFTER_DAYS=1):
        housekeeping()
        archived = set(Table.objects.filter(archived_at__isnull=False).values_list("pk", flat=True))
        assert archived == {old.pk, guest_old.pk}
        assert Table.objects.get(pk=guest_old.pk).archive.startswith(f"guests/{guest_old.pk}-")
        assert Table.objects.get(pk=young.pk).archived_at is None  # finished just now
        # A restored table stays for a whole retention period again.
        assert archive.restore(old.pk)
        housekeeping()
        assert Table.objects.get(pk=old.pk).archived_at is None
        assert archive.archive_due(now=timezone.now() + dt.timedelta(days=2)) == 2  # old, young


@pytest.mark.slow
def test_a_crash_between_the_write_and_the_commit_leaves_a_usable_table_and_a_swept_orphan(
    game: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    table = game["table"]
    before = _views(game)
    written = archive._write

    def crash(name: str, blob: bytes) -> None:
        written(name, blob)
        raise RuntimeError("killed after the write")

    monkeypatch.setattr(archive, "_write", crash)
    with pytest.raises(RuntimeError):
        archive.archive(table.pk)
    monkeypatch.undo()
    table.refresh_from_db()
    assert table.archived_at is None and table.archive == ""
    assert _views(game) == before
    assert len(_files()) == 1  # the orphan
    assert archive.sweep_orphans() == 0  # younger than an hour: perhaps an archive in progress
    assert archive.sweep_orphans(older_than=dt.timedelta(0)) == 1
    assert _files() == []
    assert archive.archive(table.pk)
    assert archive.sweep_orphans(older_than=dt.timedelta(0)) == 0  # the named file stays
    assert _views(game) == before


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_two_racing_archive_calls_archive_once(game: dict[str, Any]) -> None:
    table_id = game["table"].pk
    results: list[bool] = []
    barrier = threading.Barrier(2)

    def run() -> None:
        try:
            barrier.wait()
            results.append(archive.archive(table_id))
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False, True]
    assert _files() == [Table.objects.get(pk=table_id).archive]


@pytest.mark.slow
def test_deleting_an_apps_archives_removes_its_files_only(
    game: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    guest = Player.objects.create(name="guest")
    theirs = _finished_table(None, guest, seed=3)
    assert archive.archive(game["table"].pk) and archive.archive(theirs.pk)
    with django_capture_on_commit_callbacks(execute=True):
        assert archive.delete_app_archives(game["app"].pk) == 1
    assert _files() == [Table.objects.get(pk=theirs.pk).archive]
    assert Table.objects.get(pk=game["table"].pk).archive == ""
    Table.objects.filter(app=game["app"]).delete()  # as deleting the app's data goes on to do


@pytest.mark.slow
def test_the_app_restores_its_own_archived_table_only(game: dict[str, Any]) -> None:
    table_id = game["table"].pk
    app = _client(game["key"])
    refused = app.post(f"/api/v1/tables/{table_id}/restore")
    assert refused.status_code == 409 and refused.json()["code"] == "not_archived"
    assert archive.archive(table_id)
    _, other_key = accounts.app_create(name="other")
    assert _client(other_key).post(f"/api/v1/tables/{table_id}/restore").status_code == 404
    refused = _client(game["player"]).post(f"/api/v1/tables/{table_id}/restore")
    assert refused.status_code == 422 and refused.json()["code"] == "app_key_required"
    restored = app.post(f"/api/v1/tables/{table_id}/restore")
    assert restored.status_code == 200 and restored.json()["status"] == "finished"
    assert Table.objects.get(pk=table_id).archived_at is None


@pytest.mark.slow
def test_the_archive_command_archives_restores_and_archives_an_apps_tables(game: dict[str, Any]) -> None:
    table_id = game["table"].pk
    call_command("archive", "--table", str(table_id))
    assert Table.objects.get(pk=table_id).archived_at is not None
    call_command("archive", "--restore", str(table_id))
    assert Table.objects.get(pk=table_id).archived_at is None
    call_command("archive", "--app", str(game["app"].pk), "--all")
    assert Table.objects.get(pk=table_id).archived_at is not None


def test_an_app_reads_and_sets_its_retention_period() -> None:
    app, key = accounts.app_create(name="cards")
    client = _client(key)
    assert client.get("/api/v1/app").json() == {"id": app.pk, "name": "cards", "retention_days": None}
    changed = client.patch("/api/v1/app", {"retention_days": 7}, format="json")
    assert changed.status_code == 200 and changed.json()["retention_days"] == 7
    assert App.objects.get(pk=app.pk).retention_days == 7
    bad = client.patch("/api/v1/app", {"retention_days": 3651}, format="json")
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_input"
    assert (
        client.patch("/api/v1/app", {"retention_days": None}, format="json").json()["retention_days"] is None
    )
    _, token = accounts.player_create(app=app, name="Ada")
    refused = _client(token).get("/api/v1/app")
    assert refused.status_code == 422 and refused.json()["code"] == "app_key_required"
    query = "{ app { id name retentionDays } }"
    mutation = "mutation { updateApp(retentionDays: 0) { app { retentionDays } errors { code } } }"
    assert client.post("/graphql", {"query": query}, format="json").json()["data"]["app"] == {
        "id": app.pk,
        "name": "cards",
        "retentionDays": None,
    }
    answer = client.post("/graphql", {"query": mutation}, format="json").json()["data"]["updateApp"]
    assert answer == {"app": {"retentionDays": 0}, "errors": []}


def test_an_archive_file_is_checked_before_it_is_read() -> None:
    blob = archive.pack(12, b"\x01\x02record", None)
    assert archive.unpack(blob) == (12, b"\x01\x02record", None)
    assert archive.unpack(archive.pack(3, b"x" * 500, {"phase": "over"})) == (
        3,
        b"x" * 500,
        {"phase": "over"},
    )
    damaged = blob[:-1] + bytes([blob[-1] ^ 1])
    with pytest.raises(archive.ArchiveError):
        archive.unpack(damaged)
    with pytest.raises(archive.ArchiveError):
        archive.unpack(b"PK\x03\x04 not ours")


def _first_difference(before: bytes, after: bytes) -> str:
    """Where two answers part, with some context (the assertion message of a changed answer)."""
    at = next(
        (i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b),
        min(len(before), len(after)),
    )
    return f"at {at}: {before[max(0, at - 80) : at + 80]!r} != {after[max(0, at - 80) : at + 80]!r}"
