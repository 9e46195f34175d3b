"""The web client cannot miss an event: its list of event types (web/event-types.js) is generated
from the service's OpenAPI document, and its handler table (web/events.js) has an entry for every
type in it, each one shown on the page: a line of the event log in each of the page's languages, or
a named part of the page. No browser here (tests/e2e/test_web_client.py shows the lines in one)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from games.graphql.events import EVENTS as GRAPHQL_EVENTS
from games.graphql.subscriptions import STREAM_TYPES
from games.management.commands import web_event_types
from tests.conftest import skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "web"
LANGUAGES = ["en", "mi", "eu", "ms", "ky"]


def _document() -> dict[str, Any]:
    """The OpenAPI document as the service serves it."""
    return json.loads(Client().get("/api/schema/?format=json").content)


def _listed(name: str) -> list[str]:
    """One array of web/event-types.js (`export const NAME = [...]`, as JSON)."""
    text = (WEB / "event-types.js").read_text(encoding="utf-8")
    found = re.search(rf"^export const {name} = (\[.*?\]);$", text, flags=re.M | re.S)
    assert found, name
    return list(json.loads(found.group(1)))


def _handlers() -> dict[str, str]:
    """web/events.js's HANDLERS, read without Node: each type and the text of its entry (the keys
    are the object's lines indented by two spaces)."""
    text = (WEB / "events.js").read_text(encoding="utf-8")
    table = re.search(r"^export const HANDLERS = \{\n(.*?)^\};$", text, flags=re.M | re.S)
    assert table, "events.js exports HANDLERS as an object literal"
    parts = re.split(r"^  (\w+): ", table.group(1), flags=re.M)[1:]
    return dict(zip(parts[::2], parts[1::2], strict=True))


def test_the_event_types_file_is_the_contracts() -> None:
    """Regenerate with: python manage.py web_event_types"""
    assert (WEB / "event-types.js").read_text(encoding="utf-8") == web_event_types.render(_document())


def test_the_contract_and_graphql_name_the_same_event_types() -> None:
    logged, stream_only = _listed("LOGGED_TYPES"), _listed("STREAM_ONLY_TYPES")
    assert set(logged) == set(GRAPHQL_EVENTS)
    assert set(logged) | set(stream_only) == set(STREAM_TYPES)
    assert stream_only == ["state", "tables", "your_turn"]


def test_the_web_client_handles_every_event_type_the_service_can_send() -> None:
    types = _listed("LOGGED_TYPES") + _listed("STREAM_ONLY_TYPES")
    handlers = _handlers()
    assert sorted(set(types) - set(handlers)) == [], "event types the web client does not handle"
    assert sorted(set(handlers) - set(types)) == [], "handlers of types the service never sends"
    # Each is shown: a log line, or the id of the part of the page that tells it.
    ids = set(re.findall(r'\bid="([^"]+)"', (WEB / "index.html").read_text(encoding="utf-8")))
    for kind, entry in handlers.items():
        shown = re.findall(r'\bshown: "([^"]+)"', entry)
        assert "log:" in entry or shown, f"{kind}: neither a log line nor a part of the page"
        assert set(shown) <= ids, f"{kind}: no element {shown} in index.html"
    # app.js keeps no list of its own: it listens for the generated types and asks the table.
    app = (WEB / "app.js").read_text(encoding="utf-8")
    assert 'import { EVENT_TYPES } from "./event-types.js";' in app
    assert 'import { HANDLERS } from "./events.js";' in app
    assert "for (const type of EVENT_TYPES) source.addEventListener(type, handle);" in app
    assert not [k for k in types if f'"{k}"' in app and k not in ("state", "keepalive")]
    assert "switch (event.type)" not in app


def test_the_event_types_command_checks_and_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.management import call_command
    from django.core.management.base import CommandError

    target = tmp_path / "event-types.js"
    monkeypatch.setattr(web_event_types, "TARGET", target)
    with pytest.raises(CommandError, match="stale"):
        call_command("web_event_types", "--check")
    call_command("web_event_types")
    assert target.read_text(encoding="utf-8") == (WEB / "event-types.js").read_text(encoding="utf-8")
    call_command("web_event_types", "--check")


