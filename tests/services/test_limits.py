"""The caps on what an app or a player grows (invite codes, bots, webhook endpoints, devices) and the
paging of their lists, tournaments' too, in REST and GraphQL (docs/rest.md#limits)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from games import extbots, paging, standings
from games.accounts import app_create, player_create
from games.models import BotEndpoint, Invite, PushDevice, Tournament, WebhookEndpoint
from games.services.invites import INVITES_MAX
from tests.api.test_api import client
from tests.graphql.test_graphql import gql, ok

pytestmark = pytest.mark.django_db


def walk_rest(c: APIClient, path: str, key: str = "results") -> list[dict[str, Any]]:
    """Every item of a REST list, following `next` to the end; each page checked for its links."""
    seen: list[dict[str, Any]] = []
    url: str | None = path
    pages = 0
    while url is not None:
        r = c.get(url)
        assert r.status_code == 200, r.content
        body = r.json()
        assert set(body) == {"next", "previous", key}, body
        assert len(body[key]) <= paging.PAGE_SIZE
        assert (body["previous"] is None) == (pages == 0)
        seen += body[key]
        url = body["next"]
        pages += 1
    return seen


def walk_graphql(query: str, token: str, field: str, **variables: Any) -> list[dict[str, Any]]:
    """Every node of a GraphQL connection, following `pageInfo.endCursor` with `after`."""
    seen: list[dict[str, Any]] = []
    after = None
    while True:
        page = ok(query, token, after=after, **variables)[field]
        seen += [edge["node"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            return seen
        after = page["pageInfo"]["endCursor"]


def once_each(items: list[dict[str, Any]], key: str, expected: list[Any]) -> None:
    values = [item[key] for item in items]
    assert sorted(values) == sorted(expected) and len(set(values)) == len(values)


def refused_unchanged(call: Callable[[], Any], count: Callable[[], int], code: str, limit: int) -> None:
    """`call` is 409 `code` naming `limit`, and `count()` is what it was."""
    before = count()
    r = call()
    assert r.status_code == 409, r.content
    assert r.json()["code"] == code and r.json()["limit"] == limit
    assert count() == before


def test_a_table_holds_at_most_its_invite_codes_and_lists_them_in_pages() -> None:
    app, key = app_create(name="invites")
    c = client(key)
    table = c.post("/api/v1/tables", {"visibility": "private"}, format="json").json()["id"]
    path = f"/api/v1/tables/{table}/invites"
    made = [c.post(path, {}, format="json").json() for _ in range(INVITES_MAX)]
    assert all("code" in m for m in made)
    usable = Invite.objects.filter(table_id=table, revoked_at__isnull=True)
    refused_unchanged(lambda: c.post(path, {}, format="json"), usable.count, "too_many_invites", INVITES_MAX)
    # a revoked code frees its place
    assert c.delete(f"{path}/{made[0]['code']}").status_code == 204
    again = c.post(path, {"uses": 1}, format="json")
    assert again.status_code == 201
    # the list pages: every usable code exactly once (the revoked one left out), oldest first
    listed = walk_rest(c, path, key="invites")
    hints = [m["hint"] for m in made[1:]] + [again.json()["hint"]]
    assert [i["hint"] for i in listed] == hints
    # and GraphQL's connection walks the same codes, in pages of 7
    query = (
        "query($t: Int!, $after: String) { invitePage(tableId: $t, first: 7, after: $after) "
        "{ edges { cursor node { hint } } pageInfo { hasNextPage endCursor } } }"
    )
    assert [i["hint"] for i in walk_graphql(query, key, "invitePage", t=table)] == hints
    assert Invite.objects.filter(table__app=app).count() == INVITES_MAX + 1


def test_every_invite_creation_past_the_cap_fails() -> None:
    """Not only the first one past it: a refusal frees nothing, and the count stays at the cap."""
    _, key = app_create(name="race")
    c = client(key)
    table = c.post("/api/v1/tables", {}, format="json").json()["id"]
    codes = [c.post(f"/api/v1/tables/{table}/invites", {}, format="json").status_code for _ in range(25)]
    assert codes == [201] * INVITES_MAX + [409] * (25 - INVITES_MAX)


def test_an_app_holds_at_most_its_bots_and_lists_them_in_pages(settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True  # no name is resolved: the URLs need not exist
    settings.QUOTA_BOTS = 1000  # the operator's quota past the ceiling: BOTS_MAX still holds
    app, key = app_create(name="bots")
    c = client(key)
    ids = []
    for n in range(extbots.BOTS_MAX):
        r = c.post("/api/v1/bots", {"name": f"b{n}", "url": "http://127.0.0.1:9/t"}, format="json")
        assert r.status_code == 201, r.content
        ids.append(r.json()["id"])
    count = BotEndpoint.objects.filter(app=app).count
    refused_unchanged(
        lambda: c.post("/api/v1/bots", {"name": "one-more", "url": "http://127.0.0.1:9/t"}, format="json"),
        count,
        "too_many_bots",
        extbots.BOTS_MAX,
    )
    body = gql(
        'mutation { registerBot(name: "gql", url: "http://127.0.0.1:9/t") '
        "{ bot { id } errors { code limit } } }",
        key,
    )["data"]["registerBot"]
    assert body == {"bot": None, "errors": [{"code": "too_many_bots", "limit": extbots.BOTS_MAX}]}
    assert count() == extbots.BOTS_MAX
    once_each(walk_rest(c, "/api/v1/bots"), "id", ids)
    query = (
        "query($after: String) { botPage(first: 30, after: $after) "
        "{ edges { node { id } } pageInfo { hasNextPage endCursor } } }"
    )
    assert [b["id"] for b in walk_graphql(query, key, "botPage")] == ids
    # deleting one frees its place
    assert c.delete(f"/api/v1/bots/{ids[0]}").status_code == 204
    r = c.post("/api/v1/bots", {"name": "again", "url": "http://127.0.0.1:9/t"}, format="json")
    assert r.status_code == 201


def test_webhook_endpoints_list_in_pages_up_to_their_cap(settings: Any) -> None:
    settings.WEBHOOK_MAX_PER_APP = 45
    settings.QUOTA_WEBHOOKS = 1000  # the setting's own cap is the one reached
    app, key = app_create(name="hooks")
    c = client(key)
    ids = [
        c.post("/api/v1/webhooks", {"url": f"https://e{n}.example/h"}, format="json").json()["id"]
        for n in range(45)
    ]
    refused_unchanged(
        lambda: c.post("/api/v1/webhooks", {"url": "https://x.example/h"}, format="json"),
        WebhookEndpoint.objects.filter(app=app).count,
        "too_many_webhooks",
        45,
    )
    listed = walk_rest(c, "/api/v1/webhooks")
    assert [w["id"] for w in listed] == ids  # oldest first, three pages of 20, 20 and 5
    query = (
        "query($after: String) { webhookPage(after: $after) "
        "{ edges { node { id } } pageInfo { hasNextPage endCursor } } }"
    )
    assert [w["id"] for w in walk_graphql(query, key, "webhookPage")] == ids
    # the page before comes back from a `previous` link, the same rows
    second = c.get(c.get("/api/v1/webhooks").json()["next"]).json()
    back = c.get(second["previous"]).json()
    assert [w["id"] for w in back["results"]] == ids[:20]
    assert c.get("/api/v1/webhooks?cursor=bogus").json()["code"] == "invalid_cursor"


def test_a_players_devices_list_in_pages_up_to_their_cap(settings: Any) -> None:
    settings.PUSH_MAX_DEVICES = 25
    app, key = app_create(name="devices")
    player, token = player_create(app=app, name="p")
    c, mine = client(key), client(token)
    path = f"/api/v1/players/{player.pk}/devices"
    ids = []
    for n in range(25):
        r = c.post(path, {"kind": "fcm", "token": f"fcm-token-{n:04d}-abcdefghij"}, format="json")
        assert r.status_code == 201, r.content
        ids.append(r.json()["id"])
    refused_unchanged(
        lambda: c.post(path, {"kind": "fcm", "token": "fcm-token-more-abcdefghij"}, format="json"),
        PushDevice.objects.filter(player=player).count,
        "too_many_devices",
        25,
    )
    assert [d["id"] for d in walk_rest(c, path)] == ids
    assert [d["id"] for d in walk_rest(mine, "/api/v1/me/devices")] == ids
    query = (
        "query($after: String) { myDevicePage(first: 10, after: $after) "
        "{ edges { node { id } } pageInfo { hasNextPage endCursor } } }"
    )
    assert [d["id"] for d in walk_graphql(query, token, "myDevicePage")] == ids
    query = (
        "query($p: Int!, $after: String) { playerDevicePage(playerId: $p, first: 10, after: $after) "
        "{ edges { node { id } } pageInfo { hasNextPage endCursor } } }"
    )
    assert [d["id"] for d in walk_graphql(query, key, "playerDevicePage", p=player.pk)] == ids


def test_tournaments_list_in_pages_past_the_old_hundred() -> None:
    """Tournaments have no cap (a per-day quota bounds their growth): their list pages, newest first."""
    app, key = app_create(name="tournaments")
    Tournament.objects.bulk_create(
        Tournament(app=app, name=f"t{n}", entrants=[], options={}, deal_sets=1, seed="s", status="finished")
        for n in range(105)
    )
    ids = list(Tournament.objects.filter(app=app).order_by("-pk").values_list("pk", flat=True))
    with CaptureQueriesContext(connection) as first_page:
        client(key).get("/api/v1/tournaments")
    assert len(first_page) < 10  # one page is a few queries, however many tournaments there are
    assert [t["id"] for t in walk_rest(client(key), "/api/v1/tournaments")] == ids
    query = (
        "query($after: String) { tournamentPage(first: 50, after: $after) "
        "{ edges { node { id } } pageInfo { hasNextPage endCursor } } }"
    )
    assert [t["id"] for t in walk_graphql(query, key, "tournamentPage")] == ids
    assert standings.tournaments_of(app).count() == 105


def test_the_rest_and_graphql_cursors_are_the_same() -> None:
    _, key = app_create(name="cursors")
    c = client(key)
    table = c.post("/api/v1/tables", {}, format="json").json()["id"]
    for _ in range(3):
        assert c.post(f"/api/v1/tables/{table}/invites", {}, format="json").status_code == 201
    page = ok(
        "query($t: Int!) { invitePage(tableId: $t, first: 1) { edges { node { hint } } "
        "pageInfo { endCursor } } }",
        key,
        t=table,
    )["invitePage"]
    rest = c.get(f"/api/v1/tables/{table}/invites?cursor={page['pageInfo']['endCursor']}").json()
    all_hints = [i["hint"] for i in walk_rest(c, f"/api/v1/tables/{table}/invites", key="invites")]
    assert [i["hint"] for i in rest["invites"]] == all_hints[1:]
