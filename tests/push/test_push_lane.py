"""The push lane in one process: a turn recorded with its move is pushed once after the grace, never to a
player watching the table or one who has acted, in the player's language and with no card; invites,
rematch offers and finished games; retries after the provider's Retry-After, dead tokens pruned,
a send whose worker died never repeated; FCM and APNs with an app's own keys (local providers)."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import time_machine
from django.utils import timezone

from games import push, services
from games.accounts import app_create, player_create
from games.engine import state_from_dict
from games.infra import presence
from games.models import Player, PushDevice, PushMessage, Table
from games.push import credentials, devices
from tests.push.providers import FakeAPNs, FakeFCM, FakeWebPush

pytestmark = pytest.mark.django_db(transaction=True)
CARD = re.compile(r"\b(?:10|[2-9TJQKA])[CDHS]\b")  # a card token anywhere in a payload
GRACE = 5.0


@pytest.fixture
def webpush(settings: Any) -> Iterator[FakeWebPush]:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    settings.PUSH_GRACE_SECONDS = GRACE
    with FakeWebPush() as fake:
        yield fake


def guest_with_browser(fake: FakeWebPush, name: str = "Ana", language: str = "") -> tuple[Player, PushDevice]:
    player, _ = player_create(app=None, name=name)
    if language:
        player.language = language
        player.save(update_fields=["language"])
    sub = fake.subscription(server_key=credentials.vapid_public_key(0))
    device, _ = devices.register(player, kind="webpush", token=sub["endpoint"], keys=sub["keys"])
    return player, device


def table_with_bots(player: Player, **kw: Any) -> Table:
    out = services.table_create(
        bots={1: "random", 2: "random", 3: "random"}, creator=player, bot_pace_ms=0, **kw
    )
    assert out.table is not None
    services.seat_join(table_id=out.table.pk, player=player, position=0)
    return Table.objects.get(pk=out.table.pk)


def later(seconds: float) -> dt.datetime:
    return timezone.now() + dt.timedelta(seconds=seconds)


def send_due(at: dt.datetime) -> list[str]:
    """Every message due at `at`, attempted there: their outcomes."""
    ids = [str(u) for u in push.sending.due(at).values_list("uuid", flat=True)]
    return [push.attempt(i, now=at) for i in ids]


def my_move(table: Table, seat: int = 0) -> dict[str, Any]:
    state = state_from_dict(Table.objects.get(pk=table.pk).state)
    return state.legal_actions(seat)[0].to_dict()


def payloads(fake: FakeWebPush) -> list[dict[str, Any]]:
    return [r["payload"] for r in fake.received]


def test_a_turn_is_pushed_once_after_the_grace_in_the_players_language_with_no_card(
    webpush: FakeWebPush,
) -> None:
    player, _ = guest_with_browser(webpush, language="mi")
    table = table_with_bots(player)
    messages = PushMessage.objects.filter(table=table, kind="turn")
    assert messages.count() == 1  # the pass: this seat's first turn
    assert send_due(timezone.now()) == []  # within the grace: not due
    assert send_due(later(GRACE + 0.5)) == ["sent"]
    assert send_due(later(GRACE + 1)) == []  # sent once: nothing left
    [payload] = payloads(webpush)
    assert payload["title"] == f"Ko tō wā tēnei ki te tēpu {table.pk}"  # Māori, the player's language
    assert payload["tag"] == f"table-{table.pk}"
    assert payload["data"] == {"kind": "turn", "table": str(table.pk), "message": str(messages.get().uuid)}
    assert not CARD.search(json.dumps(payload)), payload


def test_each_turn_is_one_message_and_the_seat_that_acted_in_the_grace_gets_none(
    webpush: FakeWebPush,
) -> None:
    player, _ = guest_with_browser(webpush)
    table = table_with_bots(player)
    for _ in range(5):  # the pass, then four cards: each acted on within the grace
        services.action_submit(table_id=table.pk, action=my_move(table), player=player)
    turns = PushMessage.objects.filter(table=table, kind="turn")
    assert turns.count() == 6  # one per turn: the pass and five plays, the last still to act
    assert len(set(turns.values_list("key", flat=True))) == 6
    assert sorted(send_due(later(GRACE + 0.5))) == ["cancelled"] * 5 + ["sent"]
    assert set(turns.exclude(status="sent").values_list("last_error", flat=True)) == {"acted"}
    assert len(webpush.received) == 1


def test_a_player_watching_the_table_is_not_pushed(webpush: FakeWebPush) -> None:
    player, _ = guest_with_browser(webpush)
    table = table_with_bots(player)
    presence.opened([(table.pk, player.pk, "stream-1")])
    try:
        assert send_due(later(GRACE + 0.5)) == ["cancelled"]
        assert PushMessage.objects.get(table=table).last_error == "watching"
    finally:
        presence.closed([(table.pk, player.pk, "stream-1")])
    assert webpush.received == []


def test_the_providers_retry_after_is_honoured_and_a_dead_subscription_removes_the_device(
    webpush: FakeWebPush,
) -> None:
    player, device = guest_with_browser(webpush)
    table = table_with_bots(player)
    webpush.fail_next(429, retry_after=30)
    first = later(GRACE + 0.5)
    assert send_due(first) == ["retry"]
    row = PushMessage.objects.get(table=table)
    assert row.next_attempt_at is not None
    assert 29 <= (row.next_attempt_at - first).total_seconds() <= 32
    assert send_due(first + dt.timedelta(seconds=10)) == []  # not before the provider said
    assert send_due(first + dt.timedelta(seconds=32)) == ["sent"]
    assert len(webpush.received) == 1

    services.action_submit(table_id=table.pk, action=my_move(table), player=player)
    webpush.gone(device.token)
    # the pass is made; the next turn (a card) meets a subscription the browser dropped
    with time_machine.travel(later(GRACE + 60)):
        assert send_due(timezone.now()) == ["dead"]
    assert not PushDevice.objects.filter(pk=device.pk).exists()


def test_a_send_whose_worker_died_after_its_claim_is_never_repeated(webpush: FakeWebPush) -> None:
    player, _ = guest_with_browser(webpush)
    table = table_with_bots(player)
    row = PushMessage.objects.get(table=table)
    died = later(GRACE + 0.5)
    # What a killed worker leaves: its claim and lease (the request may have reached the provider).
    PushMessage.objects.filter(pk=row.pk).update(
        claim="00000000-0000-0000-0000-000000000001",
        attempts=1,
        next_attempt_at=died + dt.timedelta(seconds=40),
    )
    assert send_due(died + dt.timedelta(seconds=5)) == []  # the lease holds: a duplicate task waits
    assert send_due(died + dt.timedelta(seconds=41)) == ["in_doubt"]
    assert send_due(died + dt.timedelta(seconds=600)) == []
    assert PushMessage.objects.get(pk=row.pk).status == "in_doubt"
    assert webpush.received == []


def test_a_duplicate_task_finds_the_message_sent(webpush: FakeWebPush) -> None:
    player, _ = guest_with_browser(webpush)
    table = table_with_bots(player)
    message = str(PushMessage.objects.get(table=table).uuid)
    at = later(GRACE + 0.5)
    assert [push.attempt(message, now=at) for _ in range(3)] == ["sent", "skipped", "skipped"]
    assert len(webpush.received) == 1


def play_out(table: Table, people: dict[int, Player]) -> None:
    """Play the game out, each person acting when it is their turn (the bots act in between)."""
    for _ in range(2000):
        current = Table.objects.get(pk=table.pk)
        if current.status == Table.Status.FINISHED:
            break
        state = state_from_dict(current.state)
        for seat in state.to_act():
            person = people.get(seat)
            if person is not None:
                services.action_submit(
                    table_id=table.pk, action=state.legal_actions(seat)[0].to_dict(), player=person
                )
                break
    assert Table.objects.get(pk=table.pk).status == Table.Status.FINISHED


def test_the_end_of_a_game_is_not_pushed_to_a_player_who_watched_it(webpush: FakeWebPush) -> None:
    """A finished table's streams end once they have delivered its last events, so whether a player
    watched the end is decided when the end is recorded; one who starts watching before the send
    is spared too."""
    host, _ = guest_with_browser(webpush, name="Host")
    guest, _ = guest_with_browser(webpush, name="Guest")
    other, _ = guest_with_browser(webpush, name="Other")
    out = services.table_create(creator=host, bots={3: "random"}, bot_pace_ms=0)
    table = out.table
    assert table is not None
    for position, person in enumerate([host, guest, other]):
        services.seat_join(table_id=table.pk, player=person, position=position)
    presence.opened([(table.pk, guest.pk, "guest-stream")])  # the guest watches to the end
    play_out(table, {0: host, 1: guest, 2: other})
    presence.closed([(table.pk, guest.pk, "guest-stream")])  # ... and the stream ends with the game
    finished = PushMessage.objects.filter(table=table, kind="finished")
    assert sorted(finished.values_list("device__player", flat=True)) == sorted([host.pk, other.pk])
    presence.opened([(table.pk, other.pk, "other-stream")])  # the other looks before the send
    try:
        attempts = {m.device.player_id: push.attempt(str(m.uuid), now=later(1)) for m in finished}
    finally:
        presence.closed([(table.pk, other.pk, "other-stream")])
    assert attempts == {host.pk: "sent", other.pk: "cancelled"}
    assert [p["data"]["kind"] for p in payloads(webpush)].count("finished") == 1


def test_invites_rematch_offers_and_the_end_of_a_game_are_pushed(webpush: FakeWebPush) -> None:
    host, _ = guest_with_browser(webpush, name="Host")
    guest, _ = guest_with_browser(webpush, name="Guest")
    out = services.table_create(
        creator=host, invited=[guest.pk], visibility="private", bots={2: "random", 3: "random"}, bot_pace_ms=0
    )
    table = out.table
    assert table is not None
    assert list(PushMessage.objects.filter(table=table).values_list("kind", "device__player")) == [
        ("invite", guest.pk)
    ]
    assert send_due(later(1)) == ["sent"]
    assert payloads(webpush)[-1]["body"] == f"You are invited to play at table {table.pk}."

    services.seat_join(table_id=table.pk, player=host, position=0)
    services.seat_join(table_id=table.pk, player=guest, position=1)
    play_out(table, {0: host, 1: guest})
    finished = PushMessage.objects.filter(table=table, kind="finished")
    assert sorted(finished.values_list("device__player", flat=True)) == sorted([host.pk, guest.pk])

    services.rematch(table_id=table.pk, player=host)
    [offer] = PushMessage.objects.filter(table=table, kind="rematch")
    assert offer.device.player_id == guest.pk  # not the player who asked
    webpush.received.clear()
    outcomes = send_due(later(GRACE + 1))
    assert outcomes.count("sent") == 3  # the two game-over notices and the offer
    texts = {(p["data"]["kind"], p["body"]) for p in payloads(webpush)}
    assert ("rematch", f"Host wants a rematch at table {table.pk}.") in texts
    assert not CARD.search(json.dumps(payloads(webpush)))


def test_fcm_and_apns_with_the_apps_own_keys(settings: Any) -> None:
    settings.PUSH_GRACE_SECONDS = 0
    app, _ = app_create(name="phones")
    player, _ = player_create(app=app, name="Mo")
    with FakeFCM() as fcm, FakeAPNs() as apns:
        for name, value in {**fcm.settings, **apns.settings}.items():
            setattr(settings, name, value)
        credentials.set_fcm(app, fcm.service_account)
        key = apns.key
        credentials.set_apns(
            app,
            key_id=key["key_id"],
            team_id=key["team_id"],
            topic=key["topic"],
            sandbox=True,
            private_key=key["private_key"],
        )
        android = fcm.registration_token()
        iphone = apns.device_token()
        devices.register(player, kind="fcm", token=android)
        devices.register(player, kind="apns", token=iphone)
        out = services.table_create(app=app, bots={1: "random", 2: "random", 3: "random"}, bot_pace_ms=0)
        assert out.table is not None
        services.seat_join(table_id=out.table.pk, player=player, position=0)
        assert sorted(send_due(later(1))) == ["sent", "sent"]
        assert fcm.problems == [] and apns.problems == []
        [message] = fcm.received
        assert message["token"] == android
        assert message["android"]["collapse_key"] == f"table-{out.table.pk}"
        [note] = apns.received
        assert note["headers"]["apns-collapse-id"] == f"table-{out.table.pk}"
        assert not CARD.search(json.dumps([fcm.received, apns.received], default=str))
        # the phone uninstalled the app: APNs answers 410 and the device is gone
        apns.dead_tokens.add(iphone)
        services.action_submit(table_id=out.table.pk, action=my_move(out.table), player=player)
        with time_machine.travel(later(5)):
            assert sorted(send_due(timezone.now())) == ["dead", "sent"]
        assert list(PushDevice.objects.filter(player=player).values_list("kind", flat=True)) == ["fcm"]


def test_an_app_without_keys_for_a_provider_fails_the_message_and_says_why(settings: Any) -> None:
    settings.PUSH_GRACE_SECONDS = 0
    app, _ = app_create(name="no keys")
    player, _ = player_create(app=app, name="Lu")
    devices.register(player, kind="fcm", token=FakeFCM.registration_token())
    table = table_with_bots(player)
    assert send_due(later(1)) == ["failed"]
    assert PushMessage.objects.get(table=table).last_error == "no_credentials"


def test_while_redis_cannot_say_who_watches_a_push_waits_instead_of_guessing(
    webpush: FakeWebPush, monkeypatch: pytest.MonkeyPatch
) -> None:
    player, _ = guest_with_browser(webpush)
    table = table_with_bots(player)
    at = later(GRACE + 0.5)
    monkeypatch.setattr(presence, "watching", lambda table_id, player_id: None)  # Redis restarting
    assert send_due(at) == ["retry"]
    row = PushMessage.objects.get(table=table)
    assert (
        row.status == "pending"
        and row.attempts == 0
        and row.next_attempt_at == at + dt.timedelta(seconds=0.5)
    )
    monkeypatch.setattr(presence, "watching", lambda table_id, player_id: False)  # back, not watching
    assert send_due(at + dt.timedelta(seconds=0.5)) == ["sent"]
    assert len(webpush.received) == 1
