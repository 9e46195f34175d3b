"""GraphQL at parity with REST: every REST operation has a GraphQL field of its name (computed from
the two served schemas), the webhook and stream-ticket operations behave as REST's, and the renamed
mutations still answer under their old names, marked deprecated."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client
from graphql import GraphQLObjectType, build_client_schema, get_introspection_query, get_named_type
from rest_framework.test import APIClient

from games import accounts, services
from games.accounts import app_create, player_create
from games.errors import ServiceError
from games.graphql.tables import DEPRECATED_UNTIL
from tests.graphql.test_graphql import ROOT, gql, guest, ok

pytestmark = pytest.mark.django_db

# REST operations GraphQL does not serve under their own name, each with why and what serves it.
# Keep it short: anything a client does belongs in GraphQL under the operationId (or its noun).
NOT_IN_GRAPHQL = {
    # The event streams (SSE/NDJSON): GraphQL serves them as subscriptions over WebSocket.
    "streamTableEvents": "Subscription.tableEvents",
    "streamMyEvents": "Subscription.myEvents",
    # Files to download (an attachment, text/plain); GraphQL answers the same documents as fields.
    "exportGame": "Query.tableExport",
    "getTranscript": "Query.tableTranscript",
    # A player's export is a file of up to megabytes, downloaded by the URL GraphQL answers as
    # `export(id) { document }`; its JSON Schema is a static document at one URL for both APIs.
    "downloadExport": "Query.export",
    "getExportSchema": "Query.export",
}
# Old GraphQL names of renamed mutations, kept (deprecated) until DEPRECATED_UNTIL.
RENAMED = {
    "imBack": "reclaimSeat",
    "rematch": "requestRematch",
    "issueToken": "createPlayerToken",
    "setLanguage": "updateMe",
}
METHODS = ("get", "post", "put", "patch", "delete")


def rest_operations() -> list[tuple[str, str, str]]:
    """(operationId, method, path) of every operation of the served OpenAPI document."""
    r = Client().get("/api/schema/?format=json")
    assert r.status_code == 200
    return [
        (op["operationId"], method, path)
        for path, item in r.json()["paths"].items()
        for method, op in item.items()
        if method in METHODS
    ]


def graphql_schema() -> Any:
    """The served GraphQL schema, from the standard introspection query."""
    return build_client_schema(ok(get_introspection_query(descriptions=False), guest()))


def noun(operation_id: str) -> str | None:
    """A read's noun: getTable -> table, listTables -> tables (None for any other verb)."""
    found = re.fullmatch(r"(?:get|list)([A-Z]\w*)", operation_id)
    return found.group(1)[0].lower() + found.group(1)[1:] if found else None


def conventional(
    operation_id: str, method: str, path: str, by_path: dict[str, str], schema: Any
) -> str | None:
    """Where GraphQL serves this operation under its conventional name, or None. A write is the
    Mutation field named as its operationId; a read is the Query field named as its operationId
    or its noun, or a field of the resource it belongs to, named as its noun without the
    resource's name: GET tables/{id}/moves (listMoves) is `table(id) { moves }`,
    tournaments/{id}/standings (getTournamentStandings) is `tournament(id) { standings }`, and
    one resource deeper tables/{id}/hands/{n}/review (getHandReview) is `hand(number) { review }`
    of `table(id)`."""
    mutation, query = schema.mutation_type.fields, schema.query_type.fields
    if method != "get":
        return f"Mutation.{operation_id}" if operation_id in mutation else None
    names = [operation_id, *filter(None, [noun(operation_id)])]
    for name in names:
        if name in query:
            return f"Query.{name}"
    parts = path.rstrip("/").split("/")
    for end in range(len(parts) - 1, 0, -1):  # the nearest resource above this path: .../{id}
        parent = "/".join(parts[:end])
        if not parts[end - 1].startswith("{") or parent not in by_path:
            continue
        parent_field = conventional(by_path[parent], "get", parent, by_path, schema)
        if parent_field is None:
            return None
        holder, name = parent_field.split(".")  # Query.table, or a field of a resource: Table.hand
        holder_type = schema.query_type if holder == "Query" else schema.get_type(holder)
        owner = get_named_type(holder_type.fields[name].type)
        assert isinstance(owner, GraphQLObjectType)
        own = noun(operation_id)
        if own is None:
            return None
        short = own[len(owner.name) :] if own.lower().startswith(owner.name.lower()) else own
        for name in (own, short[:1].lower() + short[1:]):
            if name in owner.fields:
                return f"{owner.name}.{name}"
        return None
    return None


