"""GraphQL's paged lists: a page of games.paging as a Relay connection, and the arguments that ask for one.

Every paged list (tables, deliveries, and what an app or a player grows: invite codes, bots,
webhook endpoints, devices, tournaments, the audit trail) is made by `connection`: `first` (at most
paging.MAX_PAGE_SIZE) and `after` (a cursor from `pageInfo.endCursor` or an edge, the same cursor
REST's `?cursor=` takes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import graphene
from django.db.models import Model, QuerySet

from games import paging

C = TypeVar("C", bound=graphene.relay.Connection)


def args() -> dict[str, Any]:
    """The `first` and `after` arguments of a paged list."""
    return {
        "first": graphene.Int(default_value=paging.PAGE_SIZE, description=f"At most {paging.MAX_PAGE_SIZE}"),
        "after": graphene.String(description="A cursor: pageInfo.endCursor or an edge's"),
    }


def connection(
    kind: type[C],
    rows: QuerySet[Any],
    keyset: paging.Keyset,
    node: Callable[[Any], Any],
    first: int | None,
    after: str | None,
) -> C:
    """The page of `rows` that `after` names (None: the first), `first` rows long, as a `kind`
    connection whose nodes are `node(row)`."""
    page: paging.Page[Model] = paging.paginate(rows, keyset, after, paging.page_size(first))
    edge = kind.Edge  # type: ignore[attr-defined]  # graphene makes it with the class
    edges = [edge(node=node(row), cursor=page.cursor_of(row)) for row in page.rows]
    return kind(
        edges=edges,
        page_info=graphene.relay.PageInfo(
            has_next_page=page.next is not None,
            has_previous_page=bool(after),
            start_cursor=edges[0].cursor if edges else None,
            end_cursor=edges[-1].cursor if edges else None,
        ),
    )
