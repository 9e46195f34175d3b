"""Private and unlisted tables, named players and invite codes: services, REST, GraphQL, racing joins."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from games import services
from games.accounts import app_create, player_create
from games.errors import ServiceError
from games.models import Invite, Player, Table
from games.services.invites import invite_body
from tests.api.test_api import client, guest
from tests.graphql.test_graphql import gql, ok

pytestmark = pytest.mark.django_db


def _code(call: Any) -> str:
    with pytest.raises(ServiceError) as refused:
        call()
    return refused.value.code


def _guests(n: int) -> list[Player]:
    return [Player.objects.create(name=f"v{i}") for i in range(n)]


def _listed(table: Table, player: Player) -> list[dict[str, Any]]:
    """The table's usable codes as a list shows them."""
    return [invite_body(i) for i in services.invites_of(table_id=table.pk, player=player, scope=None)]


def test_a_private_table_is_seen_and_joined_only_by_the_named_seated_and_code_holders() -> None:
    host, named, stranger, holder = _guests(4)
    table = services.table_create(visibility="private", invited=[named.pk]).table
    assert table is not None and table.invited == [named.pk]
    # not named, no code: a private table is not found, as another app's would be
    assert _code(lambda: services.seat_join(table_id=table.pk, player=host, scope=None)) == "not_found"
    Table.objects.filter(pk=table.pk).update(invited=[named.pk, host.pk])
    services.seat_join(table_id=table.pk, player=host, scope=None)
    assert _code(lambda: services.seat_join(table_id=table.pk, player=stranger, scope=None)) == "not_found"
    # everything a stranger could do to it is a 404, as for another app's table
    for call in (
        lambda: services.bot_add(table_id=table.pk, player=stranger, scope=None),
        lambda: services.table_start(table_id=table.pk, player=stranger, scope=None),
        lambda: services.seat_leave(table_id=table.pk, player=stranger, scope=None),
        lambda: services.invite_create(table_id=table.pk, player=stranger, scope=None),
        lambda: services.invites_of(table_id=table.pk, player=stranger, scope=None),
    ):
        assert _code(call) == "not_found"
    made = services.invite_create(table_id=table.pk, player=host, scope=None, uses=1)
    assert len(made["code"]) >= 22 and made["uses_left"] == 1 and made["hint"] == made["code"][:4]
    assert Invite.objects.get().code_hash != made["code"]  # stored hashed only
    assert _listed(table, host) == [{k: v for k, v in made.items() if k != "code"}]
    out = services.join_by_invite(code=made["code"], player=holder, scope=None)
    assert out.table is not None and out.table.seat_of(holder.pk) is not None
    assert Invite.objects.get().uses_left == 0
    # used up: the next holder is refused, and the code no longer lists
    with pytest.raises(ServiceError) as used:
        services.join_by_invite(code=made["code"], player=stranger, scope=None)
    assert used.value.code == "invite_invalid" and used.value.details["reason"] == "used_up"
    assert _listed(table, host) == []
    services.seat_join(table_id=table.pk, player=named, scope=None)  # named: no code needed
    table.refresh_from_db()
    assert table.status == Table.Status.OPEN and sum(s["player"] is not None for s in table.seating) == 3


