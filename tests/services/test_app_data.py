"""An operator's whole-app data: `manage.py app_data export` writes it as JSON Lines without a secret,
`app_data delete` removes the app with every row and file of it (and only of it); the same two as
actions on App in Django's admin, the delete asking first."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.storage import storages
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from games import accounts
from games.engine import state_from_dict
from games.models import App, BotEndpoint, ExportJob, Player, Table, WebhookEndpoint
from games.services import action_submit, exports, seat_join, table_create

pytestmark = pytest.mark.django_db


def _finished(app: App, player: Player) -> Table:
    table = table_create(
        app=app, options={"players": 4, "target_score": 50}, bots={1: "basic", 2: "basic", 3: "basic"}
    ).table
    assert table is not None
    seat_join(table_id=table.pk, player=player, position=0, scope=app)
    rng = random.Random(3)
    while True:
        table.refresh_from_db()
        if table.status == Table.Status.FINISHED:
            return table
        state = state_from_dict(table.state)
        seat = rng.choice(state.to_act())
        action_submit(
            table_id=table.pk, position=seat, action=rng.choice(state.legal_actions(seat)).to_dict()
        )


@pytest.fixture
def studio() -> dict[str, Any]:
    """An app with a player at a finished table, a webhook, a brought bot and an export job; and
    another app with a player, which nothing here may touch."""
    app, key = accounts.app_create(name="studio")
    ada, _ = accounts.player_create(app=app, name="Ada", external_id="ext-ada")
    table = _finished(app, ada)
    WebhookEndpoint.objects.create(
        app=app, url="https://hooks.example/h", event_types=[], secret_salt="S" * 32
    )
    BotEndpoint.objects.create(app=app, name="mine", url="https://bots.example/b", secret_salt="B" * 32)
    job = exports.request_export(accounts.Principal(app=app, player=None), ada.pk)
    other, _ = accounts.app_create(name="elsewhere")
    bea, _ = accounts.player_create(app=other, name="Bea")
    return {"app": app, "key": key, "ada": ada, "table": table, "job": job, "other": other, "bea": bea}


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.slow
def test_the_command_exports_the_app_as_json_lines_without_secrets(
    studio: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "studio.jsonl"
    call_command("app_data", "export", str(studio["app"].pk), "--out", str(out))
    text = out.read_text()
    lines = _lines(text)
    kinds = [line["type"] for line in lines]
    assert kinds[0] == "app" and lines[0]["format"] == exports.APP_FORMAT
    assert {"player", "table", "webhook", "bot"} <= set(kinds)
    (player,) = [line for line in lines if line["type"] == "player"]
    assert (player["name"], player["external_id"]) == ("Ada", "ext-ada")
    (table,) = [line for line in lines if line["type"] == "table"]
    assert table["game"]["format"] == "hearts-game/1" and table["game"]["table"] == studio["table"].pk
    assert "Bea" not in text  # another app's player
    key_hash = studio["app"].api_keys.get().key_hash
    for secret in ("S" * 32, "B" * 32, key_hash, studio["key"]):
        assert secret not in text
    for field in ("secret_salt", "key_hash", "token_hash", "code_hash"):
        assert field not in text


@pytest.mark.slow
def test_the_command_deletes_the_app_with_its_files_and_nothing_else(studio: dict[str, Any]) -> None:
    app, job, storage = studio["app"], studio["job"], storages["exports"]
    assert storage.exists(job.file)
    with pytest.raises(CommandError, match="--yes"):
        call_command("app_data", "delete", str(app.pk))
    assert App.objects.filter(pk=app.pk).exists()  # not without --yes
    out = io.StringIO()
    call_command("app_data", "delete", str(app.pk), "--yes", stdout=out)
    assert f"app {app.pk} deleted" in out.getvalue()
    assert not App.objects.filter(pk=app.pk).exists()
    assert (
        not Player.objects.filter(app_id=app.pk).exists() and not Table.objects.filter(app_id=app.pk).exists()
    )
    assert not ExportJob.objects.filter(pk=job.pk).exists() and not storage.exists(job.file)
    assert Player.objects.filter(pk=studio["bea"].pk).exists()  # the other app is untouched
    with pytest.raises(CommandError, match="no app"):
        call_command("app_data", "delete", str(app.pk), "--yes")


@pytest.fixture
def admin_client() -> Client:
    User.objects.create_superuser("root", "root@example.invalid", "pw")
    client = Client()
    client.login(username="root", password="pw")
    return client


@pytest.mark.slow
def test_the_admin_exports_and_deletes_an_app_after_asking(
    studio: dict[str, Any], admin_client: Client
) -> None:
    app = studio["app"]
    url = "/admin/games/app/"
    exported = admin_client.post(url, {"action": "export_data", "_selected_action": [app.pk]})
    assert exported.status_code == 200 and "attachment" in exported["Content-Disposition"]
    lines = _lines(exported.content.decode())
    assert lines[0] == {**lines[0], "type": "app", "id": app.pk} and "S" * 32 not in exported.content.decode()
    asked = admin_client.post(url, {"action": "delete_data", "_selected_action": [app.pk]})
    assert asked.status_code == 200 and b"Yes, delete them and all their data" in asked.content
    assert App.objects.filter(pk=app.pk).exists()  # asking deletes nothing
    done = admin_client.post(url, {"action": "delete_data", "_selected_action": [app.pk], "post": "yes"})
    assert done.status_code == 302
    assert not App.objects.filter(pk=app.pk).exists() and App.objects.filter(pk=studio["other"].pk).exists()
    assert not storages["exports"].exists(studio["job"].file)
