"""GraphQL as an integrator's tools see it: gql fetches the schema and runs typed operations against a
live server, every standard introspection query builds a client schema with the enums, the limits
still refuse abuse with their codes, the typed inputs keep the services' bounds and codes, the
enums equal their sources, and GraphiQL loads from the project's own pinned files."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from gql import Client as GqlClient
from gql import gql
from gql.transport.requests import RequestsHTTPTransport
from graphene.utils.str_converters import to_camel_case
from graphql import GraphQLEnumType, GraphQLInterfaceType, build_client_schema, get_introspection_query

from games.contracts.event_schemas import EVENTS as REST_EVENTS
from games.engine import Options
from games.engine.deal import pass_direction
from games.errors import Code
from games.graphql.schema import schema
from games.models import Move, Table
from tests.conftest import skip_or_fail
from tests.graphql.test_graphql import _selection

pytestmark = pytest.mark.django_db


def post(query: str, token: str | None = None, **variables: Any) -> tuple[int, dict[str, Any]]:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    r = Client().post(
        "/graphql/", {"query": query, "variables": variables}, content_type="application/json", **headers
    )
    return r.status_code, r.json()


def guest() -> str:
    _, body = post('mutation { createGuest(name: "g") { token } }')
    return str(body["data"]["createGuest"]["token"])


def enum_values(name: str) -> set[str]:
    enum = schema.graphql_schema.get_type(name)
    assert isinstance(enum, GraphQLEnumType), name
    return set(enum.values)


# -- outside tools: gql against a live server, and every form of the introspection query -----


@pytest.mark.needs_postgres
@pytest.mark.needs_redis
@pytest.mark.django_db(transaction=True)
def test_gql_fetches_the_schema_at_its_defaults_and_runs_typed_operations(web: Any) -> None:
    base = web()
    anonymous = GqlClient(
        transport=RequestsHTTPTransport(url=base + "/graphql"), fetch_schema_from_transport=True
    )
    with anonymous as session:
        made = session.execute(gql('mutation { createGuest(name: "Ada") { token errors { code } } }'))
    assert made["createGuest"]["errors"] == []
    assert isinstance(anonymous.schema.get_type("Phase"), GraphQLEnumType)
    token = made["createGuest"]["token"]
    transport = RequestsHTTPTransport(url=base + "/graphql", headers={"Authorization": f"Bearer {token}"})
    client = GqlClient(transport=transport, fetch_schema_from_transport=True)
    create = gql(
        """mutation($o: TableOptionsInput, $c: ClocksInput, $b: [BotSeat!]) {
             createTable(options: $o, clocks: $c, bots: $b) {
               table {
                 id status options { players targetScore variant tieRule } clocks { pass play awayAfter }
               }
               errors { code field }
             }
           }"""
    )
    read = gql(
        """query($id: Int!) {
             table(id: $id) {
               status version yourSeat seats { position bot }
               game { phase passDirection hand legalActions { type count } }
               events(first: 10) {
                 events { seq type ... on HandStartedEvent { dealer passDirection dealCommitment }
                          ... on BotAddedEvent { seat level } }
               }
             }
           }"""
    )
    with client as session:
        bots = [{"position": p, "level": "basic"} for p in (1, 2, 3)]
        out = session.execute(
            create, variable_values={"o": {"targetScore": 50}, "c": {"pass": None, "play": 20}, "b": bots}
        )["createTable"]
        assert out["errors"] == []
        table = out["table"]
        assert table["status"] == "open"
        assert table["options"] == {
            "players": 4,
            "targetScore": 50,
            "variant": "classic",
            "tieRule": "play_on",
        }
        assert table["clocks"] == {"pass": None, "play": 20, "awayAfter": 2}
        session.execute(
            gql("mutation($t: Int!) { joinTable(tableId: $t) { errors { code } } }"), {"t": table["id"]}
        )
        seen = session.execute(read, variable_values={"id": table["id"]})["table"]
        # A refused query is refused by gql itself, from the fetched schema, before it is sent.
        with pytest.raises(Exception, match="Cannot query field 'nope'"):
            session.execute(gql("{ me { nope } }"))
    assert seen["status"] == "passing" and seen["yourSeat"] == 0
    assert seen["game"]["phase"] == "passing" and seen["game"]["passDirection"] == "left"
    assert seen["game"]["legalActions"] == {"type": "pass", "count": 3}
    kinds = [e["type"] for e in seen["events"]["events"]]
    assert kinds[:3] == ["bot_added"] * 3 and "hand_started" in kinds and "cards_dealt" in kinds
    started = next(e for e in seen["events"]["events"] if e["type"] == "hand_started")
    assert started["passDirection"] == "left" and len(started["dealCommitment"]) == 64


INTROSPECTION_FLAGS = (
    "descriptions",
    "specified_by_url",
    "directive_is_repeatable",
    "schema_description",
    "input_value_deprecation",
)


@pytest.mark.parametrize("flags", [dict.fromkeys(INTROSPECTION_FLAGS, on) for on in (False, True)])
def test_every_standard_introspection_query_passes_and_builds_a_client_schema(flags: dict[str, bool]) -> None:
    for token in (None, guest()):
        status, body = post(get_introspection_query(**flags), token)
        assert status == 200 and "errors" not in body, body
    built = build_client_schema(body["data"])
    for name in ("TableStatus", "Phase", "PassDirection", "EventType", "ErrorCode", "MoveKind", "Variant"):
        assert isinstance(built.get_type(name), GraphQLEnumType), name
    event = built.get_type("Event")
    assert isinstance(event, GraphQLInterfaceType)
    assert {t.name for t in built.get_possible_types(event)} == {
        f"{''.join(p.capitalize() for p in kind.split('_'))}Event" for kind in REST_EVENTS
    }
    assert built.get_type("GenericScalar") is None  # every shape is typed


# -- the limits still refuse abuse --------------------------------------------------------------


def test_deep_costly_and_absurd_introspection_queries_are_refused_with_their_codes() -> None:
    token = guest()

    def refused(query: str) -> dict[str, Any]:
        status, body = post(query, token)
        assert status == 400 and "data" not in body, body
        return dict(body["errors"][0]["extensions"])

    deep = "{ table(id: 1) { game { tricks { cards { card } } } } }"
    assert post(deep, token)[0] == 200
    assert refused("{ me { " * 12 + "kind" + " }" * 12)["code"] in ("query_too_deep", "invalid_query")
    nested = (
        "fragment F on Table { hands { record { tricks { cards } } } } "
        + "{ a: tables(first: 100) { edges { node { ...F moves(first: 500) { seq payload { cards } } } } } }"
    )
    costly = refused(nested)
    assert costly["code"] == "query_too_complex" and costly["cost"] > costly["limit"] == 12_000
    # Introspection nested absurdly: 50 levels of ofType, or lists of types inside lists of fields.
    of_type = "{ __schema { types { fields { type { " + "ofType { " * 50 + "name" + " }" * 55
    assert refused(of_type) == {"code": "query_too_deep", "limit": 24}
    lists = "{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }"
    assert refused(lists) == {"code": "query_too_complex", "limit": 3}
    by_type = (
        '{ __type(name: "Table") { fields { type { ' + "ofType { " * 30 + "name" + " }" * 30 + " } } } }"
    )
    assert refused(by_type)["code"] == "query_too_deep"
    # A fragment that is not defined is the standard rule's error, never a crash of the limits.
    status, body = post("{ me { ...Missing } }", token)
    assert status == 400 and body["errors"][0]["extensions"]["code"] == "invalid_query"


def test_the_events_of_a_page_cost_their_costliest_type_not_the_sum_of_every_fragment() -> None:
    """Every field of every event type, for a page of 100 moves: one event is one of the types,
    so this is under the limit, though the fragments added up would be far over it."""
    events = _selection(schema.graphql_schema.get_type("EventsPage"), {})  # type: ignore[arg-type]
    status, body = post("{ table(id: 1) { events(first: 100) { %s } } }" % events, guest())  # noqa: UP031
    assert status == 200 and body == {"data": {"table": None}}, body
    twice = "{ table(id: 1) { events(first: 100) { %s } } t: table(id: 2) { events(first: 100) { %s } } }"
    status, body = post(twice % (events, events), guest())
    assert status == 400 and body["errors"][0]["extensions"]["code"] == "query_too_complex"


# -- typed inputs: the services' bounds and codes, named as in GraphQL ---------------------------


CREATE = (
    "mutation($o: TableOptionsInput, $c: ClocksInput) { createTable(options: $o, clocks: $c) {"
    " table { options { targetScore } clocks { pass play moon awayAfter } } errors { code field } } }"
)


@pytest.mark.parametrize(
    ("options", "clocks", "code", "field"),
    [
        ({"targetScore": 49}, None, "invalid_option", "targetScore"),
        ({"targetScore": 10_001}, None, "invalid_option", "targetScore"),
        ({"players": 8}, None, "invalid_option", "players"),
        ({"variant": "blitz"}, None, "invalid_option", "variant"),
        ({"tieRule": "coin"}, None, "invalid_option", "tieRule"),
        (None, {"play": 4}, "invalid_clock", "play"),
        (None, {"pass": 1_209_601}, "invalid_clock", "pass"),  # 14 days and a second
        (None, {"awayAfter": 21}, "invalid_clock", "awayAfter"),
        (None, {"awayAfter": None}, "invalid_clock", "awayAfter"),
    ],
)
def test_options_and_clocks_out_of_bounds_are_refused_naming_the_input_field(
    options: dict[str, Any] | None, clocks: dict[str, Any] | None, code: str, field: str
) -> None:
    status, body = post(CREATE, guest(), o=options, c=clocks)
    assert status == 200 and body["data"]["createTable"] == {
        "table": None,
        "errors": [{"code": code, "field": field}],
    }


def test_options_and_clocks_at_their_bounds_and_null_clocks_are_taken() -> None:
    token = guest()
    status, body = post(CREATE, token, o={"targetScore": 50}, c={"pass": 5, "play": 86_400, "moon": None})
    assert status == 200 and body["data"]["createTable"]["errors"] == [], body
    table = body["data"]["createTable"]["table"]
    assert table["options"] == {"targetScore": 50}
    assert table["clocks"] == {"pass": 5, "play": 86_400, "moon": None, "awayAfter": 2}
    _, body = post(CREATE, token, o={"targetScore": None}, c={})
    assert body["data"]["createTable"]["table"] == {
        "options": {"targetScore": 100},
        "clocks": {"pass": 60, "play": 30, "moon": 30, "awayAfter": 2},
    }


# -- the enums equal their sources -------------------------------------------------------------


def test_the_enums_are_the_sets_of_their_sources() -> None:
    assert enum_values("ErrorCode") == {c.value for c in Code}
    assert enum_values("TableStatus") == set(Table.Status.values)
    assert enum_values("MoveKind") == set(Move.Kind.values)
    assert enum_values("EventType") == set(REST_EVENTS)
    directions = {
        pass_direction(Options.build(players=n, variant=v), hand)
        for n, v in [*((n, "classic") for n in range(3, 8)), *((n, "cancellation") for n in range(6, 11))]
        for hand in range(1, 25)
    }
    assert directions == enum_values("PassDirection")


def test_each_event_type_has_the_fields_of_its_rest_event() -> None:
    possible = schema.graphql_schema.get_possible_types(schema.graphql_schema.get_type("Event"))  # type: ignore[arg-type]
    by_name = {t.name: t for t in possible}
    for kind, (_, fields) in REST_EVENTS.items():
        graphql_type = by_name["".join(p.capitalize() for p in kind.split("_")) + "Event"]
        # Every event also has the stream's `id` and its `table` (StreamEvent, for the subscriptions).
        own = set(graphql_type.fields) - {"seq", "hand", "type", "id", "table"}
        assert own == {to_camel_case(f) for f in fields}, kind


# -- GraphiQL from the project's own files ------------------------------------------------------


def test_graphiql_loads_only_local_pinned_files_and_they_are_served() -> None:
    page = Client().get("/graphql/", HTTP_ACCEPT="text/html")
    assert page.status_code == 200
    html = page.content.decode()
    assert "graphiql" in html.lower() and not re.search(r"(?:src|href)=\"(?:https?:)?//", html)
    assets = re.findall(r"<(?:script|link)[^>]*?(?:src|href)=\"([^\"]+)\"[^>]*>", html)
    assert len(assets) >= 6, assets
    for tag in re.findall(r"<(?:script|link)[^>]*>", html):
        url = re.search(r"(?:src|href)=\"([^\"]+)\"", tag)
        if url is None:
            continue
        r = Client().get(url.group(1))
        assert r.status_code == 200, url.group(1)
        body = b"".join(r.streaming_content) if r.streaming else r.content  # type: ignore[attr-defined]
        integrity = re.search(r"integrity=\"sha256-([^\"]+)\"", tag)
        if integrity:  # the bytes served are those of the pinned release
            assert base64.b64encode(hashlib.sha256(body).digest()).decode() == integrity.group(1), url.group(
                1
            )


CHROMIUM = "/usr/bin/chromium"  # Debian's, as in test_web_client.py


@pytest.mark.needs_postgres
@pytest.mark.needs_redis
@pytest.mark.django_db(transaction=True)
def test_graphiql_works_in_a_browser_that_reaches_nothing_but_this_server(web: Any) -> None:
    """Every request to another origin is refused: GraphiQL still renders, loads the schema's
    documentation by introspection and runs a query."""
    if not os.access(CHROMIUM, os.X_OK):
        skip_or_fail(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    base = web()
    outside: list[str] = []
    problems: list[str] = []
    introspected: list[int] = []

    def only_local(route: Any) -> None:
        if route.request.url.startswith(base + "/"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    def answered(response: Any) -> None:
        if response.url.startswith(base + "/graphql") and "__schema" in (response.request.post_data or ""):
            introspected.append(response.status)

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = browser.new_page()
            page.set_default_timeout(20_000)
            page.route("**/*", only_local)
            page.on("response", answered)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.goto(f"{base}/graphql/#query=%7B%20__typename%20%7D")
            page.wait_for_selector(".graphiql-container")
            page.click(".graphiql-execute-button")
            page.wait_for_function(
                "document.querySelector('.result-window') && "
                "document.querySelector('.result-window').innerText.includes('Query')"
            )
            page.click("[aria-label='Show Documentation Explorer']")
            page.wait_for_selector(".graphiql-doc-explorer >> text=Mutation")
        finally:
            browser.close()
    assert outside == [] and problems == [], (outside, problems)
    assert introspected and set(introspected) == {200}


def test_the_templates_and_graphiql_files_are_package_data_so_the_wheel_has_them() -> None:
    """The image installs a wheel: a served file that no package-data pattern names is missing there."""
    root = Path(__file__).resolve().parents[2]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "games"
    ]
    named = {p for pattern in patterns for p in (root / "games").glob(pattern) if p.is_file()}
    served = {
        p
        for folder in ("templates", "static", "locale")  # locale: the translations of error details
        for p in (root / "games" / folder).rglob("*")
        if p.is_file()
    }
    assert served and served == named, sorted(str(p) for p in served ^ named)
