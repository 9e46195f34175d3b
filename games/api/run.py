"""How REST serves an operation (games/operations): its OpenAPI description from the declaration, and
`perform`, which reads the wire (path, JSON body, If-Match, Idempotency-Key), runs the operation and
answers: the caller's view of a table for a table's change, the operation's own answer otherwise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.http import HttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from games import paging, reads, services
from games.accounts import Principal
from games.api import schemas
from games.errors import Code, ServiceError
from games.operations.base import Access, Operation

F = TypeVar("F", bound=Callable[..., Any])  # a view method, as it is

IF_MATCH = OpenApiParameter(
    "If-Match",
    {"type": "string", "pattern": '^(W/)?"?[0-9]{1,18}"?$'},
    OpenApiParameter.HEADER,
    required=False,
    description="The version you saw",
)
IF_NONE_MATCH = OpenApiParameter(
    "If-None-Match",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description='The ETag of the table as you last read it (W/"<version>"): 304, no body, when unchanged',
)
ETAG = {
    "schema": {"type": "string"},
    "description": 'W/"<version>": send it back as If-None-Match to read again, as If-Match to act',
}
IDEMPOTENCY = OpenApiParameter(
    "Idempotency-Key",
    {"type": "string", "pattern": "^[!-~]([ -~]{0,126}[!-~])?$"},
    OpenApiParameter.HEADER,
    required=False,
    description="Retry key (1 to 128 printable ASCII characters): acts at most once",
)


AFTER = OpenApiParameter(
    "after",
    {"type": "integer", "minimum": 0, "maximum": 10**18 - 1},
    description="A sequence number up to the table's version (beyond it: 400 invalid_after)",
)


def principal_of(request: Request) -> Principal:
    user = request.user
    assert isinstance(user, Principal)
    return user


def expected_version(request: Request, body: dict[str, Any] | None = None) -> int | None:
    """The version the client saw: the If-Match header, else the body's `expected_version`."""
    raw = request.headers.get("If-Match")
    if raw is None:
        return (body or {}).get("expected_version")
    text = raw.strip().removeprefix("W/").strip('"')
    if not (text.isascii() and text.isdigit() and len(text) <= 18):
        msg = "If-Match / expected_version must be a version number"
        raise ServiceError("invalid_version", msg, kind="malformed")
    return int(text)


def after_of(request: Request) -> int:
    raw = request.query_params.get("after", "0")
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):
        raise ServiceError("invalid_after", "after must be a sequence number (0 or more)", kind="malformed")
    return int(raw)


def idempotency_of(
    request: Request, principal: Principal, status: int, body: bool = True
) -> services.Idempotency | None:
    """The request's Idempotency-Key, with what identifies the request (its method, path,
    If-Match and body: none for an operation without one) and how its answer is kept."""
    what = f"{request.method} {request.path}\n{request.headers.get('If-Match', '')}"
    return services.Idempotency.for_table(
        principal, request.headers.get("Idempotency-Key"), what, request.data if body else {}, status
    )


def documented(
    operation: Operation | None = None,
    *,
    op: str = "",
    tag: str,
    request: Any = None,
    ok: Any = OpenApiTypes.OBJECT,
    status: int = 200,
    params: Any = (),
    errors: tuple[Code | tuple[Code, int], ...] = (),
    auth: bool = True,
    more: dict[int, Any] | None = None,
    headers: dict[int, dict[str, Any]] | None = None,
    body: bool = True,
) -> Callable[[F], F]:
    """The OpenAPI description of one operation: its id, description, body and error codes from its
    declaration (`operation`; `request` overrides its body's description, as the action's union
    does), else as given (`op`, `request`, `errors`: the reads); its tag and answer; every error it
    can answer with their codes (games/api/schemas.py: error_codes); `more` answers (a 304) and the
    `headers` of answers by status (the hook schemas.error_details adds them). `body=False`: an
    operation sent without a body (a DELETE)."""
    description = None
    if operation is not None:
        op, description = operation.name, operation.description
        request = (request or operation.input) if body else None
        errors = operation.codes()
        auth = operation.access is not Access.ANYONE
        params = [
            *([IF_MATCH] if operation.versioned else []),
            *([IDEMPOTENCY] if operation.idempotent else []),
            *params,
        ]
    elif auth and Code.missing_scope not in errors:  # a read: an app key needs its scope (operations.scopes)
        errors = (*errors, Code.missing_scope)
    codes = schemas.error_codes(errors, body=request is not None, auth=auth)
    extensions: dict[str, Any] = {"x-error-codes": {str(s): names for s, names in codes.items()}}
    if headers:
        extensions["x-response-headers"] = {str(s): h for s, h in headers.items()}
    described: Callable[[F], F] = extend_schema(
        operation_id=op,
        description=description,
        tags=[tag],
        request=request,
        responses={status: ok, **(more or {}), **schemas.error_responses(codes)},
        parameters=list(params),
        extensions=extensions,
    )
    return described


def perform(
    request: Request,
    operation: Operation,
    status: int = 200,
    *,
    body: bool = True,
    then: Callable[[Principal, Any], Any] | None = None,
    **path: Any,
) -> HttpResponseBase:
    """Run `operation` for this request: who calls (refused before the body is read when the
    operation is not theirs), the body checked by its input (`body=False`: none is read, as for a
    DELETE, whatever Content-Type says), the path's values, If-Match, the Idempotency-Key. A table's
    change answers the caller's view of the table (or a repeated key's first answer); anything
    else, the operation's answer as it is (None: no body), or as `then(principal, answer)` makes it
    (REST's own shape of an answer, as PATCH me answers GET me's body)."""
    principal = None if operation.access is Access.ANYONE else principal_of(request)
    if principal is not None:
        operation.allowed(principal)
    data = operation.parse(request.data if body else {})
    if operation.versioned:
        data["expected_version"] = expected_version(request, data)
    data |= path
    idem = None
    if operation.idempotent and principal is not None:
        idem = idempotency_of(request, principal, status, body)
    out = operation(principal, data, idem)
    if isinstance(out, services.Outcome):
        assert principal is not None
        return table_answer(principal, out, status)
    if then is not None:
        assert principal is not None
        out = then(principal, out)
    return Response(out, status=status)


def table_answer(principal: Principal, out: services.Outcome, status: int) -> HttpResponseBase:
    """A table's change as the caller sees the table. With an Idempotency-Key the answer is the
    stored first answer, byte for byte, on every repeat (marked by `Idempotent-Replayed: true`)."""
    if out.response is not None:
        code, body = out.response
        response = HttpResponse(body, status=code, content_type="application/json")
        response["Idempotent-Replayed"] = "true" if out.replayed else "false"
        return response
    assert out.table is not None
    return Response(reads.table_body(out.table, principal, out.state), status=status)


CURSOR = OpenApiParameter("cursor", str, description="The `next` or `previous` link's cursor (opaque)")


def paged(
    request: Request, rows: Any, keyset: paging.Keyset, body: Callable[[Any], Any], *, key: str = "results"
) -> Response:
    """A page of `rows` as REST answers a list: `results` (each row through `body`; `key` names it
    otherwise for a list that had another name before it paged) and the `next` and `previous`
    links (null at either end), whose `cursor` is games.paging's, the same as GraphQL's `after`."""
    page = paging.paginate(rows, keyset, request.query_params.get("cursor"))
    url = request.build_absolute_uri()

    def link(cursor: str | None) -> str | None:
        return None if cursor is None else replace_query_param(url, "cursor", cursor)

    return Response(
        {"next": link(page.next), "previous": link(page.previous), key: [body(r) for r in page.rows]}
    )
