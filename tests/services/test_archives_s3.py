"""Archives and exports in an S3 bucket (ARCHIVE_S3_BUCKET): moto's S3 server, local, stands in for
the bucket, configured as settings' `_data_storage` configures a deployment, and every read, the
restore, the app's deletion, the orphan sweep and a player's export behave as on a directory."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import boto3  # type: ignore[import-untyped]
import pytest
from django.conf import settings as django_settings
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.test import override_settings
from django.utils import timezone
from moto.server import ThreadedMotoServer
from storages.backends.s3 import S3Storage  # type: ignore[import-untyped]

import games.records.archive as archive
from games import accounts
from games.models import ExportJob, GameRecord, Player, Table
from games.services import exports
from games.verify import check_export
from hearts_service import settings as service_settings

from .test_archives import _client, _finished_table, _pages

pytestmark = pytest.mark.django_db

BUCKET = "hearts-data"
S3_ENV = {
    "ARCHIVE_S3_REGION": "us-east-1",
    "ARCHIVE_S3_ACCESS_KEY_ID": "testing-key",
    "ARCHIVE_S3_SECRET_ACCESS_KEY": "testing-secret",
    "ARCHIVE_S3_ADDRESSING_STYLE": "path",  # as for MinIO: no per-bucket host name
}


@pytest.fixture(scope="module")
def bucket() -> Iterator[Any]:
    """A local S3 server with one empty bucket, and both data storages in it as a deployment with
    ARCHIVE_S3_BUCKET set has them (kept for the module: the replay check after each test reads
    the archived tables)."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    environment = {**S3_ENV, "ARCHIVE_S3_ENDPOINT_URL": f"http://{host}:{port}"}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in environment.items():
            patch.setenv(name, value)
        patch.setattr(service_settings, "ARCHIVE_S3_BUCKET", BUCKET)
        data_storages = {
            "archives": service_settings._data_storage("archives"),
            "exports": service_settings._data_storage("exports"),
        }
    client = boto3.client(
        "s3",
        endpoint_url=environment["ARCHIVE_S3_ENDPOINT_URL"],
        region_name="us-east-1",
        aws_access_key_id="testing-key",
        aws_secret_access_key="testing-secret",
    )
    client.create_bucket(Bucket=BUCKET)
    try:
        with override_settings(STORAGES={**django_settings.STORAGES, **data_storages}):
            yield client
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def empty_bucket(bucket: Any) -> None:
    for key in _keys(bucket):
        bucket.delete_object(Bucket=BUCKET, Key=key)


def _keys(bucket: Any, prefix: str = "") -> list[str]:
    """Every object's key in the bucket (under `prefix`), as S3 lists them."""
    pages = bucket.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return sorted(item["Key"] for page in pages for item in page.get("Contents", ()))


@pytest.fixture
def game() -> dict[str, Any]:
    app, key = accounts.app_create(name="cards")
    player, token = accounts.player_create(app=app, name="Ada")
    _, watcher = accounts.player_create(app=app, name="Watcher")
    table = _finished_table(app, player, seed=7)
    return {"app": app, "key": key, "player": token, "spectator": watcher, "table": table}


