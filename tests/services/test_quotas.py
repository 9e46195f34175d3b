"""Quotas per app and per token (games/quotas.py): each one reached is 429 quota_exceeded naming the
quota and its limit, with nothing created, over REST and GraphQL alike; each is freed when its
resource goes away; the operator's own limits win over the settings; refusals are counted."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import AsyncClient
from rest_framework.test import APIClient

from games import quotas
from games.accounts import app_create, player_create
from games.infra import metrics, sockets
from games.models import App, AppQuota, BotEndpoint, Table, Tournament, WebhookEndpoint

pytestmark = pytest.mark.django_db


def api(key: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return c


def own_quota(app: App, **limits: int) -> None:
    AppQuota.objects.update_or_create(app=app, defaults=limits)


def refused(r: Any, quota: str, limit: int) -> None:
    assert r.status_code == 429, r.content
    body = r.json()
    assert body["code"] == "quota_exceeded"
    assert (body["quota"], body["limit"]) == (quota, limit)
    assert quota in body["detail"] and str(limit) in body["detail"]


def refusals(quota: str) -> float:
    return metrics.QUOTA_REFUSALS.labels(quota)._value.get()


def graphql(key: str, query: str) -> dict[str, Any]:
    r = api(key).post("/graphql/", {"query": query}, format="json")
    assert r.status_code == 200, r.content
    data: dict[str, Any] = r.json()["data"]
    return data


def test_unfinished_tables_are_counted_and_freed_when_a_table_ends() -> None:
    app, key = app_create(name="tables")
    own_quota(app, open_tables=2)
    c = api(key)
    made = [c.post("/api/v1/tables", {}, format="json") for _ in range(2)]
    assert [r.status_code for r in made] == [201, 201]
    before = refusals("open_tables")
    refused(c.post("/api/v1/tables", {}, format="json"), "open_tables", 2)
    assert Table.objects.filter(app=app).count() == 2  # nothing created
    assert refusals("open_tables") == before + 1
    # GraphQL answers the same quota as a typed error, from the same operation.
    payload = graphql(key, "mutation { createTable { table { id } errors { code quota limit } } }")[
        "createTable"
    ]
    assert payload == {
        "table": None,
        "errors": [{"code": "quota_exceeded", "quota": "open_tables", "limit": 2}],
    }
    # An abandoned table no longer counts, nor does a finished one (quotas.DONE).
    assert set(quotas.DONE) == {Table.Status.FINISHED, Table.Status.ABANDONED}
    for table in made:
        assert c.post(f"/api/v1/tables/{table.json()['id']}/abandon", {}, format="json").status_code == 200
        assert c.post("/api/v1/tables", {}, format="json").status_code == 201
    refused(c.post("/api/v1/tables", {}, format="json"), "open_tables", 2)


def test_a_players_table_counts_against_its_apps_quota_and_a_guest_has_none(settings: Any) -> None:
    app, _ = app_create(name="players")
    own_quota(app, open_tables=1)
    _, token = player_create(app=app, name="Ada")
    assert api(token).post("/api/v1/tables", {}, format="json").status_code == 201
    refused(api(token).post("/api/v1/tables", {}, format="json"), "open_tables", 1)
    settings.QUOTA_OPEN_TABLES = 0  # guests belong to no app: no quota applies to them
    _, guest = player_create(app=None, name="Guest")
    assert api(guest).post("/api/v1/tables", {}, format="json").status_code == 201


def test_webhook_endpoints_are_counted_and_freed_when_one_is_deleted(settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    app, key = app_create(name="hooks")
    own_quota(app, webhooks=1)
    c = api(key)
    first = c.post("/api/v1/webhooks", {"url": "http://127.0.0.1:9/a"}, format="json")
    assert first.status_code == 201
    refused(c.post("/api/v1/webhooks", {"url": "http://127.0.0.1:9/b"}, format="json"), "webhooks", 1)
    assert WebhookEndpoint.objects.filter(app=app).count() == 1
    assert c.delete(f"/api/v1/webhooks/{first.json()['id']}").status_code == 204
    assert c.post("/api/v1/webhooks", {"url": "http://127.0.0.1:9/b"}, format="json").status_code == 201


def test_brought_bots_are_counted_and_freed_when_one_is_deleted(settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    app, key = app_create(name="bots")
    own_quota(app, bots=1)
    c = api(key)
    first = c.post("/api/v1/bots", {"name": "one", "url": "http://127.0.0.1:9/bot"}, format="json")
    assert first.status_code == 201, first.content
    refused(
        c.post("/api/v1/bots", {"name": "two", "url": "http://127.0.0.1:9/bot"}, format="json"), "bots", 1
    )
    assert list(BotEndpoint.objects.filter(app=app).values_list("name", flat=True)) == ["one"]
    assert c.delete(f"/api/v1/bots/{first.json()['id']}").status_code == 204
    assert (
        c.post("/api/v1/bots", {"name": "two", "url": "http://127.0.0.1:9/bot"}, format="json").status_code
        == 201
    )


def test_tournaments_per_day_are_freed_the_next_day() -> None:
    app, key = app_create(name="cups")
    own_quota(app, tournaments_per_day=1)
    c = api(key)
    body = {"entrants": [{"bot": "random"}, {"bot": "random"}], "deal_sets": 1, "seed": "1"}
    assert c.post("/api/v1/tournaments", body, format="json").status_code == 201
    refused(c.post("/api/v1/tournaments", body, format="json"), "tournaments_per_day", 1)
    assert Tournament.objects.filter(app=app).count() == 1
    yesterday = dt.datetime.now(dt.UTC).replace(hour=0, minute=0) - dt.timedelta(minutes=1)
    Tournament.objects.filter(app=app).update(created_at=yesterday)  # it was made before 00:00 UTC
    assert c.post("/api/v1/tournaments", body, format="json").status_code == 201


def test_the_settings_give_the_defaults_and_the_operator_overrides_them(settings: Any) -> None:
    settings.QUOTA_WEBHOOKS = 7
    app, _ = app_create(name="defaults")
    assert quotas.limits(app)["webhooks"] == 7
    out = StringIO()
    call_command("set_quota", app.pk, "--webhooks", "3", "--open-tables", "5", stdout=out)
    assert quotas.limits(app) | {} == {**quotas.limits(None), "webhooks": 3, "open_tables": 5}
    assert "webhooks: 3, 0 used" in out.getvalue()
    call_command("set_quota", app.pk, "--webhooks", "default", stdout=StringIO())
    assert quotas.limits(app)["webhooks"] == 7


# -- open streams and subscriptions ----------------------------------------------------------------


def test_stream_places_are_shared_across_processes_and_expire_after_a_killed_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two places taken (by any process: the set is in Redis, or in the process without it), the
    third refused; a place not refreshed (its process was killed) is gone after sockets.TTL."""
    app, _ = app_create(name="streams")
    own_quota(app, streams_per_token=2)
    principal = _principal(app, "cred-expire")
    scopes = quotas.stream_scopes(principal)
    quotas.stream_opened(scopes, "process-a:1")
    quotas.stream_opened(scopes, "process-b:1")
    with pytest.raises(Exception) as refusal:
        quotas.stream_opened(scopes, "process-b:2")
    assert refusal.value.body()["quota"] == "streams_per_token"  # type: ignore[attr-defined]
    assert quotas.open_streams(principal) == 2
    sockets.release(scopes, "process-a:1")  # a stream closed
    quotas.stream_opened(scopes, "process-b:2")
    if sockets.shared_redis() is not None:  # a killed process's places expire (Redis only)
        later = time.time() + sockets.TTL + 1
        monkeypatch.setattr(sockets.time, "time", lambda: later)
        assert quotas.open_streams(principal) == 0
        quotas.stream_opened(scopes, "process-c:1")
    for entry in ("process-a:1", "process-b:1", "process-b:2", "process-c:1"):
        sockets.release(scopes, entry)


