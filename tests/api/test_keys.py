"""An app's API keys (create, list, revoke, rotate; expiry, last use) and player tokens' expiry and
refresh, over REST and GraphQL, with the codes a client sees (docs/keys.md)."""

from __future__ import annotations

import datetime as dt
import io
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from games import accounts
from games.models import ApiKey, App, PlayerToken
from tests.api.test_api import client
from tests.graphql.test_graphql import gql, ok

pytestmark = pytest.mark.django_db


def _app(*scopes: str) -> tuple[App, str]:
    return accounts.app_create(name="keys", scopes=scopes or ("admin",))


def _refused(response: Any, status: int, code: str) -> dict[str, Any]:
    assert (response.status_code, response.json()["code"]) == (status, code), response.content
    return dict(response.json())


def test_a_created_key_is_shown_once_listed_without_its_secret_and_works_for_its_scopes() -> None:
    _, key = _app()
    r = client(key).post("/api/v1/app/keys", {"name": "ci", "scopes": ["tables:read"]}, format="json")
    assert r.status_code == 201, r.content
    created = r.json()
    secret = created["secret"]
    assert secret.startswith("hk_app_") and created["key"]["prefix"] == secret[: accounts.SHOWN]
    assert created["key"] | {"created_at": None} == {
        "id": created["key"]["id"],
        "name": "ci",
        "prefix": secret[: accounts.SHOWN],
        "scopes": ["tables:read"],
        "state": "active",
        "created_at": None,
        "expires_at": None,
        "revoked_at": None,
        "last_used_at": None,
        "replaced_by": None,
    }
    assert client(secret).get("/api/v1/tables").status_code == 200
    _refused(client(secret).post("/api/v1/tables", {}, format="json"), 403, "missing_scope")
    listed = client(key).get("/api/v1/app/keys").json()["results"]
    assert [k["name"] for k in listed] == ["ci", "first key"]  # newest first
    assert secret not in str(listed) and "key_hash" not in str(listed)
    assert listed[0]["last_used_at"] is not None  # used just now


def test_a_key_grants_only_scopes_it_holds_and_only_known_ones() -> None:
    _, key = _app("keys:write", "tables:read")
    ok_ = client(key).post("/api/v1/app/keys", {"scopes": ["tables:read"]}, format="json")
    assert ok_.status_code == 201
    body = _refused(
        client(key).post("/api/v1/app/keys", {"scopes": ["tables:write"]}, format="json"),
        403,
        "missing_scope",
    )
    assert body["scope"] == "tables:write"
    _refused(client(key).post("/api/v1/app/keys", {"scopes": ["admin"]}, format="json"), 403, "missing_scope")
    _refused(
        client(key).post("/api/v1/app/keys", {"scopes": ["tables:fly"]}, format="json"), 400, "invalid_input"
    )
    _refused(client(key).post("/api/v1/app/keys", {"scopes": []}, format="json"), 400, "invalid_input")


