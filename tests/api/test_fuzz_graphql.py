"""Generated GraphQL operations against a live server (uvicorn, PostgreSQL, Redis): every query and
mutation, with arguments generated from the live schema by hypothesis-graphql (through schemathesis),
answers a coded error or data, never a server error. The REST half and the hand-made hostile
requests are tests/api/test_fuzz.py, whose live server and checks this file shares."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import given

from tests.api.test_fuzz import FUZZ_GRAPHQL, Live, check_graphql, live, operations

pytestmark = [pytest.mark.needs_postgres, pytest.mark.needs_redis, pytest.mark.slow]
__all__ = ["live"]  # the fixture, used here by name


def test_generated_graphql_operations_answer_coded_errors_never_a_server_error(live: Live) -> None:
    """Every query and mutation field, with arguments generated from the live schema
    (hypothesis-graphql, through schemathesis)."""
    schema = schemathesis.graphql.from_url(f"{live.base}/graphql/", headers=live.auth(""))
    tried = 0
    for operation in operations(schema):
        if operation.label == "Mutation.revokeToken":
            continue  # would revoke the fuzzing token; fuzzed by hand below

        @given(case=operation.as_strategy())
        @FUZZ_GRAPHQL
        def generated(case: Any) -> None:
            response = case.call(headers=live.auth(""))
            check_graphql(response.status_code, response.content)

        generated()
        tried += 1
    assert tried >= 15