def _principal(app: App, credential: str) -> Any:
    from games.accounts import Principal

    return Principal(app=app, player=None, credential=credential)


@pytest.mark.django_db(transaction=True)
def test_an_event_stream_takes_a_place_and_gives_it_back_when_it_closes(settings: Any) -> None:
    settings.STREAM_KEEPALIVE_SECONDS = 0.05
    app, _ = app_create(name="sse")
    own_quota(app, streams_per_token=1)
    _, token = player_create(app=app, name="Ada")
    asyncio.run(_streams(token))


async def _streams(token: str) -> None:
    client, auth = AsyncClient(), {"Authorization": f"Bearer {token}"}
    first = await client.get("/api/v1/me/stream?format=ndjson", headers=auth)
    assert first.status_code == 200, first.content
    second = await client.get("/api/v1/me/stream?format=ndjson", headers=auth)
    refused(second, "streams_per_token", 1)
    stream = first._iterator  # type: ignore[attr-defined]  # the body's own generator, as the server runs it
    assert b'"type":"tables"' in await stream.__anext__()  # the stream runs
    await stream.aclose()  # the client went away
    for _ in range(100):  # the place is given back in the background
        third = await client.get("/api/v1/me/stream?format=ndjson", headers=auth)
        if third.status_code == 200:
            await third._iterator.aclose()  # type: ignore[attr-defined]
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the closed stream's place was not given back")
