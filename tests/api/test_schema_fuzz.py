"""schemathesis' generated requests to every operation of the live OpenAPI document: no input
produces a 5xx, an undocumented status, body or content type, or an error code the operation
does not list."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings

from tests.api.schema_checks import CONFORMS, schema


@schema.parametrize()
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_api_never_answers_5xx_or_off_schema(case: schemathesis.Case, bearer: dict[str, str]) -> None:
    case.call_and_validate(headers=bearer, checks=CONFORMS)