def parity(schema: Any) -> tuple[dict[str, str], list[str]]:
    ops = rest_operations()
    by_path = {path: op for op, method, path in ops if method == "get"}
    served, missing = {}, []
    for op, method, path in ops:
        where = conventional(op, method, path, by_path, schema)
        if where is None:
            missing.append(op)
        else:
            served[op] = where
    return served, missing


def test_every_rest_operation_has_a_graphql_field_of_its_name() -> None:
    schema = graphql_schema()
    served, missing = parity(schema)
    assert sorted(set(missing) - set(NOT_IN_GRAPHQL)) == [], "REST operations missing from GraphQL"
    assert not set(NOT_IN_GRAPHQL) & set(served), "served now: take it off NOT_IN_GRAPHQL"
    assert set(NOT_IN_GRAPHQL) <= {op for op, _, _ in rest_operations()}, "not a REST operation"
    for op, where in NOT_IN_GRAPHQL.items():
        kind, name = where.split(".")
        if kind == "Subscription" and schema.subscription_type is None:
            continue  # the subscriptions land with issue 33's point 1
        owner = {"Query": schema.query_type, "Subscription": schema.subscription_type}[kind]
        assert name in owner.fields, f"{op}: {where} is gone"
    # A few of the rule's answers, by hand.
    assert served["getTable"] == "Query.table" and served["listTables"] == "Query.tables"
    assert served["listMoves"] == "Table.moves" and served["listTableEvents"] == "Table.events"
    assert served["getTournamentStandings"] == "Tournament.standings"
    assert served["getHand"] == "Table.hand" and served["getHandReview"] == "Hand.review"  # nested twice
    assert served["reclaimSeat"] == "Mutation.reclaimSeat"
    assert served["createTableStreamTicket"] == "Mutation.createTableStreamTicket"
    assert served["listDeliveries"] == "Query.deliveries" and served["getWebhook"] == "Query.webhook"


def test_renamed_mutations_keep_their_old_names_deprecated_until_the_documented_date() -> None:
    fields = graphql_schema().mutation_type.fields
    for old, new in RENAMED.items():
        assert new in fields and not fields[new].deprecation_reason
        reason = fields[old].deprecation_reason
        assert reason and new in reason and DEPRECATED_UNTIL in reason, (old, reason)
    deprecated = {name for name, f in fields.items() if f.deprecation_reason}
    assert deprecated == set(RENAMED)
    text = (ROOT / "schema.graphql").read_text()
    assert text.count(f'until {DEPRECATED_UNTIL}."') == len(RENAMED)


# -- the renamed mutations, under both names ------------------------------------------------------


def test_old_and_new_names_do_the_same() -> None:
    app, key = app_create(name="a")
    player, _ = player_create(app=app, name="p")
    for field in ("createPlayerToken", "issueToken"):
        body = ok(
            f"mutation {{ {field}(playerId: {player.pk}) {{ token player {{ id }} errors {{ code }} }} }}",
            key,
        )
        assert body["token"].startswith("hk_") and body["player"]["id"] == player.pk
    token = guest()
    me = ok('mutation { updateMe(language: "mi") { me { kind language } errors { code } } }', token)
    assert me["me"] == {"kind": "player", "language": "mi"}
    same = ok("mutation { updateMe { me { language } errors { code } } }", token)  # left out: unchanged
    assert same["me"]["language"] == "mi"
    assert ok('mutation { setLanguage(language: "") { language errors { code } } }', token)["language"] == ""
    for field, args in (("updateMe", 'language: "xx"'), ("setLanguage", 'language: "xx"')):
        bad = gql(f"mutation {{ {field}({args}) {{ errors {{ code }} }} }}", token)["data"][field]
        assert bad["errors"] == [{"code": "invalid_language"}]
    refused = gql('mutation { updateMe(language: "mi") { me { kind } errors { code } } }', key)["data"]
    assert refused["updateMe"] == {"me": None, "errors": [{"code": "player_token_required"}]}
    # A table: reclaimSeat / imBack and requestRematch / rematch answer the same codes.
    out = services.table_create(bots={1: "basic", 2: "basic", 3: "basic"}, app=None, creator=None)
    assert out.table is not None
    for field in ("reclaimSeat", "imBack", "requestRematch", "rematch"):
        body = gql(
            f"mutation {{ {field}(tableId: {out.table.pk}) {{ table {{ id }} errors {{ code }} }} }}", token
        )
        assert body["data"][field]["errors"][0]["code"] in {"not_seated", "not_found", "not_finished"}, body


