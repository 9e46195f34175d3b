"""GET me (who is calling, their unfinished tables, no secret) and conditional table reads: an ETag
per version, 304 on If-None-Match, and writes taking the ETag as If-Match."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from games.accounts import app_create

pytestmark = pytest.mark.django_db


def client(token: str | None = None) -> APIClient:
    c = APIClient()
    if token:
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return c


def test_me_says_who_is_calling_and_where_they_sit_and_nothing_secret() -> None:
    guest = client().post("/api/v1/guests", {"name": "Ada"}, format="json").json()
    token = guest["token"]
    me = client(token).get("/api/v1/me")
    assert me.status_code == 200
    assert me.json() == {
        "kind": "guest",
        "player": guest["player"],
        "app": None,
        "tables": [],
        "language": "",
    }
    body = {"bots": {"1": "basic", "2": "basic"}, "clocks": {"pass": None}}
    open_id = client(token).post("/api/v1/tables", body, format="json").json()["id"]
    version = client(token).post(f"/api/v1/tables/{open_id}/join", {"position": 3}, format="json").json()
    client(token).post("/api/v1/tables", body, format="json")  # a table they do not sit at
    tables = client(token).get("/api/v1/me").json()["tables"]
    assert tables == [{"id": open_id, "status": "open", "version": version["version"], "seat": 3}]

    _, key = app_create(name="Studio")
    made = client(key).post("/api/v1/players", {"name": "Bo", "external_id": "u-7"}, format="json").json()
    mine = client(made["token"]).get("/api/v1/me").json()
    assert mine["kind"] == "player" and mine["app"]["name"] == "Studio"
    assert mine["player"] == {"id": made["player"]["id"], "name": "Bo", "external_id": "u-7"}
    app = client(key).get("/api/v1/me").json()
    assert app == {"kind": "app", "player": None, "app": mine["app"], "tables": [], "language": None}
    for answer in (me, client(made["token"]).get("/api/v1/me"), client(key).get("/api/v1/me")):
        text = json.dumps(answer.json())
        assert "hk_" not in text and "token" not in text and "hash" not in text
    assert client().get("/api/v1/me").json()["code"] == "not_authenticated"


def test_table_reads_carry_an_etag_per_version_and_answer_304_when_unchanged() -> None:
    token = client().post("/api/v1/guests", {"name": "etag"}, format="json").json()["token"]
    body = {"bots": {"1": "basic", "2": "basic"}, "clocks": {"pass": None}}
    table = client(token).post("/api/v1/tables", body, format="json").json()
    url = f"/api/v1/tables/{table['id']}"
    first = client(token).get(url)
    etag = first["ETag"]
    assert etag == f'W/"{table["version"]}"' and first.json()["version"] == table["version"]
    assert "Authorization" in first["Vary"] and "private" in first["Cache-Control"]
    for tags in (etag, etag.removeprefix("W/"), f'"0", {etag}', "*"):
        again = client(token).get(url, HTTP_IF_NONE_MATCH=tags)
        assert again.status_code == 304 and again.content == b"" and again["ETag"] == etag, tags
    assert client(token).get(url, HTTP_IF_NONE_MATCH='W/"0"').status_code == 200

    # Writes take the ETag as If-Match, as the bare version: a stale one is 409 and changes nothing.
    stale = client(token).post(f"{url}/bots", {"level": "basic"}, format="json", HTTP_IF_MATCH='W/"0"')
    assert (stale.status_code, stale.json()["code"]) == (409, "stale_version")
    joined = client(token).post(f"{url}/join", {"position": 0}, format="json", HTTP_IF_MATCH=etag)
    assert joined.status_code == 200 and joined.json()["version"] > table["version"]
    # The table moved on: the old tag gets the new body and the new tag.
    moved = client(token).get(url, HTTP_IF_NONE_MATCH=etag)
    assert moved.status_code == 200 and moved["ETag"] == f'W/"{moved.json()["version"]}"' != etag
    strong = client(token).post(
        f"{url}/bots", {"level": "basic"}, format="json", HTTP_IF_MATCH=f'"{moved.json()["version"]}"'
    )
    assert strong.status_code == 200
    bad = client(token).post(f"{url}/leave", {}, format="json", HTTP_IF_MATCH='W/"x"')
    assert (bad.status_code, bad.json()["code"]) == (400, "invalid_version")
