"""The live OpenAPI document: real hands' answers match it, and the document itself has named
operations, declared errors, typed events, and limits that are the server's own. (Generated
requests to every operation: test_schema_fuzz.py.)"""

from __future__ import annotations

import ast
import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from django.test import Client

from games import services
from games.accounts import app_create, player_create
from games.api.schemas import PASS_DIRECTIONS, STATUS_OF
from games.api.views import ActionIn
from games.contracts.event_schemas import EVENTS, STREAM_ONLY
from games.engine.deal import pass_direction
from games.engine.options import Options
from games.engine.state import PASS_COUNT
from games.errors import Code
from games.models import App, Table
from tests.api.schema_checks import CONFORMS, schema
from tests.streams.test_streams import _nullable_to_json_schema as nullable_to_json_schema


@pytest.mark.slow  # a whole game or more through the service: CI, not the inner loop
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


# -- the document itself: what generated clients rely on -----------------------------------------

ROOT = Path(__file__).resolve().parent.parent.parent
TAGS = {
    *("players", "tables", "play", "history", "streams", "webhooks", "ratings", "tournaments", "bots"),
    *("push", "apps", "privacy"),
}
METHODS = ("get", "post", "put", "patch", "delete")


def document() -> dict[str, Any]:
    return json.loads(Client().get("/api/schema/?format=json").content)


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