def test_a_revoked_key_is_refused_with_key_revoked_and_an_expired_one_with_key_expired() -> None:
    app, key = _app()
    other, secret = accounts.key_create(app, scopes=["tables:read"])
    r = client(key).post(f"/api/v1/app/keys/{other.pk}/revoke", {}, format="json")
    assert r.status_code == 200 and r.json()["state"] == "revoked"
    _refused(client(secret).get("/api/v1/tables"), 401, "key_revoked")
    assert gql("{ me { kind } }", secret, status=401)["errors"][0]["extensions"]["code"] == "key_revoked"

    soon, secret2 = accounts.key_create(
        app, scopes=["tables:read"], expires_at=timezone.now() + dt.timedelta(hours=1)
    )
    assert client(secret2).get("/api/v1/tables").status_code == 200
    ApiKey.objects.filter(pk=soon.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    _refused(client(secret2).get("/api/v1/tables"), 401, "key_expired")
    assert gql("{ me { kind } }", secret2, status=401)["errors"][0]["extensions"]["code"] == "key_expired"
    past = (timezone.now() - dt.timedelta(minutes=1)).isoformat()
    _refused(
        client(key).post("/api/v1/app/keys", {"scopes": ["tables:read"], "expires_at": past}, format="json"),
        400,
        "invalid_input",
    )
    # Another app's key is none of this app's business.
    _, stranger = _app()
    _refused(client(stranger).post(f"/api/v1/app/keys/{soon.pk}/revoke", {}, format="json"), 404, "not_found")


def test_rotation_keeps_the_old_key_working_for_the_overlap_then_it_expires() -> None:
    app, key = _app()
    old = app.api_keys.get()
    r = client(key).post(f"/api/v1/app/keys/{old.pk}/rotate", {"overlap_seconds": 3600}, format="json")
    assert r.status_code == 201, r.content
    rotated = r.json()
    new_secret = rotated["secret"]
    assert rotated["key"]["scopes"] == ["admin"] and rotated["key"]["name"] == "first key"
    assert (
        rotated["previous"]["state"] == "expiring"
        and rotated["previous"]["replaced_by"] == rotated["key"]["id"]
    )
    expires = dt.datetime.fromisoformat(rotated["previous"]["expires_at"].replace("Z", "+00:00"))
    assert abs((expires - timezone.now()).total_seconds() - 3600) < 60
    assert client(key).get("/api/v1/app").status_code == 200  # both work during the overlap
    assert client(new_secret).get("/api/v1/app").status_code == 200
    ApiKey.objects.filter(pk=old.pk).update(expires_at=timezone.now())
    _refused(client(key).get("/api/v1/app"), 401, "key_expired")
    assert client(new_secret).get("/api/v1/app").status_code == 200
    # An expired or revoked key does not rotate; the overlap has its bounds.
    again = client(new_secret).post(f"/api/v1/app/keys/{old.pk}/rotate", {}, format="json")
    assert _refused(again, 409, "key_not_live")["reason"] == "expired"
    too_long = {"overlap_seconds": accounts.ROTATION_OVERLAP_MAX + 1}
    new_id = rotated["key"]["id"]
    _refused(
        client(new_secret).post(f"/api/v1/app/keys/{new_id}/rotate", too_long, format="json"),
        400,
        "invalid_input",
    )


def test_rotation_defaults_to_a_day_of_overlap_over_graphql_too() -> None:
    app, key = _app()
    old = app.api_keys.get()
    payload = ok(
        "mutation($id: Int!) { rotateApiKey(keyId: $id) { secret key { id state scopes } "
        "previous { state expiresAt replacedBy } errors { code } } }",
        key,
        id=old.pk,
    )
    assert payload["key"]["state"] == "active" and payload["previous"]["replacedBy"] == payload["key"]["id"]
    old.refresh_from_db()
    assert old.expires_at is not None
    assert abs((old.expires_at - timezone.now()).total_seconds() - accounts.ROTATION_OVERLAP) < 60
    listed = ok("{ apiKeys { edges { node { id state lastUsedAt } } } }", payload["secret"])
    assert [e["node"]["state"] for e in listed["apiKeys"]["edges"]] == ["active", "expiring"]
    created = ok(
        'mutation { createApiKey(name: "ro", scopes: ["tables:read"]) '
        "{ secret key { scopes } errors { code } } }",
        payload["secret"],
    )
    assert created["key"]["scopes"] == ["tables:read"]
    revoked = ok(f"mutation {{ revokeApiKey(keyId: {old.pk}) {{ key {{ state }} errors {{ code }} }} }}", key)
    assert revoked["key"]["state"] == "revoked"
    refused = gql('mutation { createApiKey(scopes: ["admin"]) { errors { code } } }', created["secret"])
    assert refused["data"]["createApiKey"]["errors"] == [{"code": "missing_scope"}]


def test_last_used_at_is_written_at_most_once_a_minute_and_the_lookup_is_one_query() -> None:
    app, key = _app()
    row = app.api_keys.get()
    with CaptureQueriesContext(connection) as first:
        assert client(key).get("/api/v1/app").status_code == 200
    row.refresh_from_db()
    assert row.last_used_at is not None
    with CaptureQueriesContext(connection) as again:
        assert client(key).get("/api/v1/app").status_code == 200
    lookups = [q["sql"] for q in again.captured_queries if "games_apikey" in q["sql"]]
    assert len(lookups) == 1 and lookups[0].lstrip().upper().startswith("SELECT"), lookups
    assert len(first.captured_queries) == len(again.captured_queries) + 1  # the minute's one write
    used = row.last_used_at
    ApiKey.objects.filter(pk=row.pk).update(last_used_at=used - accounts.USED_EVERY)
    assert client(key).get("/api/v1/app").status_code == 200
    row.refresh_from_db()
    assert row.last_used_at is not None and row.last_used_at > used


def test_a_player_token_with_an_expiry_is_refused_with_token_expired_after_it() -> None:
    _, key = _app()
    r = client(key).post("/api/v1/players", {"name": "Ada"}, format="json")
    player_id = r.json()["player"]["id"]
    assert r.json()["expires_at"] is None
    r = client(key).post(f"/api/v1/players/{player_id}/tokens", {"expires_in": 3600}, format="json")
    assert r.status_code == 201, r.content
    token, expires_at = r.json()["token"], r.json()["expires_at"]
    assert expires_at is not None
    assert client(token).get("/api/v1/me").status_code == 200
    PlayerToken.objects.filter(token_hash=accounts.key_hash(token)).update(expires_at=timezone.now())
    _refused(client(token).get("/api/v1/me"), 401, "token_expired")
    assert gql("{ me { kind } }", token, status=401)["errors"][0]["extensions"]["code"] == "token_expired"
    _refused(
        client(key).post(f"/api/v1/players/{player_id}/tokens", {"expires_in": 5}, format="json"),
        400,
        "invalid_input",
    )


def test_a_refreshed_token_replaces_the_old_one_which_works_a_minute_more() -> None:
    _, key = _app()
    player_id = client(key).post("/api/v1/players", {"name": "Bo"}, format="json").json()["player"]["id"]
    old = client(key).post(f"/api/v1/players/{player_id}/tokens", {"expires_in": 7200}, format="json").json()
    r = client(old["token"]).post("/api/v1/tokens/refresh", {}, format="json")
    assert r.status_code == 201, r.content
    new = r.json()
    assert new["player"]["id"] == player_id and new["token"] != old["token"]
    lifetime = dt.datetime.fromisoformat(new["expires_at"].replace("Z", "+00:00")) - timezone.now()
    assert abs(lifetime.total_seconds() - 7200) < 60  # as long as the old one was given
    row = PlayerToken.objects.get(token_hash=accounts.key_hash(old["token"]))
    assert row.expires_at is not None
    assert 0 < (row.expires_at - timezone.now()).total_seconds() <= accounts.REFRESH_OVERLAP
    assert client(old["token"]).get("/api/v1/me").status_code == 200  # the overlap
    PlayerToken.objects.filter(pk=row.pk).update(expires_at=timezone.now())
    _refused(client(old["token"]).get("/api/v1/me"), 401, "token_expired")
    assert client(new["token"]).get("/api/v1/me").status_code == 200
    # Over GraphQL, with a lifetime of its own; an app key cannot refresh.
    payload = ok(
        "mutation { refreshToken(expiresIn: 600) { token expiresAt errors { code } } }", new["token"]
    )
    assert payload["token"].startswith("hk_player_") and payload["expiresAt"]
    refused = gql("mutation { refreshToken { errors { code } } }", key)["data"]["refreshToken"]["errors"]
    assert refused == [{"code": "player_token_required"}]


def test_create_app_prints_a_first_key_with_the_scopes_asked() -> None:
    out = io.StringIO()
    call_command("create_app", "studio", "--scopes", "tables:read,ratings:read", stdout=out)
    secret = out.getvalue().rsplit(":", 1)[1].strip()
    app = App.objects.get(name="studio")
    assert app.api_keys.get().scopes == ["tables:read", "ratings:read"]
    assert client(secret).get("/api/v1/leaderboard").status_code != 403
    _refused(client(secret).get("/api/v1/webhooks"), 403, "missing_scope")
    out = io.StringIO()
    call_command("create_app", "--app", str(app.pk), "--key-name", "ops", stdout=out)
    assert app.api_keys.filter(name="ops", scopes=["admin"]).exists()
