"""Scoped API keys: every operation an app key may call, and every read, against every scope, over
REST and GraphQL. The operations come from their declarations (games.operations.ALL) and the reads
from games.operations.scopes, so a new one is in the matrix without a line here."""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern
from graphql import (
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLScalarType,
    get_named_type,
    is_composite_type,
)
from rest_framework.test import APIClient

from games import accounts
from games import operations as ops
from games.api import urls
from games.contracts.openapi import openapi_document
from games.graphql.schema import schema
from games.models import App
from games.operations import scopes

pytestmark = pytest.mark.django_db

SCOPES = [s for s in accounts.SCOPES if s != accounts.Scope.admin]
FOR_APPS = [op for op in ops.ALL if op.scope is not None]
MISSING = 10**12  # an id no row has: a request that passes its checks answers 404, never acts
AUTH_REFUSALS = {"missing_scope", "not_authenticated", "authentication_failed", "app_key_required"}


@pytest.fixture
def keys() -> dict[str, str]:
    """One app's keys: one per scope (by the scope's name), `admin`, and `all but <scope>` for each."""
    app = App.objects.create(name="scoped")
    out = {scope: accounts.key_create(app, name=scope, scopes=[scope])[1] for scope in accounts.SCOPES}
    for scope in SCOPES:
        others = [s for s in SCOPES if s != scope]
        out[f"all but {scope}"] = accounts.key_create(app, scopes=others)[1]
    return out


def test_every_app_operation_declares_a_known_scope_and_no_player_operation_does() -> None:
    for op in ops.ALL:
        app_may_call = op.access in (ops.Access.ANY, ops.Access.APP)
        assert (op.scope in accounts.SCOPES) if app_may_call else op.scope is None, op.name


def test_every_scope_is_needed_by_some_operation_or_read() -> None:
    """The scopes are derived from what the API does: none is left that nothing asks for."""
    needed = {op.scope for op in ops.ALL} | {
        *scopes.REST_READS.values(),
        *scopes.GRAPHQL_READS.values(),
        *scopes.SUBSCRIPTIONS.values(),
        *scopes.STREAMS.values(),
    }
    assert set(SCOPES) <= needed, set(SCOPES) - needed


# -- REST ---------------------------------------------------------------------------------------


@functools.cache
def _rest_routes() -> dict[str, tuple[str, str]]:
    """operationId -> (method, path) from the OpenAPI document."""
    return {
        op["operationId"]: (method, path)
        for path, item in openapi_document()["paths"].items()
        for method, op in item.items()
        if method in ("get", "post", "put", "patch", "delete")
    }


