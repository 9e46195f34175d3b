"""The live OpenAPI schema, exercised by schemathesis: no input produces a 5xx or an undocumented answer."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

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
from games.models import App
from hearts_service.wsgi import application

# The event streams never end and need an ASGI server: tests/games/test_streams.py checks every
# event they send against the same document on a real server.
schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application).exclude(
    path_regex=r"/stream$"
)


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


CONFORMS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def test_every_answer_of_two_real_hands_matches_the_documented_schema(bearer: dict[str, str]) -> None:
    """Generated requests mostly meet errors; here real players create, join, pass, play and
    read back a table, and every answer is checked against its operation's schema."""
    rng = random.Random(11)
    tokens = [bearer] + [
        {"Authorization": f"Bearer {player_create(app=App.objects.get(), name=f'p{i}')[1]}"} for i in range(3)
    ]

    def call(path: str, method: str, headers: dict[str, str], **kw: Any) -> Any:
        case = schema[path][method].Case(headers=headers, **kw)
        response = case.call()
        case.validate_response(response, checks=CONFORMS)
        return response.json()

    created = call("/api/v1/tables", "POST", bearer, body={"options": {"target_score": 50}})
    table = {"table_id": created["id"]}
    for headers in tokens:
        call("/api/v1/tables/{table_id}/join", "POST", headers, path_parameters=table, body={})
    seats = {
        call("/api/v1/tables/{table_id}", "GET", h, path_parameters=table)["your_seat"]: h for h in tokens
    }
    call("/api/v1/tables", "GET", bearer, query={"mine": "true"})
    while True:
        spectator = call("/api/v1/tables/{table_id}", "GET", seats[0], path_parameters=table)
        if spectator["game"]["hand_number"] > 2:
            break
        seat = rng.choice(spectator["game"]["to_act"])
        mine = call("/api/v1/tables/{table_id}", "GET", seats[seat], path_parameters=table)["game"]
        legal = mine["legal_actions"]
        if legal["type"] == "pass":
            action = {"type": "pass", "cards": rng.sample(legal["from"], 3)}
        elif legal["type"] == "moon":
            action = {"type": "moon", "choice": "add"}
        else:
            action = {"type": "play", "card": rng.choice(legal["cards"])}
        call("/api/v1/tables/{table_id}/actions", "POST", seats[seat], path_parameters=table, body=action)
    for path in ("/scoresheet", "/moves", "/events", "/hands"):
        call("/api/v1/tables/{table_id}" + path, "GET", seats[1], path_parameters=table)
    replay = call(
        "/api/v1/tables/{table_id}/hands/{number}", "GET", seats[1], path_parameters={**table, "number": 1}
    )
    assert replay["record"]["dealt"]
