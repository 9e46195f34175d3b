"""One keyset paginator for every list of both APIs: opaque cursors, pages forward and back.

A list declares its `Keyset`: a name and a unique ordering (`-id`; `-score, id`). A page is read with
one query of `size + 1` rows after (or before) the row a cursor names, so it costs the same on the
first page and the thousandth, and a row added meanwhile is neither skipped nor repeated. REST puts
the cursors in its `next` and `previous` links (`?cursor=`), GraphQL in `after` and each edge's
`cursor`: the same cursor works in both. A cursor this API did not make is 400 `invalid_cursor`
before any query runs (its values are parsed as the ordering's types, integers kept to 64 bits).

Why not DRF's CursorPagination: it is REST's alone (it reads the request and builds links), and it
pages a non-unique ordering with offsets inside the cursor; GraphQL needs per-row cursors.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db.models import Model, Q, QuerySet

from games.errors import ServiceError

T = TypeVar("T", bound=Model)
_BIGINT = 2**63 - 1
PAGE_SIZE = 20  # rows per page unless a list or a client asks for another size
MAX_PAGE_SIZE = 100


def _int(text: str) -> int:
    if not (text.isascii() and text.lstrip("-").isdigit() and len(text) <= 19):
        raise ValueError(text)
    value = int(text)
    if not -_BIGINT <= value <= _BIGINT:
        raise ValueError(text)
    return value


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


# How each kind of key is read back from a cursor.
PARSERS: dict[type, Callable[[str], Any]] = {int: _int, float: _float}


@dataclass(frozen=True)
class Keyset:
    """A list's order: `kind` names it in its cursors; `fields` are the ordering (a leading `-`:
    descending), unique as a whole; `types` the type of each field's value (int or float)."""

    kind: str
    fields: tuple[str, ...]
    types: tuple[type, ...]

    def key_of(self, row: Model) -> tuple[Any, ...]:
        return tuple(getattr(row, f.lstrip("-")) for f in self.fields)

    def cursor(self, direction: str, row: Model) -> str:
        """An opaque cursor: the rows after (`a`) or before (`b`) this row."""
        text = ":".join([self.kind, direction, *(repr(v) for v in self.key_of(row))])
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    def parse(self, cursor: str) -> tuple[str, tuple[Any, ...]]:
        """The direction and key a cursor names; ServiceError invalid_cursor for any other text."""
        try:
            padded = cursor + "=" * (-len(cursor) % 4)
            kind, direction, *values = base64.urlsafe_b64decode(padded.encode()).decode().split(":")
            if kind != self.kind or direction not in ("a", "b") or len(values) != len(self.fields):
                raise ValueError(cursor)
            return direction, tuple(PARSERS[t](v) for t, v in zip(self.types, values, strict=True))
        except (ValueError, UnicodeDecodeError) as exc:
            raise ServiceError(
                "invalid_cursor", "cursor must be one this API returned", kind="malformed"
            ) from exc

    def beyond(self, key: tuple[Any, ...], *, forward: bool) -> Q:
        """The rows after `key` in this order (`forward`), or before it."""
        found = Q(pk__in=[])  # nothing
        for i, field in enumerate(self.fields):
            name = field.lstrip("-")
            descending = field.startswith("-") == forward
            step = Q(**{f"{name}__{'lt' if descending else 'gt'}": key[i]})
            for earlier, value in zip(self.fields[:i], key[:i], strict=False):
                step &= Q(**{earlier.lstrip("-"): value})
            found |= step
        return found

    def reversed_fields(self) -> tuple[str, ...]:
        return tuple(f[1:] if f.startswith("-") else f"-{f}" for f in self.fields)


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page: its rows, and the cursors of the pages after and before it (None: none)."""

    rows: list[T]
    next: str | None
    previous: str | None
    keyset: Keyset

    def cursor_of(self, row: T) -> str:
        """A cursor that starts after this row (a GraphQL edge's)."""
        return self.keyset.cursor("a", row)


def page_size(first: int | None, default: int = PAGE_SIZE) -> int:
    """A client's page size (None: the default), or invalid_filter outside 1 to MAX_PAGE_SIZE."""
    size = default if first is None else first
    if not 1 <= size <= MAX_PAGE_SIZE:
        raise ServiceError("invalid_filter", f"first must be 1 to {MAX_PAGE_SIZE}", kind="malformed")
    return size


def paginate(rows: QuerySet[T], keyset: Keyset, cursor: str | None, size: int = PAGE_SIZE) -> Page[T]:
    """The page of `rows` (in the keyset's order) that `cursor` names (None: the first page)."""
    if cursor is None:
        found = list(rows.order_by(*keyset.fields)[: size + 1])
        more = len(found) > size
        found = found[:size]
        last = keyset.cursor("a", found[-1]) if more and found else None
        return Page(found, last, None, keyset)
    direction, key = keyset.parse(cursor)
    if direction == "a":
        found = list(rows.filter(keyset.beyond(key, forward=True)).order_by(*keyset.fields)[: size + 1])
        more = len(found) > size
        found = found[:size]
        return Page(
            found,
            keyset.cursor("a", found[-1]) if more and found else None,
            keyset.cursor("b", found[0]) if found else None,
            keyset,
        )
    back = rows.filter(keyset.beyond(key, forward=False)).order_by(*keyset.reversed_fields())
    found = list(back[: size + 1])
    more = len(found) > size
    found = list(reversed(found[:size]))
    return Page(
        found,
        keyset.cursor("a", found[-1]) if found else None,
        keyset.cursor("b", found[0]) if more and found else None,
        keyset,
    )
