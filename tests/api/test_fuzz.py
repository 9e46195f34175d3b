"""Hostile input against a live server (uvicorn, PostgreSQL, Redis), REST and GraphQL: no answer is a
5xx, every error has the one documented shape with a code, and every REST status is in the
OpenAPI document. Rate limits are raised so that they do not hide the cases (a 429 would answer
before the input is read); tests/api/test_protection.py checks the limits themselves.

Three parts: schemathesis generates valid and invalid requests for every REST operation from the
live OpenAPI document; hypothesis-graphql (through schemathesis) generates queries and mutations
from the live GraphQL schema (tests/api/test_fuzz_graphql.py); and hypothesis sends hand-made hostile requests to every route of
both: deep nesting, huge and negative numbers, wrong types, unicode, invalid UTF-8, 10 KB
headers, forged cursors, ids and event ids.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from games.accounts import app_create, player_create

pytestmark = [pytest.mark.needs_postgres, pytest.mark.needs_redis, pytest.mark.slow]

UNLIMITED = {
    "RATE_LIMIT_TOKEN": "10000000/minute",
    "RATE_LIMIT_APP": "10000000/minute",
    "RATE_LIMIT_ADDRESS": "10000000/minute",
}
APP_ONLY = re.compile(r"^/api/v1/(webhooks|players)|/abandon$")
GRAPHQL_STATUSES = {200, 400, 401, 405, 413, 415, 429}
FUZZ = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
# GraphQL operations are cheap to call and their arguments many: 60 cases each (25 missed a NUL
# in createGuest's name, which 150 found; the hand-made cases below send NULs everywhere). The
# generated GraphQL cases are tests/api/test_fuzz_graphql.py, beside this file so that the two
# halves of the fuzz run on both cores.
FUZZ_GRAPHQL = settings(FUZZ, max_examples=60)


@dataclass
class Live:
    base: str
    key: str
    token: str
    table: int
    spec: dict[str, Any]

    def throwaway(self) -> str:
        """A new player's token."""
        r = httpx.post(
            f"{self.base}/api/v1/players", json={"name": "x"}, headers={"Authorization": f"Bearer {self.key}"}
        )
        return str(r.json()["token"])

    def auth(self, path: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key if APP_ONLY.search(path) else self.token}"}


@pytest.fixture
def live(web: Any) -> Live:
    base = web(**UNLIMITED)
    app, key = app_create(name="fuzz")
    _, token = player_create(app=app, name="fuzz")
    bots = {"1": "basic", "2": "basic", "3": "basic"}
    created = httpx.post(
        f"{base}/api/v1/tables",
        json={"options": {"target_score": 50}, "bots": bots},
        headers={"Authorization": f"Bearer {token}"},
    ).json()
    joined = httpx.post(
        f"{base}/api/v1/tables/{created['id']}/join", json={}, headers={"Authorization": f"Bearer {token}"}
    )
    assert joined.status_code == 200, joined.text
    spec = httpx.get(f"{base}/api/schema/?format=json").json()
    return Live(base, key, token, created["id"], spec)


REST_CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def operations(schema: Any) -> list[Any]:
    found = [result.ok() for result in schema.get_all_operations()]
    assert found
    return found


def _nothing_to_negate(spec: dict[str, Any], operation: Any) -> bool:
    method, path = operation.label.split(" ", 1)
    declared = spec["paths"][path][method.lower()]
    return (
        not declared.get("parameters")
        and "requestBody" not in declared
        and {} in declared.get("security", [])
    )


def test_generated_rest_requests_never_fail_the_server_or_the_contract(live: Live) -> None:
    """Every REST operation, with valid and invalid requests generated from the live document
    (schemathesis' negative_data_rejection is not among the checks: it counts an unknown query
    parameter, which the API ignores, as a violation; strictness of bodies is checked by hand).
    The streams never end (tests/streams/test_streams.py checks them); revoking the fuzzing token
    would turn every later case into a 401 (revocation is fuzzed by hand below)."""
    schema = schemathesis.openapi.from_url(f"{live.base}/api/schema/?format=json")
    schema = schema.exclude(path_regex=r"(/stream|/tokens/revoke)$")
    tried = 0
    for operation in operations(schema):
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @FUZZ
            def generated(case: Any) -> None:
                case.call_and_validate(headers=live.auth(case.path), checks=REST_CHECKS)

            try:
                generated()
            except Unsatisfiable:
                # Nothing to make invalid: no parameter, no body, and credentials optional (the
                # VAPID key is served to anyone). Any other operation must generate its cases.
                assert mode == GenerationMode.NEGATIVE and _nothing_to_negate(live.spec, operation), (
                    operation.label
                )
                continue
            tried += 1
    assert tried >= 2 * 25