def test_codes_are_refused_when_revoked_expired_unknown_or_of_another_table() -> None:
    host, other, joiner = _guests(3)
    private = services.table_create(visibility="private", invited=[host.pk]).table
    public = services.table_create().table
    assert private is not None and public is not None
    services.seat_join(table_id=private.pk, player=host, scope=None)
    services.seat_join(table_id=public.pk, player=other, scope=None)
    revoked = services.invite_create(table_id=private.pk, player=host, scope=None)["code"]
    services.invite_revoke(table_id=private.pk, code=revoked, player=host, scope=None)
    with pytest.raises(ServiceError) as gone:
        services.join_by_invite(code=revoked, player=joiner, scope=None)
    assert gone.value.code == "invite_invalid" and gone.value.details["reason"] == "revoked"
    assert _code(
        lambda: services.invite_revoke(table_id=private.pk, code=revoked, player=host, scope=None)
    ) == ("invite_invalid")
    late = services.invite_create(table_id=private.pk, player=host, scope=None, expires_in=60)["code"]
    Invite.objects.filter(hint=late[:4]).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert _code(lambda: services.join_by_invite(code=late, player=joiner, scope=None)) == "invite_expired"
    assert _code(lambda: services.table_by_code(late, None)) == "invite_expired"
    assert _code(lambda: services.join_by_invite(code="no-such-code", player=joiner, scope=None)) == (
        "invite_invalid"
    )
    # a code of the public table sent to the private one: the private table stays invisible
    public_code = services.invite_create(table_id=public.pk, player=other, scope=None)["code"]
    join = services.seat_join
    assert (
        _code(lambda: join(table_id=private.pk, player=joiner, scope=None, invite=public_code)) == "not_found"
    )
    # ... while a visible table answers that the code is not one of its own
    assert (
        _code(lambda: join(table_id=public.pk, player=joiner, scope=None, invite=revoked)) == "invite_invalid"
    )
    # an unseated player may not make codes; bad bounds change nothing
    assert (
        _code(lambda: services.invite_create(table_id=public.pk, player=joiner, scope=None)) == "not_seated"
    )
    count = Invite.objects.count()
    for bad in ({"uses": 0}, {"expires_in": 10}, {"uses": True}):
        assert _code(
            lambda bad=bad: services.invite_create(table_id=public.pk, player=other, scope=None, **bad)
        ) == ("invalid_input")
    assert Invite.objects.count() == count
    # nothing was changed by any refusal
    private.refresh_from_db()
    assert [s["player"] for s in private.seating if s["player"]] == [host.pk]


def test_creation_checks_visibility_and_named_players_of_the_same_scope() -> None:
    app, _ = app_create(name="a")
    theirs, _ = player_create(app=app, name="p")
    (mine,) = _guests(1)
    assert _code(lambda: services.table_create(visibility="secret")) == "invalid_input"
    assert _code(lambda: services.table_create(visibility="private", invited=[theirs.pk])) == "invalid_input"
    assert _code(lambda: services.table_create(app=app, invited=[mine.pk])) == "invalid_input"
    assert _code(lambda: services.table_create(invited=["1"])) == "invalid_input"  # type: ignore[list-item]
    assert Table.objects.count() == 0
    made = services.table_create(app=app, visibility="unlisted", invited=[theirs.pk, theirs.pk]).table
    assert made is not None and made.invited == [theirs.pk]


