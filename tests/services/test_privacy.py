"""games.privacy classifies every stored field once: a field a new model or migration adds fails here
until someone decides whether it is personal and what erasure and the export do with it."""

from __future__ import annotations

from django.apps import apps

from games import privacy
from games.privacy import FIELDS, Erasure, Kind


def _labels() -> set[str]:
    return {
        f"{model._meta.app_label}.{model.__name__}.{field.name}"
        for model in apps.get_models()
        for field in model._meta.concrete_fields
    }


def test_every_stored_field_of_every_installed_model_is_classified_and_none_is_stale() -> None:
    stored = _labels()
    unclassified = sorted(stored - set(FIELDS))
    assert not unclassified, f"classify these fields in games/privacy.py: {unclassified}"
    stale = sorted(set(FIELDS) - stored)
    assert not stale, f"games/privacy.py classifies fields no model has: {stale}"


def test_every_personal_field_and_every_copy_of_a_name_is_gone_after_erasure() -> None:
    kept = {
        label
        for label, f in FIELDS.items()
        if f.kind in (Kind.PERSONAL, Kind.NAMES) and f.erasure in (Erasure.KEEP, Erasure.NOT_A_PLAYER)
    }
    assert not kept, f"say how erasure treats these fields: {sorted(kept)}"
    unexported = [label for label in privacy.of_kind(Kind.PERSONAL) if not FIELDS[label].exported]
    assert not unexported, f"say where the player's export holds these fields: {unexported}"
    assert privacy.field("games.Player.name").erasure is Erasure.PSEUDONYM
    assert all(FIELDS[label].erasure is Erasure.SCRUB for label in privacy.of_kind(Kind.NAMES))


def test_the_pseudonym_is_stable_per_player_and_tells_nothing_of_them() -> None:
    assert privacy.pseudonym(7) == privacy.pseudonym(7)
    assert privacy.pseudonym(7) != privacy.pseudonym(8)
    assert privacy.pseudonym(7).startswith("Erased-")