def resolve(doc: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """A property's own schema, through drf-spectacular's `allOf: [$ref]` wrapping."""
    if "allOf" in node:
        node = {**node, **node["allOf"][0]}
    if "$ref" in node:
        node = {**node, **doc["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]}
    return node


def test_error_codes_are_the_one_vocabulary_and_statuses_follow_the_docs() -> None:
    """`ErrorCode` is games.errors.Code itself (it cannot drift), and the status each operation
    lists a code under is the one docs/errors.md gives it (`not_seated` is 409 when leaving)."""
    doc = document()
    assert doc["components"]["schemas"]["ErrorCode"]["enum"] == [c.value for c in Code]
    assert resolve(doc, doc["components"]["schemas"]["ErrorOut"]["properties"]["code"])["enum"]
    documented = {
        code: int(status)
        for code, status in re.findall(
            r"^\| `(\w+)` \| (\d{3}) \|", (ROOT / "docs/errors.md").read_text(), re.M
        )
    }
    assert {c.value: s for c, s in STATUS_OF.items()} == {c.value: documented[c.value] for c in STATUS_OF}
    for path, method, op in operations(doc):
        for status, response in op["responses"].items():
            for code in response.get("x-error-codes", []):
                expected = 409 if (code, path) == ("not_seated", "/api/v1/tables/{table_id}/leave") else None
                assert int(status) == (expected or documented[code]), (method, path, code, status)


def test_every_structured_field_of_an_error_is_declared() -> None:
    """Each keyword a refusal is raised with in the source (`version=`, `option=`, `reason=`...) is
    a declared property of ErrorOut, so a generated client can read it without guessing."""
    raisers = {"ServiceError", "EngineError", "IllegalAction", "InvalidOption", "InvalidCard", "error", "bad"}
    raised: dict[str, str] = {}
    for path in (ROOT / "games").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Constant):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            if name in raisers and node.args[0].value in set(Code):
                raised |= {k.arg: f"{path.name}: {node.args[0].value}" for k in node.keywords if k.arg}
    raised.pop("kind")
    declared = document()["components"]["schemas"]["ErrorOut"]["properties"]
    assert {"version", "option", "reason", "clock", "turn", "phase"} <= set(raised)
    assert {k: v for k, v in raised.items() if k not in declared} == {}


def test_every_operation_is_named_tagged_and_declares_its_errors() -> None:
    """Operation ids are camelCase and unique, one tag per resource; a body can be refused as too
    large (413) or not JSON (415); every operation can be rate limited (429) and meet an
    unavailable database (503), both with Retry-After; each error response lists its codes."""
    doc = document()
    ids = []
    for path, method, op in operations(doc):
        ids.append(op["operationId"])
        assert re.fullmatch(r"[a-z]+(?:[A-Z][a-z]+)*", op["operationId"]), op["operationId"]
        assert len(op["tags"]) == 1 and op["tags"][0] in TAGS, (path, op["tags"])
        responses = op["responses"]
        takes_body = method in ("post", "put", "patch")  # perhaps only `{}`, but a body all the same
        assert ("413" in responses and "415" in responses) == takes_body, (method, path)
        for status in ("429", "503"):
            assert "Retry-After" in responses[status]["headers"], (method, path, status)
        too_many = responses["429"]["x-error-codes"]
        schema = resolve(doc, responses["429"]["content"]["application/json"]["schema"])
        if too_many == ["quota_exceeded", "rate_limited"]:  # an operation with a quota (games/quotas.py)
            shapes = {
                code: resolve(doc, {"$ref": ref}) for code, ref in schema["discriminator"]["mapping"].items()
            }
            assert sorted(shapes["quota_exceeded"]["required"]) == ["code", "detail", "limit", "quota"]
            schema = shapes["rate_limited"]
        else:
            assert too_many == ["rate_limited"]
        assert schema["required"] == [
            "code",
            "detail",
            "limit",
            "rate",
            "retry_after",
        ]
        for status, response in responses.items():
            if int(status) >= 400:
                assert response["x-error-codes"], (method, path, status)
                assert all(f"`{c}`" in response["description"] for c in response["x-error-codes"])
    assert len(ids) == len(set(ids)), sorted(ids)
    read = doc["paths"]["/api/v1/tables/{table_id}"]["get"]  # a conditional read (ETag, If-None-Match)
    assert "If-None-Match" in [p["name"] for p in read["parameters"]]
    assert "ETag" in read["responses"]["200"]["headers"] and "ETag" in read["responses"]["304"]["headers"]
    assert {"createTable", "submitAction", "getTable", "listTableEvents", "streamTableEvents"} <= set(ids)


def test_streams_are_text_and_their_events_a_discriminated_union() -> None:
    """A stream's answer is text (a generated client must not wait for its end to parse JSON);
    its events are `StreamEvent`, and the REST events list is `Event`, both unions by `type`."""
    doc = document()
    schemas = doc["components"]["schemas"]
    for path in ("/api/v1/tables/{table_id}/stream", "/api/v1/me/stream"):
        ok = doc["paths"][path]["get"]["responses"]["200"]
        assert ok["content"] == {
            "text/event-stream": {"schema": {"type": "string"}},
            "application/x-ndjson": {"schema": {"type": "string"}},
        }
        assert ok["x-stream-event"] == {"$ref": "#/components/schemas/StreamEvent"}
    for name, types in (("Event", EVENTS), ("StreamEvent", {**EVENTS, **STREAM_ONLY})):
        union = schemas[name]
        assert union["discriminator"]["propertyName"] == "type"
        assert set(union["discriminator"]["mapping"]) == set(types)
        assert [o["$ref"] for o in union["oneOf"]] == list(union["discriminator"]["mapping"].values())
    listed = schemas["EventsOut"]["properties"]["events"]
    assert listed["items"] == {"$ref": "#/components/schemas/Event"}


def test_each_event_type_has_an_example_that_matches_it() -> None:
    doc = document()
    components = nullable_to_json_schema(doc["components"])
    for kind in {**EVENTS, **STREAM_ONLY}:
        schema = doc["components"]["schemas"][f"Event_{kind}"]
        assert schema["example"]["type"] == kind
        ref = {"$ref": f"#/components/schemas/Event_{kind}", "components": components}
        jsonschema.Draft7Validator(ref).validate(schema["example"])


def test_every_pass_direction_the_engine_names_is_in_the_enum() -> None:
    """PassDirectionEnum lists every direction the engine deals with, at every table size."""
    enum = document()["components"]["schemas"]["PassDirectionEnum"]["enum"]
    named = {
        pass_direction(Options.build(players=n, variant=variant), hand)
        for variant, sizes in (("classic", range(3, 8)), ("cancellation", range(6, 11)))
        for n in sizes
        for hand in range(1, 9)
    }
    assert named == set(enum) == set(PASS_DIRECTIONS)


def test_the_action_body_is_one_of_three_closed_variants() -> None:
    doc = document()
    schemas = doc["components"]["schemas"]
    action = schemas["ActionRequest"]
    assert action["discriminator"]["propertyName"] == "type"
    assert set(action["discriminator"]["mapping"]) == {"pass", "play", "moon"}
    for kind, own in ActionIn.FIELDS_OF_TYPE.items():
        variant = schemas[action["discriminator"]["mapping"][kind].rsplit("/", 1)[1]]
        assert variant["additionalProperties"] is False
        assert set(variant["properties"]) == {"type", own, "expected_version"}
        assert set(variant["required"]) == {"type", own}
        assert resolve(doc, variant["properties"]["type"])["enum"] == [kind]
    cards = schemas["PassActionRequest"]["properties"]["cards"]
    assert cards["minItems"] == cards["maxItems"] == PASS_COUNT


def test_the_documentation_pages_load_every_asset_from_this_server() -> None:
    """Swagger UI and Redoc work offline: their pages name no other host, and each script, style
    sheet and icon they load is served here (drf-spectacular-sidecar, pinned)."""
    client = Client()
    for page in ("/api/docs/", "/api/redoc/"):
        response = client.get(page)
        assert response.status_code == 200
        html = response.content.decode()
        assert not re.search(r"(?i)https?://|//[a-z0-9.-]+\.[a-z]{2,}/", html), page
        assets = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert any(a.endswith(".js") for a in assets), page
        for asset in assets:
            assert asset.startswith("/static/drf_spectacular_sidecar/"), asset
            served = client.get(asset)
            assert served.status_code == 200, asset
            assert b"".join(served.streaming_content) if served.streaming else served.content


# -- the limits the document states are the ones the server enforces -------------------------


def _just_around(prop: dict[str, Any]) -> list[tuple[Any, bool]]:
    """Values just outside (refused) and just inside (accepted) each bound of a property."""
    values: list[tuple[Any, bool]] = []
    if "minimum" in prop:
        values += [(prop["minimum"] - 1, False), (prop["minimum"], True)]
    if "maximum" in prop:
        values += [(prop["maximum"], True), (prop["maximum"] + 1, False)]
    if "enum" in prop:
        values += [(v, True) for v in prop["enum"]] + [("not-" + str(prop["enum"][0]), False)]
    if "nullable" in prop or prop.get("type") == "integer":
        values.append((None, bool(prop.get("nullable"))))
    return values


def test_the_documented_limits_of_a_new_table_are_the_ones_the_server_enforces(db: None) -> None:
    """For each option, clock and bot level: a value just outside a bound the document states is
    refused with its code (naming the option or clock) and creates nothing; just inside is
    accepted. The limits in the document are read from the document, not restated here."""
    doc = document()
    schemas = doc["components"]["schemas"]
    _, key = app_create(name="limits")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")

    def create(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        before = Table.objects.count()
        response = client.post("/api/v1/tables", body, content_type="application/json")
        made = Table.objects.count() - before
        assert made == (1 if response.status_code == 201 else 0), (body, response.content)
        return response.status_code, response.json()

    checked = 0
    for group, component, code, field in (
        ("options", "TableOptionsRequest", "invalid_option", "option"),
        ("clocks", "ClocksRequest", "invalid_clock", "clock"),
    ):
        assert schemas["CreateTableRequest"]["properties"][group]["allOf"][0]["$ref"].endswith(component)
        assert schemas[component]["additionalProperties"] is False
        for name, raw in schemas[component]["properties"].items():
            for value, accepted in _just_around(resolve(doc, raw)):
                body = {group: {name: value}}
                if value == "cancellation" or (name == "players" and isinstance(value, int) and value > 7):
                    body[group] |= {
                        "variant": "cancellation",
                        "players": max(value, 6) if name == "players" else 6,
                    }
                status, answer = create(body)
                if accepted:
                    assert status == 201, (body, answer)
                else:
                    assert (status, answer["code"], answer.get(field)) == (400, code, name), (body, answer)
                checked += 1
        status, answer = create({group: {"no_such_key": 1}})
        assert (status, answer["code"]) == (400, code)
    bots = schemas["CreateTableRequest"]["properties"]["bots"]["additionalProperties"]
    for value, accepted in _just_around(resolve(doc, bots)):
        status, answer = create({"bots": {"1": value}})
        assert status == 201 if accepted else (status, answer["code"]) == (400, "invalid_bot_level"), answer
        checked += 1
    assert checked > 30


def test_the_documented_action_bodies_are_the_ones_the_server_takes(db: None) -> None:
    """A pass of fewer or more cards than the document's minItems/maxItems is refused (bad_pass),
    a field of another variant is refused (invalid_input, naming it), and a documented body acts."""
    cards = document()["components"]["schemas"]["PassActionRequest"]["properties"]["cards"]
    app, _ = app_create(name="actions")
    _, token = player_create(app=app, name="Ada")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    table = services.table_create(bots={1: "basic", 2: "basic", 3: "basic"}, app=app).table
    assert table is not None
    joined = client.post(f"/api/v1/tables/{table.pk}/join", {}, content_type="application/json").json()
    hand = joined["game"]["hand"]

    def act(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        response = client.post(f"/api/v1/tables/{table.pk}/actions", body, content_type="application/json")
        return response.status_code, response.json()

    for count in (cards["minItems"] - 1, cards["maxItems"] + 1):
        status, answer = act({"type": "pass", "cards": hand[:count]})
        assert (status, answer["code"], answer["reason"]) == (422, "bad_pass", "count")
    status, answer = act({"type": "pass", "cards": hand[:3], "card": hand[0]})
    assert (status, answer["code"], list(answer["fields"])) == (400, "invalid_input", ["card"])
    status, answer = act({"type": "pass", "cards": hand[:3], "colour": "red"})
    assert (status, answer["code"], list(answer["fields"])) == (400, "invalid_input", ["colour"])
    status, answer = act({"type": "pass", "cards": hand[: cards["minItems"]]})
    assert status == 200 and sorted(answer["game"]["my_pass"]["cards"]) == sorted(hand[:3])


def test_an_unknown_format_parameter_gets_the_json_answer(bearer: dict[str, str]) -> None:
    """`?format=xml` is answered as if it were absent (JSON), not with a 404 no operation lists."""
    client = Client(HTTP_AUTHORIZATION=bearer["Authorization"])
    for query in ("format=xml", "format=api"):
        response = client.get(f"/api/v1/tables?{query}")
        assert response.status_code == 200 and response["Content-Type"] == "application/json"
        assert response.json()["results"] == []
