"""Scoped API keys (issue 38): several keys an app, each with scopes; player tokens may expire.

Each app's one key (App.key_hash) becomes an ApiKey with the `admin` scope (every scope, present and
future), so every key in use keeps working; then App.key_hash goes. Backwards, an app's oldest live
key becomes its key_hash again.
"""

import django.db.models.deletion
from django.db import migrations, models


def keys_of_apps(apps, schema_editor):  # type: ignore[no-untyped-def]
    App = apps.get_model("games", "App")
    ApiKey = apps.get_model("games", "ApiKey")
    ApiKey.objects.bulk_create(
        [
            ApiKey(app_id=app.pk, name="first key", prefix="hk_app_", key_hash=app.key_hash, scopes=["admin"])
            for app in App.objects.order_by("pk").only("pk", "key_hash").iterator()
        ],
        batch_size=500,
    )


def apps_of_keys(apps, schema_editor):  # type: ignore[no-untyped-def]
    App = apps.get_model("games", "App")
    ApiKey = apps.get_model("games", "ApiKey")
    for app in App.objects.order_by("pk").iterator():
        key = ApiKey.objects.filter(app_id=app.pk, revoked_at__isnull=True).order_by("pk").first()
        app.key_hash = key.key_hash if key is not None else f"revoked-{app.pk}"
        app.save(update_fields=["key_hash"])


class Migration(migrations.Migration):
    dependencies = [
        ("games", "0015_seat_player_table"),
    ]

    operations = [
        migrations.CreateModel(
            name="ApiKey",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "name",
                    models.CharField(blank=True, help_text="The app's label for the key.", max_length=64),
                ),
                (
                    "prefix",
                    models.CharField(help_text="The key's first characters, to recognise it.", max_length=16),
                ),
                ("key_hash", models.CharField(max_length=64, unique=True)),
                (
                    "scopes",
                    models.JSONField(default=list, help_text="The scopes it grants (games.accounts.Scope)."),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("expires_at", models.DateTimeField(blank=True, null=True)),
                ("revoked_at", models.DateTimeField(blank=True, null=True)),
                (
                    "last_used_at",
                    models.DateTimeField(
                        blank=True,
                        help_text="Written at most once a minute (games.accounts.USED_EVERY).",
                        null=True,
                    ),
                ),
                (
                    "app",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="api_keys", to="games.app"
                    ),
                ),
                (
                    "replaced_by",
                    models.ForeignKey(
                        blank=True,
                        help_text="The key a rotation made: this one works until its expires_at (the overlap).",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="replaces",
                        to="games.apikey",
                    ),
                ),
            ],
        ),
        migrations.AddField(
            model_name="playertoken",
            name="expires_at",
            field=models.DateTimeField(
                blank=True, help_text="Refused from then on (token_expired); null: never expires.", null=True
            ),
        ),
        # Nullable first, so that going backwards re-adds the column empty before it is filled.
        migrations.AlterField(
            model_name="app", name="key_hash", field=models.CharField(max_length=64, null=True, unique=True)
        ),
        migrations.RunPython(keys_of_apps, apps_of_keys),
        migrations.RemoveField(model_name="app", name="key_hash"),
    ]