def test_rest_lists_public_tables_only_and_hides_private_ones_from_strangers() -> None:
    host_id, host = guest("host")
    _, stranger = guest("stranger")
    named_id, named = guest("named")
    made = {
        v: client(host).post("/api/v1/tables", {"visibility": v, "invited": [named_id]}, format="json").json()
        for v in ("public", "unlisted", "private")
    }
    assert {v: t["visibility"] for v, t in made.items()} == {v: v for v in made}
    assert made["private"]["invited"] == sorted([named_id, host_id])
    listed = client(stranger).get("/api/v1/tables").json()["results"]
    assert [t["id"] for t in listed] == [made["public"]["id"]] and listed[0]["visibility"] == "public"
    private = made["private"]["id"]
    for path in ("", "/events", "/moves", "/hands", "/hands/1", "/scoresheet", "/invites", "/export"):
        assert client(stranger).get(f"/api/v1/tables/{private}{path}").status_code == 404, path
    assert client(stranger).get(f"/api/v1/tables/{private}/transcript").status_code == 404
    assert client(stranger).post(f"/api/v1/tables/{private}/stream-tickets").status_code == 404
    for path in ("bots", "start", "leave", "rematch", "back", "abandon"):
        r = client(stranger).post(f"/api/v1/tables/{private}/{path}")
        assert r.status_code in (404, 422) and r.json()["code"] in ("not_found", "app_key_required"), path
    r = client(stranger).post(
        f"/api/v1/tables/{private}/actions", {"type": "play", "card": "2C"}, format="json"
    )
    assert (r.status_code, r.json()["code"]) == (404, "not_found")
    assert client(stranger).post(f"/api/v1/tables/{private}/join").json()["code"] == "not_found"
    assert client(stranger).get(f"/api/v1/tables/{made['unlisted']['id']}").status_code == 200
    assert client(named).get(f"/api/v1/tables/{private}").status_code == 200
    assert client(host).get(f"/api/v1/tables/{private}").status_code == 200  # its creator is named
    r = client(named).post(f"/api/v1/tables/{private}/join")
    assert r.status_code == 200 and r.json()["your_seat"] == 0
    mine = client(named).get("/api/v1/tables?mine=true").json()["results"]
    assert [t["id"] for t in mine] == [private]  # a player's own tables list, whatever their visibility
    r = client(named).post(
        f"/api/v1/tables/{private}/invites", {"uses": 2, "expires_in": 3600}, format="json"
    )
    assert r.status_code == 201, r.json()
    code = r.json()["code"]
    assert r.json()["uses_left"] == 2 and r.json()["expires_at"]
    listed_codes = client(named).get(f"/api/v1/tables/{private}/invites").json()["invites"]
    assert [i["hint"] for i in listed_codes] == [code[:4]] and "code" not in listed_codes[0]
    preview = client(stranger).get(f"/api/v1/invites/{code}")
    assert (
        preview.status_code == 200 and preview.json()["id"] == private and preview.json()["your_seat"] is None
    )
    r = client(stranger).post(f"/api/v1/tables/{private}/join", {"invite": code}, format="json")
    assert r.status_code == 200 and r.json()["your_seat"] == 1
    assert client(stranger).get(f"/api/v1/tables/{private}").status_code == 200  # seated now
    r = client(guest("third")[1]).post(f"/api/v1/invites/{code}/join", {"position": 3}, format="json")
    assert r.status_code == 200 and r.json()["your_seat"] == 3
    r = client(guest("late")[1]).post(f"/api/v1/invites/{code}/join")
    assert (r.status_code, r.json()["code"], r.json()["reason"]) == (422, "invite_invalid", "used_up")
    r = client(host).post(f"/api/v1/tables/{private}/invites")  # named, but not seated
    assert (r.status_code, r.json()["code"]) == (422, "not_seated")
    second = client(named).post(f"/api/v1/tables/{private}/invites").json()["code"]
    assert client(named).delete(f"/api/v1/tables/{private}/invites/{second}").status_code == 204
    r = client(named).delete(f"/api/v1/tables/{private}/invites/{second}")
    assert (r.status_code, r.json()["code"]) == (422, "invite_invalid")
    assert client(host).get(f"/api/v1/invites/{second}").json()["code"] == "invite_invalid"
    assert client(host).get("/api/v1/invites/not*a*code").status_code == 404


def test_an_apps_private_table_is_always_the_apps_and_never_another_apps() -> None:
    app, key = app_create(name="a")
    _, other_key = app_create(name="b")
    made = client(key).post("/api/v1/tables", {"visibility": "private"}, format="json").json()
    assert [t["id"] for t in client(key).get("/api/v1/tables").json()["results"]] == [made["id"]]
    assert client(key).get(f"/api/v1/tables/{made['id']}").status_code == 200
    assert client(other_key).get(f"/api/v1/tables/{made['id']}").status_code == 404
    assert client(other_key).post(f"/api/v1/tables/{made['id']}/invites").status_code == 404
    code = client(key).post(f"/api/v1/tables/{made['id']}/invites").json()["code"]
    _, theirs = player_create(app=app, name="p")
    assert client(theirs).get(f"/api/v1/tables/{made['id']}").status_code == 404
    # another app's player cannot use the code: it names no table in their scope
    other_app = app_create(name="c")[0]
    _, outsider = player_create(app=other_app, name="q")
    assert client(outsider).post(f"/api/v1/invites/{code}/join").json()["code"] == "invite_invalid"
    assert client(guest("g")[1]).get(f"/api/v1/invites/{code}").json()["code"] == "invite_invalid"
    r = client(theirs).post(f"/api/v1/invites/{code}/join")
    assert r.status_code == 200 and r.json()["visibility"] == "private"


