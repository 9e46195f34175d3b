"""Error details in five languages: every message translated, the catalogs compiled, every adapter alike."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polib
import pytest
from django.test import Client
from django.utils import translation
from rest_framework.test import APIClient

from games import messages
from games.accounts import app_create
from games.errors import Code, ServiceError
from games.push import texts

pytestmark = pytest.mark.django_db

LOCALE = Path(messages.__file__).resolve().parent / "locale"
TRANSLATED = [code for code in messages.languages() if code != "en"]
# The errors' messages and the push notifications' texts (games/push/texts.py): every one translated.
PUSH_TEXTS = {*texts.TITLES.values(), *texts.BODIES.values()}
ERROR_TEXTS = {template for templates in messages.MESSAGES.values() for template in templates}
TEMPLATES = sorted(ERROR_TEXTS | PUSH_TEXTS)


@pytest.fixture(autouse=True)
def english_after_each_test() -> Iterator[None]:
    """The test client answers in this thread, where LocaleMiddleware leaves the last request's
    language active (a server activates each request's own): later tests start in English."""
    yield
    translation.deactivate()


def client(token: str | None = None, language: str | None = None) -> APIClient:
    c = APIClient()
    if token:
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    if language:
        c.defaults["HTTP_ACCEPT_LANGUAGE"] = language
    return c


def gql(query: str, token: str | None = None, language: str | None = None, **variables: Any) -> Any:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    if language:
        headers["HTTP_ACCEPT_LANGUAGE"] = language
    return Client().post(
        "/graphql/", {"query": query, "variables": variables}, content_type="application/json", **headers
    )


def in_language(language: str, code: str, **fields: Any) -> str:
    """The detail `code` has in `language` with these fields (never the English message)."""
    with translation.override(language):
        return messages.detail(code, "(the English message)", fields)


def guest(name: str) -> str:
    token: str = client().post("/api/v1/guests", {"name": name}, format="json").json()["token"]
    return token


# -- the catalog ----------------------------------------------------------------------------


def test_every_code_has_a_message_and_its_last_message_needs_no_field() -> None:
    assert set(messages.MESSAGES) == {c.value for c in Code}
    for code, templates in messages.MESSAGES.items():
        assert templates and not messages.placeholders(templates[-1]), code


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_message_is_translated_with_the_same_fields(language: str) -> None:
    """The test that fails when a message has no translation (or a translation loses a field)."""
    catalog = {e.msgid: e for e in polib.pofile(str(LOCALE / language / "LC_MESSAGES" / "django.po"))}
    missing = [t for t in TEMPLATES if t not in catalog or not catalog[t].msgstr or catalog[t].fuzzy]
    assert not missing, f"{language}: no translation of {missing} (docs/errors.md, Languages)"
    for template in TEMPLATES:
        assert messages.placeholders(catalog[template].msgstr) == messages.placeholders(template), template
        with translation.override(language):  # through Django, from the compiled catalog
            assert translation.gettext(template) == catalog[template].msgstr, (language, template)
    assert set(catalog) == set(TEMPLATES), "a .po holds a message games/messages.py no longer has"


@pytest.mark.parametrize("language", TRANSLATED)
def test_the_compiled_catalogs_are_their_po_files(language: str) -> None:
    folder = LOCALE / language / "LC_MESSAGES"
    po = {e.msgid: e.msgstr for e in polib.pofile(str(folder / "django.po")).translated_entries()}
    mo = {e.msgid: e.msgstr for e in polib.mofile(str(folder / "django.mo"))}
    assert mo == po, f"{folder}/django.mo is stale: run compilemessages (docs/errors.md, Languages)"


def test_each_language_is_known_to_django() -> None:
    for code in messages.languages():
        assert translation.get_language_info(code)["code"] == code


def test_a_detail_interpolates_only_the_fields_it_has_and_english_keeps_the_message() -> None:
    error = ServiceError("stale_version", "the table is at version 12, not 11", kind="conflict", version=12)
    assert error.body()["detail"] == "the table is at version 12, not 11"
    with translation.override("eu"):
        body = error.body()
    assert body == {
        "code": "stale_version",
        "detail": in_language("eu", "stale_version", version=12),
        "version": 12,
    }
    assert "12" in body["detail"] and body["detail"] != in_language("eu", "stale_version")
    with translation.override("ms"):  # no seat field: the message that needs none
        assert ServiceError("invalid_seat", "no seat 9", kind="malformed").detail == in_language(
            "ms", "invalid_seat"
        )
    assert "en, mi, eu, ms, ky" in in_language("ky", "invalid_language", known=messages.languages())


# -- through the adapters ---------------------------------------------------------------------


def _refused_follow(token_of: dict[int, str], table_id: int, language: str) -> Any:
    """Play the game until a seat following a trick holds the suit led, then play it another
    suit: the refusal (must_follow_suit) in `language`."""
    for _ in range(60):
        for token in token_of.values():
            game = client(token).get(f"/api/v1/tables/{table_id}").json()["game"]
            legal = game["legal_actions"] or {}
            if legal.get("type") == "pass":
                client(token).post(
                    f"/api/v1/tables/{table_id}/actions",
                    {"type": "pass", "cards": legal["from"][: legal["count"]]},
                    format="json",
                )
            if legal.get("type") != "play":
                continue
            led = game["trick"][0]["card"][-1] if game["trick"] else None
            off = [c for c in game["hand"] if c not in legal["cards"] and c[-1] != led]
            if led and all(c[-1] == led for c in legal["cards"]) and off:
                return client(token, language).post(
                    f"/api/v1/tables/{table_id}/actions", {"type": "play", "card": off[0]}, format="json"
                )
            client(token).post(
                f"/api/v1/tables/{table_id}/actions",
                {"type": "play", "card": legal["cards"][0]},
                format="json",
            )
    raise AssertionError("no seat had to follow suit")


def _four_people() -> tuple[dict[int, str], int]:
    tokens = [guest(f"p{i}") for i in range(4)]
    table = client(tokens[0]).post("/api/v1/tables", {"clocks": {"pass": None}}, format="json").json()["id"]
    seats = {}
    for token in tokens:
        seats[client(token).post(f"/api/v1/tables/{table}/join", {}, format="json").json()["your_seat"]] = (
            token
        )
    return seats, table


def test_rest_answers_an_illegal_play_in_the_accept_language_with_the_same_code() -> None:
    seats, table = _four_people()
    r = _refused_follow(seats, table, "eu")
    body = r.json()
    assert r.status_code == 422 and body["code"] == "must_follow_suit"
    assert body["detail"] == in_language("eu", "must_follow_suit", suit=body["suit"])
    assert body["detail"].startswith("paloari jarraitu") and r["Content-Language"] == "eu"
    assert "Accept-Language" in r["Vary"]
    english = client(seats[0]).get(f"/api/v1/tables/{table + 1000}")  # no header: English as before
    assert english.json() == {"code": "not_found", "detail": "no such table"}
    assert english["Content-Language"] == "en"


def test_a_player_language_wins_over_accept_language_and_can_be_cleared() -> None:
    token = guest("Aigerim")
    r = client(token, "eu").patch("/api/v1/me", {"language": "ky"}, format="json")
    assert r.status_code == 200 and r.json()["language"] == "ky" and r["Content-Language"] == "ky"
    assert client(token).get("/api/v1/me").json()["language"] == "ky"
    for header in (None, "eu", "ms;q=1, en;q=0.5"):
        missing = client(token, header).get("/api/v1/tables/999999")
        assert missing.json() == {"code": "not_found", "detail": in_language("ky", "not_found")}
        assert missing["Content-Language"] == "ky"
    cleared = client(token, "mi").patch("/api/v1/me", {"language": ""}, format="json")
    assert cleared.json()["language"] == "" and cleared["Content-Language"] == "mi"
    assert client(token, "ms").get("/api/v1/tables/999999").json()["detail"] == in_language("ms", "not_found")


def test_an_unknown_language_is_refused_and_only_a_player_has_one() -> None:
    token = guest("Zed")
    for value in ("xx", "EU", "en-gb", 5):
        r = client(token).patch("/api/v1/me", {"language": value}, format="json")
        body = r.json()
        assert r.status_code == 400, value
        if value == 5:  # not a string at all: the schema's own refusal
            assert body["code"] == "invalid_input"
            continue
        assert body["code"] == "invalid_language" and body["field"] == "language"
        assert body["known"] == ["en", "mi", "eu", "ms", "ky"]
    assert client(token).get("/api/v1/me").json()["language"] == ""
    r = client(token, "mi").patch("/api/v1/me", {"language": "xx"}, format="json")
    assert r.json()["detail"] == in_language("mi", "invalid_language", known=messages.languages())
    _, key = app_create(name="Studio")
    r = client(key).patch("/api/v1/me", {"language": "mi"}, format="json")
    assert r.status_code == 422 and r.json()["code"] == "player_token_required"
    assert client(key).get("/api/v1/me").json()["language"] is None


def test_graphql_errors_and_set_language_translate_alike() -> None:
    token = guest("Hana")
    play = 'mutation { playCard(tableId: 999999, card: "2C") { errors { code message field } } }'
    error = gql(play, token, "mi").json()["data"]["playCard"]["errors"][0]
    assert error == {"code": "not_found", "message": in_language("mi", "not_found"), "field": None}
    assert gql(play, token).json()["data"]["playCard"]["errors"][0]["message"] == "no such table"
    r = gql("{ nope }", token, "ms")  # an error of the request as a whole
    assert r.status_code == 400 and r["Content-Language"] == "ms"
    assert r.json()["errors"][0] == {
        "message": in_language("ms", "invalid_query"),
        "locations": [{"line": 1, "column": 3}],
        "extensions": {"code": "invalid_query"},
    }
    bad = gql('mutation { setLanguage(language: "xx") { language errors { code message field } } }', token)
    english = "language must be one of en, mi, eu, ms, ky, or empty to follow Accept-Language"
    assert bad.json()["data"]["setLanguage"] == {
        "language": None,
        "errors": [{"code": "invalid_language", "message": english, "field": "language"}],
    }
    done = gql('mutation { setLanguage(language: "ky") { language errors { code } } }', token, "eu")
    assert (
        done.json()["data"]["setLanguage"] == {"language": "ky", "errors": []}
        and done["Content-Language"] == "ky"
    )
    assert gql("{ me { language } }", token).json()["data"]["me"]["language"] == "ky"
    error = gql(play, token, "eu").json()["data"]["playCard"]["errors"][0]
    assert error["message"] == in_language("ky", "not_found")
    _, key = app_create(name="Studio")
    app = gql('mutation { setLanguage(language: "mi") { errors { code } } }', key).json()
    assert app["data"]["setLanguage"]["errors"] == [{"code": "player_token_required"}]


def test_the_http_layer_and_streams_answer_in_the_language_too() -> None:
    token = guest("Iker")
    unknown = Client().get("/api/v1/no-such-path", HTTP_ACCEPT_LANGUAGE="eu")
    assert unknown.json() == {"code": "not_found", "detail": in_language("eu", "not_found")}
    table = client(token).post("/api/v1/tables", {}, format="json").json()["id"]
    stream = Client().get(
        f"/api/v1/tables/{table}/stream?format=xml",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        HTTP_ACCEPT_LANGUAGE="ms",
    )
    assert stream.status_code == 400
    assert stream.json() == {"code": "invalid_format", "detail": in_language("ms", "invalid_format")}
    ticket = Client().get(f"/api/v1/tables/{table}/stream?ticket=bogus", HTTP_ACCEPT_LANGUAGE="ky")
    assert ticket.json() == {"code": "ticket_invalid", "detail": in_language("ky", "ticket_invalid")}


@pytest.mark.django_db(transaction=True)  # a stream reads the database from another thread
def test_a_stream_answers_in_the_player_language_once_it_knows_the_caller() -> None:
    token = guest("Rangi")
    client(token).patch("/api/v1/me", {"language": "mi"}, format="json")
    hidden = Client().get("/api/v1/tables/999999/stream", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert hidden.json() == {"code": "not_found", "detail": in_language("mi", "not_found")}
    assert hidden["Content-Language"] == "mi"