def _views(game: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {who: _pages(_client(game[who]), game["table"].pk) for who in ("player", "spectator", "key")}


def test_setting_changes_reach_the_cached_storages(bucket: Any) -> None:
    """Django keeps one storage object per alias; override_settings' setting_changed drops them."""
    for alias in ("archives", "exports"):
        storage = storages[alias]
        assert isinstance(storage, S3Storage)
        assert storage.bucket_name == BUCKET and storage.location == alias
        assert storage.endpoint_url.startswith("http://127.0.0.1:")


@pytest.mark.slow
def test_an_archived_table_reads_the_same_from_the_bucket_and_restores(
    game: dict[str, Any], bucket: Any, django_capture_on_commit_callbacks: Any
) -> None:
    table = game["table"]
    before = _views(game)
    assert archive.archive(table.pk)
    table.refresh_from_db()
    assert table.archived_at is not None and table.state is None
    assert not GameRecord.objects.filter(table=table).exists()
    assert _keys(bucket) == [f"archives/{table.archive}"]
    archive._forget(table.pk)  # read from the bucket, not this process's cache
    after = _views(game)
    assert after == before
    export = _client(game["player"]).get(f"/api/v1/tables/{table.pk}/export").json()
    assert check_export(export)["ok"]

    with django_capture_on_commit_callbacks(execute=True):
        assert archive.restore(table.pk)
    table.refresh_from_db()
    assert table.archived_at is None and table.archive == ""
    assert GameRecord.objects.filter(table=table).exists()
    assert _keys(bucket) == []  # the object went once the restore was committed
    assert _views(game) == before


@pytest.mark.slow
def test_a_missing_object_is_an_archive_error(game: dict[str, Any], bucket: Any) -> None:
    table = game["table"]
    assert archive.archive(table.pk)
    table.refresh_from_db()
    key = f"archives/{table.archive}"
    backup = bucket.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    bucket.delete_object(Bucket=BUCKET, Key=key)
    archive._forget(table.pk)
    with pytest.raises(archive.ArchiveError, match="cannot be read"):
        archive.load(table)
    with pytest.raises(archive.ArchiveError):
        archive.restore(table.pk)
    assert Table.objects.get(pk=table.pk).archive == table.archive  # unchanged
    bucket.put_object(Bucket=BUCKET, Key=key, Body=backup)  # restored from a backup: readable again
    assert archive.load(table).table_id == table.pk


@pytest.mark.slow
def test_deleting_an_apps_archives_removes_its_objects_and_the_sweep_lists_the_bucket(
    game: dict[str, Any],
    bucket: Any,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    guest = Player.objects.create(name="guest")
    theirs = _finished_table(None, guest, seed=3)
    assert archive.archive(game["table"].pk) and archive.archive(theirs.pk)
    app_id = game["app"].pk
    orphan = f"{app_id}/{game['table'].pk}-000000000000.hga"  # a crashed run's: no table names it
    archive.storage().save(orphan, ContentFile(b"left behind"))
    guests = [f"archives/{Table.objects.get(pk=theirs.pk).archive}"]

    assert archive.sweep_orphans() == 0  # younger than an hour: perhaps an archive in progress
    listed = archive._files

    def listing_with_a_vanished_object() -> Iterator[str]:  # deleted between the listing and its HEAD
        yield f"{app_id}/999999-000000000000.hga"
        yield from listed()

    monkeypatch.setattr(archive, "_files", listing_with_a_vanished_object)
    assert archive.sweep_orphans(older_than=dt.timedelta(0)) == 1  # the orphan only
    monkeypatch.undo()
    assert f"archives/{orphan}" not in _keys(bucket)
    assert len(_keys(bucket, f"archives/{app_id}/")) == 1

    archive.storage().save(orphan, ContentFile(b"left behind again"))
    with django_capture_on_commit_callbacks(execute=True):
        assert archive.delete_app_archives(app_id) == 2  # the named file and the orphan
    assert _keys(bucket) == guests
    assert Table.objects.get(pk=game["table"].pk).archive == ""
    Table.objects.filter(app=game["app"]).delete()  # as deleting the app's data goes on to do


def test_a_players_export_lands_in_the_bucket_downloads_and_expires(bucket: Any) -> None:
    app, key = accounts.app_create(name="studio")
    _, token = accounts.player_create(app=app, name="Fay")
    made = _client(token).post("/api/v1/me/exports", {}, format="json")
    assert made.status_code == 201, made.content
    job = made.json()
    assert job["status"] == "done"
    assert _keys(bucket) == [f"exports/{job['id']}.json"]
    stored = bucket.get_object(Bucket=BUCKET, Key=f"exports/{job['id']}.json")["Body"].read()
    for reader in (token, key):
        download = _client(reader).get(job["document"])
        assert download.status_code == 200 and download["Content-Type"] == "application/json"
        assert download.content == stored and len(stored) == job["size"]

    row = ExportJob.objects.get(uuid=job["id"])
    exports._complete(row)  # a rerun writes the same name over the first
    assert _keys(bucket) == [f"exports/{job['id']}.json"]

    assert row.expires_at is not None
    assert exports.expire(now=timezone.now()) == 0  # not yet
    assert exports.expire(now=row.expires_at + dt.timedelta(seconds=1)) == 1
    assert _keys(bucket) == []
    gone = _client(token).get(job["document"])
    assert gone.status_code == 404 and gone.json()["code"] == "not_found"