def test_graphql_creates_private_tables_and_invites_and_joins_by_code() -> None:
    def token() -> str:
        return ok('mutation { createGuest(name: "g") { token errors { code } } }')["token"]

    host, stranger, joiner = token(), token(), token()
    host_id = ok("{ me { player { id } } }", host)["me"]["player"]["id"]
    made = ok(
        "mutation { createTable(visibility: private) { table { id visibility invited } errors { code } } }",
        host,
    )["table"]
    assert made["visibility"] == "private" and made["invited"] == [host_id]
    table = made["id"]
    assert ok(f"{{ table(id: {table}) {{ id }} }}", stranger)["table"] is None
    ok(f"mutation {{ joinTable(tableId: {table}) {{ table {{ id }} errors {{ code }} }} }}", host)
    created = ok(
        "mutation($t: Int!) { createInvite(tableId: $t, uses: 1) "
        "{ invite { code hint usesLeft } errors { code } } }",
        host,
        t=table,
    )["invite"]
    assert created["usesLeft"] == 1 and created["hint"] == created["code"][:4]
    listed = ok(f"{{ invites(tableId: {table}) {{ hint code }} }}", host)["invites"]
    assert listed == [{"hint": created["hint"], "code": None}]
    seen = ok("query($c: String!) { inviteTable(code: $c) { id yourSeat } }", stranger, c=created["code"])
    assert seen["inviteTable"] == {"id": table, "yourSeat": None}
    refused = gql(
        f"mutation {{ createInvite(tableId: {table}) {{ invite {{ code }} errors {{ code }} }} }}", stranger
    )["data"]["createInvite"]
    assert refused == {"invite": None, "errors": [{"code": "not_found"}]}
    joined = ok(
        "mutation($c: String!) { joinByInvite(code: $c) { table { id yourSeat } errors { code } } }",
        joiner,
        c=created["code"],
    )
    assert joined["table"] == {"id": table, "yourSeat": 1}
    again = gql(
        "mutation($c: String!) { joinByInvite(code: $c) { table { id } errors { code } } }",
        stranger,
        c=created["code"],
    )["data"]["joinByInvite"]
    assert again == {"table": None, "errors": [{"code": "invite_invalid"}]}
    second = ok(
        f"mutation {{ createInvite(tableId: {table}) {{ invite {{ code }} errors {{ code }} }} }}", host
    )
    code = second["invite"]["code"]
    revoked = ok(
        "mutation($c: String!, $t: Int!) { revokeInvite(tableId: $t, code: $c) { revoked errors { code } } }",
        joiner,
        c=code,
        t=table,
    )
    assert revoked["revoked"] is True
    bad = gql(
        "mutation($c: String!, $t: Int!) { joinTable(tableId: $t, invite: $c) "
        "{ table { id } errors { code } } }",
        stranger,
        c=code,
        t=table,
    )["data"]["joinTable"]
    assert bad["errors"] == [{"code": "invite_invalid"}]


@pytest.mark.needs_postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("uses", [None, 1])
def test_racing_joins_with_one_code_never_overfill_the_table_nor_overuse_the_code(uses: int | None) -> None:
    """Ten players race with one code for the last open seat (or, with a one-use code, for the
    last two seats): exactly one gets in."""
    host, *racers = _guests(11)
    table = services.table_create(visibility="private", invited=[host.pk], bots={1: "basic"}).table
    assert table is not None
    services.seat_join(table_id=table.pk, player=host, scope=None)
    if uses is None:
        services.bot_add(table_id=table.pk, level="basic", player=host, scope=None)  # one seat left
    code = services.invite_create(table_id=table.pk, player=host, scope=None, uses=uses)["code"]
    barrier = threading.Barrier(len(racers))
    results: list[str] = []
    lock = threading.Lock()

    def racer(player: Player) -> None:
        barrier.wait()
        try:
            services.join_by_invite(code=code, player=player, scope=None)
            outcome = "joined"
        except ServiceError as exc:
            outcome = exc.code
        finally:
            connection.close()
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=racer, args=(p,)) for p in racers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("joined") == 1, results
    table.refresh_from_db()
    seated = [s for s in table.seating if s["player"] is not None or s["bot"] is not None]
    assert len(seated) == (4 if uses is None else 3)
    assert sum(s["player"] in {p.pk for p in racers} for s in table.seating) == 1
    if uses is None:
        assert table.status == Table.Status.PASSING
        assert set(results) - {"joined"} <= {"table_not_open", "table_full"}
    else:
        assert table.status == Table.Status.OPEN
        assert set(results) - {"joined"} == {"invite_invalid"}
        assert Invite.objects.get(table=table).uses_left == 0
