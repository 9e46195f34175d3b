"""The live OpenAPI schema, exercised by schemathesis: no input produces a 5xx or an undocumented answer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from games.accounts import app_create, player_create
from hearts_service.wsgi import application

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)


@pytest.fixture
def bearer(db: None) -> Iterator[dict[str, str]]:
    """A player token of an app, so that generated requests get past authentication. Requests
    go straight to the WSGI app, so, as Django's test client does, the end of a request must
    not close the connection that holds the test's transaction."""
    app, _ = app_create(name="schemathesis")
    _, token = player_create(app=app, name="fuzz")
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield {"Authorization": f"Bearer {token}"}
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


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
    case.call_and_validate(
        headers=bearer,
        checks=[
            not_a_server_error,
            status_code_conformance,
            content_type_conformance,
            response_schema_conformance,
        ],
    )
