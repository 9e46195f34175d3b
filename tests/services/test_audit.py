"""The audit trail (games/audit.py): each audited operation appends one row with who, what and the
request id; the admin's saves too; an app reads only its own rows, paged, over REST and GraphQL;
the hash chain detects an edited and a deleted row; concurrent appenders never fork it."""

from __future__ import annotations

import json
import threading
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from games import audit
from games.accounts import app_create, player_create
from games.models import ApiKey, App, AppQuota, AuditEntry, WebhookEndpoint

pytestmark = pytest.mark.django_db


def api(key: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return c


def rows(app: App) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(app_id=app.pk).order_by("id"))


def test_each_configuration_operation_writes_one_row_with_who_and_what(settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    app, key = app_create(name="audited")
    key_row = ApiKey.objects.get(app=app)
    c = api(key)
    made = c.post(
        "/api/v1/webhooks", {"url": "http://127.0.0.1:9/a"}, format="json", HTTP_X_REQUEST_ID="req-1"
    )
    assert made.status_code == 201
    hook = made.json()["id"]
    assert c.patch(f"/api/v1/webhooks/{hook}", {"active": False}, format="json").status_code == 200
    assert c.post(f"/api/v1/webhooks/{hook}/secret", {}, format="json").status_code == 200
    assert c.delete(f"/api/v1/webhooks/{hook}").status_code == 204
    assert c.patch("/api/v1/app", {"retention_days": 30}, format="json").status_code == 200
    player, _ = player_create(app=app, name="Ada Lovelace")
    assert c.delete(f"/api/v1/players/{player.pk}").status_code == 200
    # Not configuration: a table, a read. No rows for them.
    assert c.post("/api/v1/tables", {}, format="json").status_code == 201
    assert c.get("/api/v1/webhooks").status_code == 200

    got = rows(app)
    assert [(r.action, r.target) for r in got] == [
        ("createWebhook", f"webhook:{hook}"),
        ("updateWebhook", f"webhook:{hook}"),
        ("rotateWebhookSecret", f"webhook:{hook}"),
        ("deleteWebhook", f"webhook:{hook}"),
        ("updateApp", f"app:{app.pk}"),
        ("erasePlayer", f"player:{player.pk}"),
    ]
    assert {r.actor_kind for r in got} == {"app_key"}
    assert {r.actor for r in got} == {f"key {key_row.pk} {key_row.name}"}
    assert got[0].request_id == "req-1"
    assert got[0].changes["url"] == [None, "http://127.0.0.1:9/a"]
    assert got[1].changes == {"active": [True, False]}
    assert got[2].changes == {"secret": [audit.HIDDEN, audit.HIDDEN]}
    assert got[3].changes["url"] == ["http://127.0.0.1:9/a", None]
    assert got[4].changes == {"retention_days": [None, 30]}
    text = json.dumps([r.changes for r in got]) + "".join(r.actor + r.target for r in got)
    assert "whsec_" not in text and key not in text and "Ada" not in text  # no secret, no name
    assert audit.verify() == (len(AuditEntry.objects.all()), None)


def test_a_refused_or_replayed_operation_writes_nothing(settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    app, key = app_create(name="refused")
    c = api(key)
    assert c.post("/api/v1/webhooks", {"url": "ftp://x"}, format="json").status_code == 400
    assert c.patch("/api/v1/webhooks/999", {"active": False}, format="json").status_code == 404
    AppQuota.objects.create(app=app, webhooks=0)
    assert c.post("/api/v1/webhooks", {"url": "http://127.0.0.1:9/a"}, format="json").status_code == 429
    assert rows(app) == []
    body = {"entrants": [{"bot": "random"}, {"bot": "random"}], "deal_sets": 1, "seed": "1"}
    for _ in range(2):
        assert c.post("/api/v1/tournaments", body, format="json", HTTP_IDEMPOTENCY_KEY="k").status_code == 201
    assert [r.action for r in rows(app)] == ["createTournament"]
    assert "seed" not in rows(app)[0].changes and "entrants" not in rows(app)[0].changes


def test_graphql_records_the_same_rows_from_the_same_operations(settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    app, key = app_create(name="graphql")
    query = 'mutation { registerBot(name: "b", url: "http://127.0.0.1:9/bot") { errors { code } } }'
    r = api(key).post("/graphql/", {"query": query}, format="json")
    assert r.json()["data"]["registerBot"]["errors"] == []
    (row,) = rows(app)
    assert row.action == "registerBot" and row.target.startswith("bot:")
    assert row.changes["name"] == [None, "b"]


def test_the_admins_saves_are_recorded_with_the_admin_user(settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    app, _ = app_create(name="admin")
    hook = WebhookEndpoint.objects.create(app=app, url="http://127.0.0.1:9/a", secret_salt="s")
    User.objects.create_superuser("olive", "olive@example.com", "pw")
    browser = Client()
    browser.login(username="olive", password="pw")
    form = {"url": "http://127.0.0.1:9/b", "description": "", "active": "on"}
    r = browser.post(f"/admin/games/webhookendpoint/{hook.pk}/change/", form)
    assert r.status_code == 302, r.content[:2000]
    r = browser.post("/admin/games/appquota/add/", {"app": app.pk, "open_tables": "5"})
    assert r.status_code == 302, r.content[:2000]
    got = rows(app)
    assert [(r.actor_kind, r.actor, r.action) for r in got] == [
        ("admin", "olive", "admin.change"),
        ("admin", "olive", "admin.add"),
    ]
    assert got[0].changes.pop("url") == ["http://127.0.0.1:9/a", "http://127.0.0.1:9/b"]
    assert list(got[0].changes) == ["updated_at"]  # and nothing else changed
    assert got[1].changes["open_tables"] == [None, 5]
    assert "secret_salt" not in got[0].changes


def test_the_admins_bulk_actions_record_one_row_per_key_revoked_and_per_app_deleted() -> None:
    app, _ = app_create(name="bulk")
    gone, _ = app_create(name="gone")
    keys = list(ApiKey.objects.filter(app=app))
    User.objects.create_superuser("olive", "olive@example.com", "pw")
    browser = Client()
    browser.login(username="olive", password="pw")
    picked = {"action": "revoke", "_selected_action": [k.pk for k in keys]}
    assert browser.post("/admin/games/apikey/", picked).status_code == 302
    assert all(k.revoked_at is not None for k in ApiKey.objects.filter(app=app))
    revoked = [(r.actor, r.action, r.target) for r in rows(app)]
    assert revoked == [("olive", "admin.revoke", f"apikey:{k.pk}") for k in keys]
    assert rows(app)[0].changes["revoked_at"][0] is None
    confirmed = {"action": "delete_data", "_selected_action": [gone.pk], "post": "yes"}
    assert browser.post("/admin/games/app/", confirmed).status_code == 302
    assert not App.objects.filter(pk=gone.pk).exists()
    (deleted,) = rows(gone)  # the chain outlives the app
    assert (deleted.actor, deleted.action, deleted.target) == ("olive", "admin.delete", f"app:{gone.pk}")
    call_command("check_audit_chain", stdout=StringIO())  # raises CommandError on a broken chain


def test_an_app_reads_only_its_rows_paged_over_rest_and_graphql() -> None:
    mine, key = app_create(name="mine")
    other, _ = app_create(name="other")
    for n in range(25):
        audit.append(
            app_id=mine.pk, actor_kind="admin", actor="olive", action="admin.change", target=f"x:{n}"
        )
        audit.append(app_id=other.pk, actor_kind="admin", actor="olive", action="admin.change", target="y:0")
    c = api(key)
    first = c.get("/api/v1/app/audit").json()
    assert [r["target"] for r in first["results"]] == [f"x:{n}" for n in range(24, 4, -1)]  # newest first
    second = c.get(first["next"]).json()
    assert [r["target"] for r in second["results"]] == [f"x:{n}" for n in range(4, -1, -1)]
    assert second["next"] is None
    query = (
        "{ auditEntries(first: 20) { edges { node { target changes } } pageInfo { endCursor hasNextPage } } }"
    )
    log = api(key).post("/graphql/", {"query": query}, format="json").json()["data"]["auditEntries"]
    assert len(log["edges"]) == 20 and log["pageInfo"]["hasNextPage"]
    assert {e["node"]["target"][0] for e in log["edges"]} == {"x"}
    cursor = log["pageInfo"]["endCursor"]
    query = f'{{ auditEntries(after: "{cursor}") {{ edges {{ node {{ target }} }} }} }}'
    rest = api(key).post("/graphql/", {"query": query}, format="json").json()["data"]["auditEntries"]
    assert [e["node"]["target"] for e in rest["edges"]] == [r["target"] for r in second["results"]]
    _, token = player_create(app=mine, name="p")
    assert api(token).get("/api/v1/app/audit").json()["code"] == "app_key_required"


def _chain(n: int) -> list[AuditEntry]:
    return [
        audit.append(app_id=None, actor_kind="admin", actor="olive", action="admin.change", target=f"t:{i}")
        for i in range(n)
    ]


def test_the_check_command_finds_an_edited_row() -> None:
    made = _chain(4)
    out = StringIO()
    call_command("check_audit_chain", stdout=out)
    assert "intact: 4 rows" in out.getvalue()
    AuditEntry.objects.filter(pk=made[2].pk).update(changes={"active": [True, False]})
    with pytest.raises(CommandError, match=f"broken at row {made[2].pk}: its hash does not match"):
        call_command("check_audit_chain", stdout=StringIO())


def test_the_check_command_finds_a_deleted_row() -> None:
    made = _chain(4)
    AuditEntry.objects.filter(pk=made[1].pk).delete()
    with pytest.raises(CommandError, match=f"broken at row {made[2].pk}: its prev_hash"):
        call_command("check_audit_chain", stdout=StringIO())


def test_a_row_rewritten_with_a_fresh_hash_still_breaks_the_next_link() -> None:
    made = _chain(3)
    row = AuditEntry.objects.get(pk=made[1].pk)
    row.actor = "mallory"
    row.hash = audit.hash_of(row.prev_hash, row)  # recomputed: the row alone looks right...
    row.save()
    assert audit.verify()[1] == audit.Break(made[2].pk, audit.verify()[1].reason)  # type: ignore[union-attr]


@pytest.mark.needs_postgres  # SQLite's writers are serialised by its IMMEDIATE transactions instead
@pytest.mark.django_db(transaction=True)
def test_concurrent_appenders_never_fork_the_chain() -> None:
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(10):
                audit.append(
                    app_id=None, actor_kind="admin", actor=f"w{n}", action="admin.change", target=f"{i}"
                )
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert audit.verify() == (40, None)


def test_the_key_operations_are_recorded_without_declaring_anything() -> None:
    """The API keys' operations declare no `audited`: their scope (keys:write) makes them recorded."""
    app, key = app_create(name="keys")
    c = api(key)
    made = c.post("/api/v1/app/keys", {"scopes": ["tables:read"], "name": "ci"}, format="json")
    assert made.status_code == 201, made.content
    new = made.json()["key"]["id"]
    assert c.post(f"/api/v1/app/keys/{new}/revoke", {}, format="json").status_code == 200
    create, revoke = rows(app)
    assert (create.action, create.target) == ("createApiKey", f"key:{new}")
    assert create.changes["name"] == [None, "ci"] and create.changes["scopes"] == [None, ["tables:read"]]
    assert (revoke.action, revoke.target) == ("revokeApiKey", f"key:{new}")
    assert list(revoke.changes) == ["revoked_at"] and revoke.changes["revoked_at"][0] is None
    assert made.json()["secret"] not in json.dumps(create.changes)


def test_every_operation_of_a_configuration_scope_is_recorded() -> None:
    from games import operations as ops
    from games.accounts import Principal

    app, _ = app_create(name="all")
    principal = Principal(app=app, player=None, credential="c")
    config = [op for op in ops.ALL if op.scope in audit.CONFIG_SCOPES]
    assert len(config) >= 15  # webhooks, bots, keys, tournaments, app, erasure, push
    assert all(op.audited_as(principal) is not None for op in config)
    assert ops.CREATE_TABLE.audited_as(principal) is None  # play is not configuration
    player, _ = player_create(app=app, name="p")
    assert ops.CREATE_WEBHOOK.audited_as(Principal(app=app, player=player, credential="t")) is None