# -- hand-made hostile requests ---------------------------------------------------------------


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


NASTY_JSON = [
    _deep(1000),
    _deep(100_00),
    '{"a":' * 3000 + "1" + "}" * 3000,
    '{"name": NaN}',
    '{"name": Infinity}',
    '{"name": 1e999}',
    '{"name": ' + "9" * 5000 + "}",
    '{"name": -' + "9" * 300 + "}",
    "null",
    "[]",
    '"text"',
    "5",
    "true",
    "{",
    '{"name": "\\ud800"}',
    '{"name": "a\\u0000b", "options": {"\\u0000": 1}}',
    '{"type": "play", "card": 5}',
    '{"type": "pass", "cards": "QS"}',
    '{"type": ["play"]}',
    '{"position": "0"}',
    '{"position": 1e300}',
    '{"position": 9223372036854775808}',
    '{"expected_version": 99999999999999999999999}',
    '{"expected_version": -1}',
    '{"level": 3, "fill_with": null}',
    '{"options": [], "bots": [], "clocks": "x"}',
    '{"options": {"players": 99999999999999999999}, "clocks": {"play": 1e308}}',
    '{"bots": {"1": {"a": 1}}, "clocks": {"play": -5, "pass": "x"}}',
    '{"bots": {"\\u0661": "basic", "99999999999": "basic", "-1": "basic"}}',
    '{"url": "http://[::1", "event_types": [5], "active": "yes"}',
    '{"url": "' + "x" * 3000 + '"}',
    '{"name": "' + "é" * 100 + '", "external_id": ["x"]}',
]
NASTY_BYTES = [b"\xff\xfe\x00", b"\xc3\x28", "é".encode("latin-1")]
NASTY_IDS = ["-1", "0", "abc", "99999999999999999999", "9223372036854775808", "1e5", "%00", "%D9%A1", "1.0"]
NASTY_QUERY = [
    "cursor=" + base64.b64encode(b"p=12345").decode(),
    "cursor=" + base64.b64encode(b"p=99999999999999999999999").decode(),
    "cursor=" + base64.b64encode(b"p=2020-01-01T00:00:00&r=5&o=-1").decode(),
    "cursor=" + base64.b64encode(b"o=99999999999").decode(),
    "cursor=%FF%FE",
    "cursor=" + "A" * 5000,
    "after=-1",
    "after=99999999999999999999",
    "after=500",
    "after=%D9%A1",
    "status=%00",
    "mine=2",
    "open_seats=%F0%9F%82%A1",
    "last_event_id=99999999999999999999:0",
    "last_event_id=1:-1",
    "last_event_id=%00",
    "format=xml",
]
HUGE = "x" * 10_000


def headers_strategy(auth: dict[str, str]) -> st.SearchStrategy[dict[str, Any]]:
    extra = st.sampled_from(
        [
            {},
            {"Authorization": "Bearer " + HUGE},
            {"Authorization": "Basic " + HUGE},
            {"Authorization": "Bearer"},
            {"Idempotency-Key": HUGE},
            {"Idempotency-Key": "é".encode()},  # not ASCII: sent as raw bytes
            {"If-Match": HUGE},
            {"If-Match": "-5"},
            {"If-Match": '"99999999999999999999999"'},
            {"Last-Event-ID": HUGE},
            {"Last-Event-ID": "1:2:3"},
            {"X-Request-ID": HUGE},
            {"Accept": "application/xml"},
            {"Content-Type": "text/plain"},
            {"Content-Type": "application/json; charset=latin-1"},
        ]
    )
    return extra.map(lambda e: {**auth, **e} if "Authorization" not in e else e)


