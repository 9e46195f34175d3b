"""Each operation of games/operations is served and documented by both APIs from its one declaration:
REST's operationId and GraphQL's mutation are its name, both describe it with its description, REST
documents every code it can answer and its body's limits, GraphQL takes its input's fields."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from graphene.utils.str_converters import to_camel_case

from games import operations as ops
from games.contracts.openapi import openapi_document
from games.graphql.schema import schema

pytestmark = pytest.mark.django_db


@functools.cache
def _document() -> dict[str, Any]:
    return openapi_document()  # built once: it takes about a third of a second


def _rest() -> dict[str, dict[str, Any]]:
    document = _document()
    return {
        op["operationId"]: op
        for item in document["paths"].values()
        for method, op in item.items()
        if method in ("get", "post", "put", "patch", "delete")
    }


def _codes(operation: ops.Operation) -> set[str]:
    return {(c[0] if isinstance(c, tuple) else c).value for c in operation.codes()}


@pytest.mark.parametrize("operation", ops.ALL, ids=lambda op: op.name)
def test_rest_serves_each_operation_under_its_name_with_its_description_and_codes(
    operation: ops.Operation,
) -> None:
    served = _rest()[operation.name]
    assert served["description"] == operation.description
    documented = {code for answer in served["responses"].values() for code in answer.get("x-error-codes", ())}
    assert _codes(operation) <= documented, _codes(operation) - documented
    headers = {p["name"] for p in served.get("parameters", []) if p["in"] == "header"}
    assert ("If-Match" in headers) == operation.versioned
    assert ("Idempotency-Key" in headers) == operation.idempotent


@pytest.mark.parametrize("operation", ops.ALL, ids=lambda op: op.name)
def test_graphql_serves_each_operation_as_a_mutation_of_its_name_taking_its_input(
    operation: ops.Operation,
) -> None:
    field = schema.graphql_schema.mutation_type.fields[operation.name]
    assert field.description == operation.description
    arguments = set(field.args)
    # The input's fields (the path's values may keep an older GraphQL name: updateBot's `id`).
    inputs = {to_camel_case(name) for name in operation.input._declared_fields}
    assert inputs <= arguments, inputs - arguments
    version = field.args.get("expectedVersion")
    if operation.versioned:  # taken; where an operation takes none, an old argument is deprecated
        assert version is not None and not version.deprecation_reason
    else:
        assert version is None or version.deprecation_reason
    assert ("idempotencyKey" in arguments) == operation.idempotent


def test_a_limit_is_the_same_in_both_apis_because_it_is_declared_once() -> None:
    """createTable's bot_think_ms: REST's schema bounds are the input's, and GraphQL's description
    states the same bounds (both generated from the one field)."""
    field = ops.CREATE_TABLE.input._declared_fields["bot_think_ms"]
    rest = _rest()["createTable"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    component = _document()["components"]["schemas"][rest.rsplit("/", 1)[1]]
    prop = component["properties"]["bot_think_ms"]
    assert (prop["minimum"], prop["maximum"]) == (field.min_value, field.max_value)
    argument = schema.graphql_schema.mutation_type.fields["createTable"].args["botThinkMs"]
    assert argument.description == field.help_text
    assert f"{field.min_value:,} to {field.max_value:,}" in argument.description