def _filled(path: str) -> str:
    """A path with every parameter given a value no row has (a uuid for uuids, a code for codes)."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.endswith("_id") and name in ("delivery_id", "export_id"):
            return str(uuid.uuid4())
        return "no-such-code" if name == "code" else str(MISSING)

    return re.sub(r"\{(\w+)\}", value, path)


def _rest(key: str, method: str, path: str) -> Any:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return getattr(client, method)(_filled(path), {}, format="json")


def _refused_for_scope(response: Any, scope: str) -> bool:
    body = response.json() if response.get("Content-Type", "").startswith("application/json") else {}
    return response.status_code == 403 and body.get("code") == "missing_scope" and body.get("scope") == scope


@pytest.mark.parametrize("operation", FOR_APPS, ids=lambda op: op.name)
def test_rest_each_operation_takes_exactly_its_scope(operation: ops.Operation, keys: dict[str, str]) -> None:
    method, path = _rest_routes()[operation.name]
    for scope in SCOPES:
        answer = _rest(keys[scope], method, path)
        if scope == operation.scope:
            assert answer.status_code not in (401, 403), (scope, answer.content)
        else:
            assert _refused_for_scope(answer, operation.scope), (scope, answer.status_code, answer.content)
    answer = _rest(keys[f"all but {operation.scope}"], method, path)
    assert _refused_for_scope(answer, operation.scope), answer.content
    assert _rest(keys["admin"], method, path).status_code not in (401, 403)


def _get_routes() -> Iterator[str]:
    for pattern in urls.urlpatterns:
        view = getattr(pattern.callback, "view_class", None) if isinstance(pattern, URLPattern) else None
        if view is not None and hasattr(view, "get"):
            yield str(pattern.pattern)


def test_every_rest_read_is_declared() -> None:
    missing = [route for route in _get_routes() if route not in scopes.REST_READS]
    assert not missing, f"declare their scopes in games/operations/scopes.py: {missing}"


def _openapi_path(route: str) -> str:
    return "/api/v1/" + re.sub(r"<\w+:(\w+)>", r"{\1}", route)


@pytest.mark.parametrize("route", [r for r, scope in scopes.REST_READS.items() if scope is not None], ids=str)
def test_rest_each_read_takes_exactly_its_scope(route: str, keys: dict[str, str]) -> None:
    scope = scopes.REST_READS[route]
    assert scope is not None
    path = _openapi_path(route)
    for other in SCOPES:
        answer = _rest(keys[other], "get", path)
        if other == scope:
            assert answer.status_code not in (401, 403), (other, answer.content)
        else:
            assert _refused_for_scope(answer, scope), (other, answer.status_code, answer.content)


# -- GraphQL ------------------------------------------------------------------------------------


def _dummy(kind: Any) -> Any:
    """A value of a GraphQL input type (nulls left out: only required arguments are given)."""
    if isinstance(kind, GraphQLNonNull):
        return _dummy(kind.of_type)
    if isinstance(kind, GraphQLList):
        return []
    if isinstance(kind, GraphQLEnumType):
        return next(iter(kind.values))
    if isinstance(kind, GraphQLInputObjectType):
        return {name: _dummy(f.type) for name, f in kind.fields.items() if isinstance(f.type, GraphQLNonNull)}
    assert isinstance(kind, GraphQLScalarType)
    return {
        "Int": MISSING % 2**31,
        "Boolean": False,
        "Float": 1.0,
        "DateTime": "2099-01-01T00:00:00+00:00",
    }.get(kind.name, str(uuid.uuid4()))


def _graphql(key: str, kind: str, name: str, field: GraphQLField) -> dict[str, Any]:
    """Call one root field with a value for each required argument; its errors' codes and data."""
    required = {a: arg.type for a, arg in field.args.items() if isinstance(arg.type, GraphQLNonNull)}
    declared = ", ".join(f"${a}: {t}" for a, t in required.items())
    passed = ", ".join(f"{a}: ${a}" for a in required)
    selection = " { __typename }" if is_composite_type(get_named_type(field.type)) else ""
    if kind == "mutation":
        selection = " { errors { code } }"
    head = f"{kind}({declared})" if declared else kind
    call = f"{name}({passed})" if passed else name
    query = f"{head} {{ {call}{selection} }}"
    variables = {a: _dummy(t) for a, t in required.items()}
    response = Client().post(
        "/graphql/",
        {"query": query, "variables": variables},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    body = response.json()
    assert "data" in body, body
    codes = [e.get("extensions", {}).get("code") for e in body.get("errors", [])]
    payload = (body["data"] or {}).get(name)
    if kind == "mutation" and payload:
        codes += [e["code"] for e in payload["errors"]]
    return {"codes": codes, "body": body}


def _refused_in_graphql(answer: dict[str, Any]) -> bool:
    return answer["codes"] == ["missing_scope"]


@pytest.mark.parametrize("operation", FOR_APPS, ids=lambda op: op.name)
def test_graphql_each_operation_takes_exactly_its_scope(
    operation: ops.Operation, keys: dict[str, str]
) -> None:
    field = schema.graphql_schema.mutation_type.fields[operation.name]
    for scope in SCOPES:
        answer = _graphql(keys[scope], "mutation", operation.name, field)
        if scope == operation.scope:
            assert not AUTH_REFUSALS & set(answer["codes"]), (scope, answer)
        else:
            assert _refused_in_graphql(answer), (scope, answer)
    assert _refused_in_graphql(
        _graphql(keys[f"all but {operation.scope}"], "mutation", operation.name, field)
    )


def test_every_graphql_query_field_is_declared() -> None:
    fields = schema.graphql_schema.query_type.fields
    missing = [name for name in fields if name not in scopes.GRAPHQL_READS]
    assert not missing, f"declare their scopes in games/operations/scopes.py: {missing}"
    subscriptions = schema.graphql_schema.subscription_type.fields
    assert set(subscriptions) == set(scopes.SUBSCRIPTIONS)


@pytest.mark.parametrize(
    "name",
    [n for n in schema.graphql_schema.query_type.fields if scopes.graphql_read(n) is not None],
    ids=str,
)
def test_graphql_each_query_field_takes_exactly_its_scope(name: str, keys: dict[str, str]) -> None:
    field = schema.graphql_schema.query_type.fields[name]
    scope = scopes.graphql_read(name)
    for other in SCOPES:
        answer = _graphql(keys[other], "query", name, field)
        if other == scope:
            assert not AUTH_REFUSALS & set(answer["codes"]), (other, answer)
        else:
            assert _refused_in_graphql(answer), (other, answer)