def routes(spec: dict[str, Any], table: int) -> list[tuple[str, str]]:
    """(method, path template) of every documented REST operation, and of some that are not."""
    found = [
        (method.upper(), path)
        for path, operations in spec["paths"].items()
        for method in operations
        if method in ("get", "post", "patch", "delete")
    ]
    return [*found, ("GET", "/api/v1/nowhere"), ("POST", "/api/v2/tables"), ("DELETE", "/api/v1/tables")]


def fill(path: str, table: int, ident: str) -> str:
    path = path.replace("{table_id}", ident if ident else str(table))
    path = path.replace("{delivery_id}", "00000000-0000-0000-0000-000000000000")
    return re.sub(r"\{[a-z_]+\}", ident or "1", path)


def documented(spec: dict[str, Any], method: str, template: str) -> set[int]:
    operation = spec["paths"].get(template, {}).get(method.lower())
    if operation is None:  # no such route or method: authentication still comes first
        return {400, 401, 404, 405, 413}
    return {int(code) for code in operation["responses"]}


def check_rest(response: httpx.Response, allowed: set[int]) -> None:
    where = f"{response.request.method} {response.request.url}"
    assert response.status_code < 500, f"{where}: {response.status_code} {response.text[:300]}"
    if response.status_code >= 400:
        assert response.headers["content-type"].startswith("application/json"), where
        body = response.json()
        assert isinstance(body["code"], str) and isinstance(body["detail"], str), (where, body)
        assert response.status_code in allowed | {404, 405}, (where, response.status_code, body)


def check_graphql(status: int, content: bytes) -> None:
    assert status in GRAPHQL_STATUSES, (status, content[:300])
    body = json.loads(content)
    for error in body.get("errors", ()):
        code = error["extensions"]["code"]
        assert isinstance(code, str) and code != "internal_error", error


def test_hostile_rest_requests_are_refused_with_a_documented_code(live: Live) -> None:
    ops = routes(live.spec, live.table)

    @given(
        op=st.sampled_from(ops),
        ident=st.sampled_from(["", *NASTY_IDS]),
        body=st.sampled_from([None, *NASTY_JSON, *NASTY_BYTES]),
        query=st.sampled_from(["", *NASTY_QUERY]),
        data=st.data(),
    )
    @settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    def hostile(op: tuple[str, str], ident: str, body: Any, query: str, data: Any) -> None:
        method, template = op
        path = fill(template, live.table, ident)
        auth = live.auth(path)
        if template.endswith("/tokens/revoke"):  # revoke a throwaway token, not the fuzzing one
            auth = {"Authorization": f"Bearer {live.throwaway()}"}
        headers = data.draw(headers_strategy(auth))
        if body is not None and "Content-Type" not in headers:
            headers = {**headers, "Content-Type": "application/json"}
        content = body.encode() if isinstance(body, str) else body
        url = f"{live.base}{path}" + (f"?{query}" if query else "")
        with httpx.Client(timeout=10) as client:
            request = client.build_request(method, url, headers=headers, content=content)
            response = client.send(request, stream=True)  # a stream that opens is not read
            try:
                if response.status_code == 200 and template.endswith("/stream"):
                    return
                response.read()
            finally:
                response.close()
        check_rest(response, documented(live.spec, method, template))

    hostile()


