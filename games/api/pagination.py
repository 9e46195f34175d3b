"""Cursor pages whose cursor is checked before it reaches a query: a forged cursor is 400 `invalid_cursor`.

DRF decodes the cursor's position as text and hands it to the database filter, so a cursor whose
position is not a value of the ordering field (`p=12345` for a date) failed inside the query (500).
Here the position is converted with the ordering field's own `to_python` first, and integers are
kept within a 64-bit column.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db.models import Model
from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request

from games.errors import ServiceError

_BIGINT = 2**63 - 1


def _invalid() -> ServiceError:
    return ServiceError("invalid_cursor", "cursor must be one this API returned", kind="malformed")


class CheckedCursorPagination(CursorPagination):
    """CursorPagination with the cursor validated against the ordering field."""

    model: type[Model] | None = None

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> Any:
        self.model = queryset.model
        return super().paginate_queryset(queryset, request, view)

    def decode_cursor(self, request: Request) -> Cursor | None:
        try:
            cursor = super().decode_cursor(request)
        except NotFound as exc:
            raise _invalid() from exc
        if cursor is None or cursor.position is None or self.model is None:
            return cursor
        ordering = self.ordering if isinstance(self.ordering, str) else self.ordering[0]
        name = ordering.lstrip("-")
        try:
            field = self.model._meta.pk if name == "pk" else self.model._meta.get_field(name)
            # An ordering column, never a relation (which has no to_python).
            value = field.to_python(cursor.position)  # type: ignore[union-attr]
        except (FieldDoesNotExist, ValidationError, ValueError, TypeError, OverflowError) as exc:
            raise _invalid() from exc
        if value is None or (isinstance(value, int) and not -_BIGINT <= value <= _BIGINT):
            raise _invalid()
        return cursor