# What the page shows for each event: events.js under Node, with the page's catalogs and words.
RUNNER = r"""
import { readFileSync } from "node:fs";
import { HANDLERS } from "./events.js";
import { EVENT_TYPES } from "./event-types.js";

const { examples, catalogs } = JSON.parse(readFileSync(0, "utf8"));
const out = {};
for (const [lang, words] of Object.entries(catalogs)) {
  const plural = new Intl.PluralRules(lang === "mi" ? "en" : lang); // as i18n.js
  const number = new Intl.NumberFormat(lang, { maximumFractionDigits: 1 });
  const t = (key, params = {}) =>
    key in words
      ? words[key].replace(/\{(\w+)\}/g, (m, name) => (name in params ? String(params[name]) : m))
      : `MISSING ${key}`;
  const view = {
    t,
    tp: (key, n, params = {}) => {
      const form = `${key}.${plural.select(n)}`;
      return t(form in words ? form : `${key}.other`, { n, ...params });
    },
    who: (seat) => (seat === 0 ? t("you") : t("seat.n", { n: seat + 1 })),
    mine: (seat) => seat === 0,
    card: (card) => card,
    cards: (cards) => cards.join(" "),
    level: (level) => t(`level.${level}`),
    number: (x) => number.format(x),
  };
  out[lang] = {};
  for (const type of EVENT_TYPES) {
    const handler = HANDLERS[type];
    const calls = [];
    const page = new Proxy({}, { get: (_, name) => (...args) => calls.push(name) });
    const event = examples[type];
    handler.apply?.(event, page);
    const line = handler.log ? handler.log(event, view) : null;
    out[lang][type] = { line, calls, carriesTable: Boolean(handler.carriesTable) };
  }
}
process.stdout.write(JSON.stringify(out));
"""


def _run_in_node(tmp_path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    node = shutil.which("node")
    if node is None:
        skip_or_fail("node is not installed (the web client's event handlers are run with Node.js)")
    assert node is not None
    for name in ("events.js", "event-types.js"):
        shutil.copy(WEB / name, tmp_path / name)
    (tmp_path / "package.json").write_text('{"type": "module"}')  # web/'s .js files are ES modules
    (tmp_path / "run.mjs").write_text(RUNNER)
    schemas = _document()["components"]["schemas"]
    types = _listed("LOGGED_TYPES") + _listed("STREAM_ONLY_TYPES")
    given = {
        "examples": {k: schemas[f"Event_{k}"]["example"] for k in types},
        "catalogs": {
            lang: json.loads((WEB / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
            for lang in LANGUAGES
        },
    }
    done = subprocess.run(
        [node, "run.mjs"], cwd=tmp_path, input=json.dumps(given), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_every_event_shows_on_the_page_in_every_language(tmp_path: Path) -> None:
    """Each handler, run on the contract's example of its type (OpenAPI `Event_<type>.example`)."""
    shown = _run_in_node(tmp_path)
    handlers = _handlers()
    for lang in LANGUAGES:
        for kind, result in shown[lang].items():
            line = result["line"]
            if "log:" in handlers[kind]:
                assert line, f"{lang}: {kind} writes no line for its example"
                unfilled = re.search(r"MISSING|\{\w+\}|undefined|NaN", line)
                assert not unfilled, (lang, kind, line)
            else:
                assert line is None
    en = shown["en"]
    # The five types the page used to drop, as an English reader sees them.
    assert en["bot_fallback"]["line"] == "Seat 2: the bot was too slow; the basic bot played for it."
    assert en["ratings_changed"]["line"] == "New ratings: You 26.2 ± 8.2."
    assert en["tournament_table"]["line"] == "Tournament 3: this table plays deal 1, rotation 2."
    assert en["tournament_progress"]["line"] == "Tournament 3: 5 of 8 tables have finished."
    assert en["tournament_next_table"]["line"] == "Tournament 3: your next table is table 44."
    assert shown["eu"]["ratings_changed"]["line"] == "Balorazio berriak: Zu 26,2 ± 8,2."
    # What the events change on the page besides the log.
    assert en["state"] == {"line": None, "calls": ["render"], "carriesTable": True}
    assert en["tables"] == {"line": None, "calls": ["render"], "carriesTable": True}
    assert en["hand_revealed"]["calls"] == ["keepRecord"]
    assert en["table_finished"]["calls"] == ["finish"]
    assert [k for k, r in en.items() if r["carriesTable"]] == ["state", "tables"]