def _hostile_documents(table: int) -> tuple[list[str], list[Any]]:
    """Hostile GraphQL documents and variables, sent over HTTP and over the WebSocket alike."""
    documents = [
        "{ me { kind } }",
        "{ " + "a: " * 0 + "me { kind } " * 1 + "}",
        "{" * 5000 + "}" * 5000,
        "{ me " + "{ kind " * 3000 + "}" * 3000 + " }",
        "query($t: Int!) { table(id: $t) { id } }",
        "query($t: Int!) { table(id: $t) { moves(first: 100000) { seq } } }",
        "query($f: Int!) { table(id: %d) { moves(first: $f) { seq } events(first: $f) { version } } }"
        % table,
        "{ table(id: 99999999999) { id } }",
        '{ tables(after: "%s") { edges { cursor } } }' % base64.urlsafe_b64encode(b"table:9" * 5).decode(),
        '{ tables(after: "%s") { edges { cursor } } }'
        % base64.urlsafe_b64encode(b"table:" + b"9" * 40).decode(),
        "{ tables(first: -1) { edges { cursor } } }",
        "{ table(id: %d) { events(after: 999999) { version } } }" % table,
        "{ table(id: %d) { moves(after: -5) { seq } } }" % table,
        "mutation { " + " ".join(f'g{i}: createGuest(name: "x") {{ token }}' for i in range(50)) + " }",
        'mutation { playCard(tableId: %d, card: "\\u0000") { errors { code } } }' % table,
        'mutation { createGuest(name: "a\\u0000b") { token errors { code field } } }',
        'mutation { createGuest(name: "\\ud800") { token errors { code field } } }',
        'mutation { createPlayer(name: "x", externalId: null) { token errors { code } } }',
        'mutation { createPlayer(name: "x", externalId: "\\u0000") { token errors { code } } }',
        'mutation { passCards(tableId: %d, cards: ["QS", 5]) { errors { code } } }' % table,
        "mutation { createTable(options: {players: 99999999999}) { errors { code } } }",
        'mutation { createTable(options: [[[[1]]]], clocks: "x") { errors { code } } }',
        "subscription { x }",
        "query A { me { kind } } query B { me { kind } }",
        "fragment F on Query { ...F } { ...F }",
        "{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }",
        "",
    ]
    variables = [
        None,
        {"t": "x"},
        {"t": 2**40},
        {"t": None},
        {"f": 10**30},
        {"t": json.loads(_deep(30))},
        "not an object",
        [1, 2],
    ]
    return documents, variables


def test_hostile_graphql_requests_are_refused_with_a_code(live: Live) -> None:
    documents, variables = _hostile_documents(live.table)
    bodies = st.one_of(
        st.builds(
            lambda q, v, name: {"query": q, "variables": v, "operationName": name},
            st.sampled_from(documents),
            st.sampled_from(variables),
            st.sampled_from([None, "A", 5, ""]),
        ).map(json.dumps),
        st.sampled_from(
            [
                "null",
                '{"query": 5}',
                '[{"query": "{ me { kind } }"}]',
                _deep(3000),
                '{"query": "{ me { kind } }", "variables": ' + _deep(200) + "}",
                "{",
                '{"query": NaN}',
            ]
        ),
    )

    @given(
        body=bodies,
        method=st.sampled_from(["POST", "GET", "PUT"]),
        kind=st.sampled_from(["application/json", "application/graphql", "text/plain"]),
        auth=st.sampled_from([live.auth(""), {}, {"Authorization": "Bearer " + HUGE}]),
    )
    @settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    def hostile(body: str, method: str, kind: str, auth: dict[str, str]) -> None:
        headers = {**auth, "Content-Type": kind, "Accept": "application/json"}
        with httpx.Client(timeout=10) as client:
            if method == "GET":
                parsed = json.loads(body) if body.startswith('{"query"') else {"query": body}
                params = {k: v if isinstance(v, str) else json.dumps(v) for k, v in parsed.items() if v}
                response = client.get(f"{live.base}/graphql/", params=params, headers=headers)
            else:
                response = client.request(
                    method, f"{live.base}/graphql/", content=body.encode(), headers=headers
                )
        check_graphql(response.status_code, response.content)

    hostile()


SOCKET_CLOSE_CODES = {1000, 1001, 1009, 1011, 4400, 4401, 4403, 4406, 4408, 4409, 4429}
SOCKET_TYPES = {
    "graphql-transport-ws": {"connection_ack", "next", "error", "complete", "ping", "pong"},
    "graphql-ws": {"connection_ack", "connection_error", "ka", "data", "error", "complete"},
}