def test_submit_action_is_the_typed_actions_in_one() -> None:
    token = guest()
    made = ok(
        'mutation { createTable(bots: [{position: 1, level: "basic"}, {position: 2, level: "basic"}, '
        '{position: 3, level: "basic"}]) { table { id version } errors { code } } }',
        token,
    )
    table_id = made["table"]["id"]
    joined = ok(
        "mutation($t: Int!) { joinTable(tableId: $t) { table { version game { hand } } errors { code } } }",
        token,
        t=table_id,
    )
    hand = joined["table"]["game"]["hand"]
    wrong = gql(
        'mutation($t: Int!, $c: String) { submitAction(tableId: $t, type: "play", card: $c) '
        "{ errors { code } } }",
        token,
        t=table_id,
        c=hand[0],
    )["data"]["submitAction"]
    assert wrong["errors"][0]["code"] in {"wrong_phase", "illegal_action", "not_your_turn"}, wrong
    unknown = gql(
        f'mutation {{ submitAction(tableId: {table_id}, type: "dance") {{ errors {{ code }} }} }}', token
    )
    assert unknown["data"]["submitAction"]["errors"][0]["code"] in {"invalid_action", "invalid_input"}, (
        unknown
    )
    passed = ok(
        'mutation($t: Int!, $c: [String!]) { submitAction(tableId: $t, type: "pass", cards: $c, '
        'idempotencyKey: "k1") { table { version } errors { code } replayed } }',
        token,
        t=table_id,
        c=hand[:3],
    )
    again = ok(
        'mutation($t: Int!, $c: [String!]) { submitAction(tableId: $t, type: "pass", cards: $c, '
        'idempotencyKey: "k1") { table { version } errors { code } replayed } }',
        token,
        t=table_id,
        c=hand[:3],
    )
    assert again["replayed"] and again["table"] == passed["table"] and not passed["replayed"]


# -- webhooks -----------------------------------------------------------------------------------

WEBHOOK = "webhook { id url eventTypes description active createdAt updatedAt }"


