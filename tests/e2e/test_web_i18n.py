"""The web client's language catalogs (web/i18n/<language>.json): every language has every string
the page uses, with the same placeholders as English, and the page offers exactly these languages
(the ones the service answers error details in)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bots import LEVELS
from games.api.schemas import PASS_DIRECTIONS
from games.extbots import REASONS
from games.models import Table

WEB = Path(__file__).resolve().parents[2] / "web"
LANGUAGES = ["en", "mi", "eu", "ms", "ky"]
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _catalog(lang: str) -> dict[str, str]:
    return json.loads((WEB / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))


def _used_keys() -> set[str]:
    """Every key the page asks for: data-i18n in the page, t("...") and tp("...") in the scripts,
    and the keys the scripts build from the service's own values."""
    html = (WEB / "index.html").read_text(encoding="utf-8")
    keys = set(re.findall(r'data-i18n(?:-label)?="([^"]+)"', html))
    for script in WEB.glob("*.js"):
        code = re.sub(
            r"//[^\n]*|/\*.*?\*/", "", script.read_text(encoding="utf-8"), flags=re.S
        )  # not comments
        keys |= set(re.findall(r'\bt\("([^"]+)"', code))
        for key in re.findall(r'\btp\("([^"]+)"', code):
            keys |= {f"{key}.one", f"{key}.other"}
    keys |= {f"level.{level}" for level in LEVELS}
    keys |= {f"dir.{direction}" for direction in PASS_DIRECTIONS}
    keys |= {f"status.{status}" for status in Table.Status.values}
    keys |= (
        {f"compass.{i}" for i in range(4)} | {f"rank.{r}" for r in "TJQKA"} | {f"suit.{s}" for s in "CDSH"}
    )
    keys |= {f"turn.{kind}" for kind in ("pass", "play", "moon")}
    keys |= {f"log.moonChosen.{choice}" for choice in ("subtract", "add")}
    keys |= {f"log.botFallback.{reason}" for reason in REASONS}  # events.js: bot_fallback's reason
    for part in ("deal", "passing", "follow", "hearts", "points", "moon", "end"):
        keys |= {f"rules.{part}", f"rules.{part}.title"}
    return keys


def test_the_page_offers_the_services_languages() -> None:
    html = (WEB / "index.html").read_text(encoding="utf-8")
    offered = re.findall(r'<option value="(\w+)" lang="\w+"', html)
    assert offered == LANGUAGES
    assert sorted(p.stem for p in (WEB / "i18n").glob("*.json")) == sorted(LANGUAGES)
    script = (WEB / "i18n.js").read_text(encoding="utf-8")
    assert f"export const LANGUAGES = {json.dumps(LANGUAGES)};" in script


def test_english_has_every_string_the_page_uses() -> None:
    missing = sorted(_used_keys() - set(_catalog("en")))
    assert missing == []


@pytest.mark.parametrize("lang", LANGUAGES[1:])
def test_every_string_is_translated(lang: str) -> None:
    english, words = _catalog("en"), _catalog(lang)
    assert sorted(set(english) - set(words)) == [], f"{lang} lacks these strings"
    assert sorted(set(words) - set(english)) == [], f"{lang} has strings English does not"
    for key, text in words.items():
        assert text.strip(), f"{lang}: {key} is empty"
        assert set(PLACEHOLDER.findall(text)) == set(PLACEHOLDER.findall(english[key])), f"{lang}: {key}"
    # Translated, not copied: the sentences differ from English (names and numbers may not).
    same = [k for k, text in words.items() if text == english[k] and re.search(r"[a-z]{4} [a-z]{3}", text)]
    assert same == [], f"{lang}: still in English"
