"""Migration 0016: each app's one key becomes an ApiKey with every scope, so a key in use before the
migration authenticates after it exactly as before; going back restores App.key_hash."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from games import accounts

pytestmark = pytest.mark.django_db(transaction=True)  # the migrations run on the test database itself

BEFORE = [("games", "0015_seat_player_table")]
AFTER = [("games", "0016_api_keys")]


def _migrate(target: list[tuple[str, str]]) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor


def test_an_apps_key_from_before_scopes_keeps_working_with_every_scope() -> None:
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes("games")
    executor = _migrate(BEFORE)
    try:
        OldApp = executor.loader.project_state(BEFORE).apps.get_model("games", "App")
        secret, hashed = accounts.new_secret(accounts.APP_PREFIX)
        old = OldApp.objects.create(name="legacy", key_hash=hashed)
        executor = _migrate(AFTER)
        ApiKey = executor.loader.project_state(AFTER).apps.get_model("games", "ApiKey")
        migrated = ApiKey.objects.get(app_id=old.pk)
        assert (migrated.key_hash, migrated.scopes, migrated.revoked_at) == (hashed, ["admin"], None)
        executor = _migrate(BEFORE)  # and back: the app's key is its key_hash again
        OldApp = executor.loader.project_state(BEFORE).apps.get_model("games", "App")
        assert OldApp.objects.get(pk=old.pk).key_hash == hashed
    finally:
        _migrate(latest)
    principal = accounts.authenticate(secret)
    assert principal is not None and principal.app is not None and principal.app.pk == old.pk
    assert principal.has_scope("webhooks:write") and principal.has_scope("keys:write")