def rest(secret: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return c


def test_webhook_management_answers_as_rest() -> None:
    _, key = app_create(name="a")
    _, other_key = app_create(name="b")
    made = ok(
        'mutation { createWebhook(url: "https://example.com/hook", eventTypes: ["game_started"], '
        f'description: "mine") {{ {WEBHOOK} secret errors {{ code }} }} }}',
        key,
    )
    hook, secret = made["webhook"], made["secret"]
    assert secret.startswith("whsec_") and hook["eventTypes"] == ["game_started"] and hook["active"]
    shown = rest(key).get(f"/api/v1/webhooks/{hook['id']}").json()
    assert shown == {
        "id": hook["id"],
        "url": hook["url"],
        "event_types": hook["eventTypes"],
        "description": hook["description"],
        "active": hook["active"],
        "created_at": hook["createdAt"],
        "updated_at": hook["updatedAt"],
    }
    listed = ok("query($w: Int!) { webhooks { id } webhook(id: $w) { url } }", key, w=hook["id"])
    assert listed == {"webhooks": [{"id": hook["id"]}], "webhook": {"url": "https://example.com/hook"}}
    # Created over REST, seen over GraphQL; the secret is never shown again.
    rest_made = rest(key).post("/api/v1/webhooks", {"url": "https://example.com/2"}, format="json").json()
    assert [h["id"] for h in ok("{ webhooks { id eventTypes } }", key)["webhooks"]] == [
        hook["id"],
        rest_made["id"],
    ]
    assert "secret" not in str(ok('{ __type(name: "Webhook") { fields { name } } }', key))
    # Errors: the REST codes, as typed errors.
    for args, code, field in (
        ('url: "ftp://x"', "invalid_url", None),
        ('url: "https://x.example", eventTypes: ["cards_dealt"]', "invalid_event_type", None),
        ('url: "https://x.example", description: "%s"' % ("d" * 201), "invalid_input", "description"),
    ):
        body = gql(
            f"mutation {{ createWebhook({args}) {{ webhook {{ id }} secret errors {{ code field }} }} }}", key
        )
        assert body["data"]["createWebhook"] == {
            "webhook": None,
            "secret": None,
            "errors": [{"code": code, "field": field}],
        }
    player_token = guest()
    for token, code in ((player_token, "app_key_required"),):
        body = gql('mutation { createWebhook(url: "https://x.example") { errors { code } } }', token)
        assert body["data"]["createWebhook"]["errors"] == [{"code": code}]
        assert gql("{ webhooks { id } }", token)["errors"][0]["extensions"]["code"] == code
    # Another app's endpoint: null to a query, not_found to a mutation, as REST's 404.
    assert ok("query($w: Int!) { webhook(id: $w) { id } }", other_key, w=hook["id"]) == {"webhook": None}
    theirs = ok("query($w: Int!) { deliveries(webhookId: $w) { edges { cursor } } }", other_key, w=hook["id"])
    assert theirs == {"deliveries": None}
    for mutation in (
        f"updateWebhook(id: {hook['id']}, active: false) {{ errors {{ code }} }}",
        f"rotateWebhookSecret(id: {hook['id']}) {{ errors {{ code }} }}",
        f"deleteWebhook(id: {hook['id']}) {{ errors {{ code }} }}",
    ):
        body = gql(f"mutation {{ {mutation} }}", other_key)["data"]
        assert next(iter(body.values()))["errors"] == [{"code": "not_found"}], mutation
    # Change, rotate, delete.
    changed = ok(
        f'mutation {{ updateWebhook(id: {hook["id"]}, description: "new", eventTypes: ["*"]) '
        f"{{ {WEBHOOK} secret errors {{ code }} }} }}",
        key,
    )
    assert changed["webhook"]["description"] == "new" and changed["webhook"]["eventTypes"] == ["*"]
    assert changed["secret"] is None and changed["webhook"]["url"] == hook["url"]  # left out: it stays
    rotated = ok(f"mutation {{ rotateWebhookSecret(id: {hook['id']}) {{ secret errors {{ code }} }} }}", key)
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != secret
    assert ok(f"mutation {{ deleteWebhook(id: {hook['id']}) {{ deleted errors {{ code }} }} }}", key)[
        "deleted"
    ]
    assert rest(key).get(f"/api/v1/webhooks/{hook['id']}").status_code == 404


REDELIVER = (
    "mutation($w: Int!, $d: String!) { redeliver(webhookId: $w, deliveryId: $d) "
    "{ delivery { id status } errors { code } } }"
)


def test_deliveries_page_and_redeliver_as_rest() -> None:
    app, key = app_create(name="a")
    hook = rest(key).post("/api/v1/webhooks", {"url": "https://example.com/hook"}, format="json").json()
    for _ in range(3):  # all-bot tables start at once: a delivery of game_started each
        services.table_create(bots=dict.fromkeys(range(4), "basic"), clocks={"play": None}, app=app)
    listed = rest(key).get(f"/api/v1/webhooks/{hook['id']}/deliveries").json()["results"]
    assert len(listed) >= 3
    first = ok(
        "query($w: Int!) { deliveries(webhookId: $w, first: 2) { edges { cursor node { id table seq "
        "status eventTypes body log { attempt } } } pageInfo { hasNextPage endCursor } } }",
        key,
        w=hook["id"],
    )["deliveries"]
    nodes = [e["node"] for e in first["edges"]]
    assert [n["id"] for n in nodes] == [d["id"] for d in listed[:2]]  # newest first, as REST
    assert all(n["body"] is None and n["log"] is None for n in nodes) and first["pageInfo"]["hasNextPage"]
    rest_of = ok(
        "query($w: Int!, $a: String) { deliveries(webhookId: $w, after: $a) { edges { node { id } } } }",
        key,
        w=hook["id"],
        a=first["pageInfo"]["endCursor"],
    )["deliveries"]
    assert [e["node"]["id"] for e in rest_of["edges"]] == [d["id"] for d in listed[2:]]
    bad = gql(
        'query($w: Int!) { deliveries(webhookId: $w, status: "lost") { edges { cursor } } }',
        key,
        w=hook["id"],
    )
    assert bad["errors"][0]["extensions"]["code"] == "invalid_filter"
    one = listed[0]["id"]
    detail = ok(
        "query($w: Int!, $d: String!) { delivery(webhookId: $w, id: $d) { id body log { attempt } } }",
        key,
        w=hook["id"],
        d=one,
    )
    from_rest = rest(key).get(f"/api/v1/webhooks/{hook['id']}/deliveries/{one}").json()
    assert from_rest["body"] == json.loads(detail["delivery"]["body"])
    nothing = ok('query($w: Int!) { delivery(webhookId: $w, id: "not-a-uuid") { id } }', key, w=hook["id"])
    assert nothing == {"delivery": None}
    again = ok(
        REDELIVER,
        key,
        w=hook["id"],
        d=one,
    )
    assert again["delivery"] == {"id": one, "status": "pending"}
    ok(f"mutation {{ updateWebhook(id: {hook['id']}, active: false) {{ errors {{ code }} }} }}", key)
    off = gql(
        REDELIVER,
        key,
        w=hook["id"],
        d=one,
    )["data"]["redeliver"]
    assert off == {"delivery": None, "errors": [{"code": "webhook_disabled"}]}
    missing = gql(
        f'mutation {{ redeliver(webhookId: {hook["id"]}, deliveryId: "nope") {{ errors {{ code }} }} }}', key
    )["data"]["redeliver"]
    assert missing == {"errors": [{"code": "not_found"}]}


# -- stream tickets -----------------------------------------------------------------------------

TICKET = "ticket expiresAt url errors { code }"


def test_stream_tickets_answer_as_rest_and_open_their_stream() -> None:
    token = guest()
    made = ok(
        'mutation { createTable(bots: [{position: 1, level: "basic"}]) { table { id } errors { code } } }',
        token,
    )
    table_id = made["table"]["id"]
    ticket = ok(f"mutation {{ createTableStreamTicket(tableId: {table_id}) {{ {TICKET} }} }}", token)
    from_rest = rest(token).post(f"/api/v1/tables/{table_id}/stream-tickets").json()
    assert (
        ticket["url"].split("?")[0]
        == from_rest["url"].split("?")[0]
        == (f"http://testserver/api/v1/tables/{table_id}/stream")
    )
    assert ticket["url"] == f"http://testserver/api/v1/tables/{table_id}/stream?" + urlencode(
        {"ticket": ticket["ticket"]}
    )
    assert ticket["expiresAt"] > "2000"
    mine = ok(f"mutation {{ createPlayerStreamTicket {{ {TICKET} }} }}", token)
    assert mine["url"].startswith("http://testserver/api/v1/me/stream?ticket=")
    # The ticket opens that stream as the caller, and no other (the streams' own check).
    player = accounts.principal_from_ticket(ticket["ticket"], f"table:{table_id}").player
    assert player is not None and player.pk == ok("{ me { player { id } } }", token)["me"]["player"]["id"]
    assert accounts.principal_from_ticket(mine["ticket"], "me").player == player
    with pytest.raises(ServiceError):
        accounts.principal_from_ticket(ticket["ticket"], "me")
    # Errors as REST: a table you cannot see, an app key for a player stream.
    _, key = app_create(name="other")
    assert gql(f"mutation {{ createTableStreamTicket(tableId: {table_id}) {{ {TICKET} }} }}", key)["data"][
        "createTableStreamTicket"
    ] == {"ticket": None, "expiresAt": None, "url": None, "errors": [{"code": "not_found"}]}
    assert gql(f"mutation {{ createPlayerStreamTicket {{ {TICKET} }} }}", key)["data"][
        "createPlayerStreamTicket"
    ]["errors"] == [{"code": "player_token_required"}]
    anonymous = gql(f"mutation {{ createPlayerStreamTicket {{ {TICKET} }} }}")["data"][
        "createPlayerStreamTicket"
    ]
    assert anonymous["errors"] == [{"code": "not_authenticated"}]
