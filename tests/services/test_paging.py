"""The one keyset paginator (games/paging.py): whole lists page forward and back with no row missed or
repeated, also while rows are added; a cursor of one API works in the other; a forged cursor is
invalid_cursor before any query; the page size is bounded."""

from __future__ import annotations

import base64
from urllib.parse import unquote

import pytest
from rest_framework.test import APIClient

from games import paging, reads
from games.accounts import app_create, player_create
from games.errors import ServiceError
from games.models import Rating, Table
from games.ratings import LEADERBOARD_PAGES
from tests.graphql.test_graphql import gql

pytestmark = pytest.mark.django_db


def _tables(n: int) -> list[int]:
    app, _ = app_create(name="paging")
    return [Table.objects.create(app=app, options={}, state={}).pk for _ in range(n)]


def test_forward_then_back_covers_every_row_once_in_order() -> None:
    ids = _tables(47)
    rows = Table.objects.filter(pk__in=ids)
    seen, cursor, pages = [], None, []
    while True:
        page = paging.paginate(rows, reads.TABLE_PAGES, cursor, 10)
        pages.append(page)
        seen += [t.pk for t in page.rows]
        if page.next is None:
            break
        cursor = page.next
    assert seen == sorted(ids, reverse=True)
    assert [len(p.rows) for p in pages] == [10, 10, 10, 10, 7]
    back, cursor = [], pages[-1].previous
    while cursor is not None:
        page = paging.paginate(rows, reads.TABLE_PAGES, cursor, 10)
        back = [t.pk for t in page.rows] + back
        cursor = page.previous
    assert back == seen[:40]


def test_rows_added_while_paging_are_neither_skipped_nor_repeated() -> None:
    ids = _tables(25)
    rows = Table.objects.filter(app__name="paging")
    first = paging.paginate(rows, reads.TABLE_PAGES, None, 10)
    _tables(5)  # newer tables: before the first page, not in the pages after it
    rest = paging.paginate(rows, reads.TABLE_PAGES, first.next, 100)
    assert [t.pk for t in first.rows + rest.rows] == sorted(ids, reverse=True)


def test_a_two_field_order_with_ties_pages_exactly() -> None:
    app, _ = app_create(name="ties")
    for i in range(30):
        player, _ = player_create(app=app, name=f"p{i}")
        Rating.objects.create(app=app, player=player, family="classic-4", mu=25, sigma=8, score=float(i % 3))
    rows = Rating.objects.filter(app=app)
    seen, cursor = [], None
    while True:
        page = paging.paginate(rows, LEADERBOARD_PAGES, cursor, 7)
        seen += [(r.score, r.pk) for r in page.rows]
        if page.next is None:
            break
        cursor = page.next
    assert seen == sorted(((r.score, r.pk) for r in rows), key=lambda k: (-k[0], k[1]))


@pytest.mark.parametrize(
    "cursor",
    [
        "nonsense",
        base64.urlsafe_b64encode(b"table:a:abc").decode(),
        base64.urlsafe_b64encode(b"rating:a:1").decode(),  # another list's
        base64.urlsafe_b64encode(b"table:x:1").decode(),
        base64.urlsafe_b64encode(b"table:a:99999999999999999999").decode(),  # beyond 64 bits
        base64.urlsafe_b64encode(b"table:a:1:2").decode(),
    ],
)
def test_a_cursor_this_api_did_not_make_is_invalid_cursor(cursor: str) -> None:
    with pytest.raises(ServiceError) as refused:
        paging.paginate(Table.objects.all(), reads.TABLE_PAGES, cursor, 10)
    assert refused.value.code == "invalid_cursor"


def test_page_size_is_bounded() -> None:
    assert paging.page_size(None) == paging.PAGE_SIZE
    for bad in (0, paging.MAX_PAGE_SIZE + 1):
        with pytest.raises(ServiceError) as refused:
            paging.page_size(bad)
        assert refused.value.code == "invalid_filter"


def test_a_rest_next_cursor_is_a_graphql_after_cursor() -> None:
    _, key = app_create(name="both")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    for _ in range(25):
        assert client.post("/api/v1/tables", {}, format="json").status_code == 201
    first = client.get("/api/v1/tables").json()
    cursor = first["next"].split("cursor=")[1]
    rest_second = client.get(f"/api/v1/tables?cursor={cursor}").json()["results"]
    query = "query($after: String) { tables(after: $after) { edges { node { id } } } }"
    data = gql(query, key, after=unquote(cursor))["data"]
    assert [e["node"]["id"] for e in data["tables"]["edges"]] == [r["id"] for r in rest_second]