def test_hostile_socket_frames_get_the_protocols_answers_never_a_crash(live: Live) -> None:
    """GraphQL over WebSocket (docs/graphql.md#subscriptions): malformed frames, unknown message
    types, duplicate ids, oversized messages, operations before the ack, hostile documents: every
    answer is a message of the protocol (its errors coded, never internal_error) or a close with one
    of the protocol's codes, and the server keeps serving."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    documents, variables = _hostile_documents(live.table)
    payloads = st.builds(
        lambda q, v, name: {"query": q, "variables": v, "operationName": name},
        st.sampled_from(documents),
        st.sampled_from(variables),
        st.sampled_from([None, "A", 5]),
    )
    ids = st.sampled_from(["1", "1", "2", "", 5, None, "x" * 300])
    messages = st.one_of(
        st.builds(lambda i, p: {"type": "subscribe", "id": i, "payload": p}, ids, payloads),
        st.builds(lambda i, p: {"type": "start", "id": i, "payload": p}, ids, payloads),
        st.builds(lambda i: {"type": "complete", "id": i}, ids),
        st.builds(lambda i: {"type": "stop", "id": i}, ids),
        st.sampled_from(
            [
                {"type": "connection_init", "payload": {"Authorization": f"Bearer {live.token}"}},
                {"type": "connection_init", "payload": {"Authorization": "Bearer " + HUGE}},
                {"type": "connection_init", "payload": {"ticket": "x"}},
                {"type": "connection_init", "payload": [1]},
                {"type": "connection_init"},
                {"type": "ping", "payload": {"x": 1}},
                {"type": "pong"},
                {"type": "ka"},
                {"type": "connection_terminate"},
                {"type": "what"},
                {"type": None},
                {},
            ]
        ),
    ).map(json.dumps)
    frames = st.one_of(
        messages,
        st.sampled_from(["", "null", "[]", "{", _deep(3000), '"x"', "x" * 70_000, r'{"type": "\ud800"}']),
        st.binary(max_size=64),
    )
    init = json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {live.token}"}})
    url = live.base.replace("http://", "ws://") + "/graphql/"

    @given(
        protocol=st.sampled_from(list(SOCKET_TYPES)),
        initialised=st.booleans(),
        sent=st.lists(frames, min_size=1, max_size=6),
    )
    @settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    def hostile(protocol: str, initialised: bool, sent: list[Any]) -> None:
        with connect(url, subprotocols=[protocol], max_size=None, open_timeout=10) as ws:  # type: ignore[list-item]
            try:
                for frame in [init, *sent] if initialised else sent:
                    ws.send(frame)
                while True:
                    raw = ws.recv(timeout=0.3)
                    message = json.loads(raw)
                    assert isinstance(message, dict) and message.get("type") in SOCKET_TYPES[protocol], raw
                    payload = message.get("payload")
                    errors = payload if isinstance(payload, list) else []
                    if isinstance(payload, dict):
                        errors = payload.get("errors") or ([payload] if "extensions" in payload else [])
                    for error in errors:
                        assert error["extensions"]["code"] not in ("internal_error", "server_error"), raw
            except TimeoutError:
                return  # nothing more to say: the socket is still open and well
            except ConnectionClosed:
                assert ws.close_code in SOCKET_CLOSE_CODES, (ws.close_code, ws.close_reason)

    hostile()
    assert httpx.get(f"{live.base}/healthz").status_code == 200


def test_no_request_of_the_fuzz_was_counted_as_an_internal_error(live: Live) -> None:
    """GraphQL and REST client mistakes are refusals with their own codes in the metrics, never
    internal errors; run after a sample of the hostile GraphQL bodies."""
    for body in [
        "null",
        '{"query": 5}',
        "[]",
        "{",
        '{"query": "query($t: Int!) { table(id: $t) { id } }", "variables": {"t": "x"}}',
    ]:
        r = httpx.post(f"{live.base}/graphql/", content=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and r.json()["errors"][0]["extensions"]["code"] != "internal_error"
    r = httpx.get(f"{live.base}/graphql/", params={"query": "{ me { kind } }"}, headers=live.auth(""))
    assert r.status_code == 200 and r.json() == {"data": {"me": {"kind": "player"}}}
    metrics = httpx.get(f"{live.base}/metrics").text
    assert 'code="internal_error"' not in metrics and 'code="server_error"' not in metrics
    assert not re.search(r'hearts_http_request_duration_seconds_count\{[^}]*status="5', metrics)
