"""The operator's quotas per app (AppQuota) and the hash-chained audit trail (AuditEntry)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("games", "0016_api_keys"),
    ]

    operations = [
        migrations.CreateModel(
            name="AppQuota",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "streams_per_token",
                    models.PositiveIntegerField(
                        blank=True,
                        null=True,
                        help_text="Open event streams and subscriptions of one key or token.",
                    ),
                ),
                (
                    "streams_per_app",
                    models.PositiveIntegerField(
                        blank=True,
                        null=True,
                        help_text="Open event streams and subscriptions of the app, all together.",
                    ),
                ),
                (
                    "open_tables",
                    models.PositiveIntegerField(blank=True, null=True, help_text="Unfinished tables."),
                ),
                (
                    "tournaments_per_day",
                    models.PositiveIntegerField(
                        blank=True, null=True, help_text="Tournaments created per UTC day."
                    ),
                ),
                (
                    "bots",
                    models.PositiveIntegerField(
                        blank=True, null=True, help_text="Bot endpoints the app brings."
                    ),
                ),
                (
                    "webhooks",
                    models.PositiveIntegerField(blank=True, null=True, help_text="Webhook endpoints."),
                ),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "app",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="quota", to="games.app"
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="AuditEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "app_id",
                    models.BigIntegerField(
                        blank=True, db_index=True, null=True, help_text="The app it concerns."
                    ),
                ),
                ("at", models.DateTimeField()),
                ("actor_kind", models.CharField(max_length=16, help_text="app_key or admin.")),
                (
                    "actor",
                    models.CharField(
                        max_length=150, help_text="The key (its id and label) or the admin user."
                    ),
                ),
                ("request_id", models.CharField(blank=True, max_length=64)),
                (
                    "action",
                    models.CharField(
                        max_length=64, help_text="The operation (createWebhook...) or admin.<verb>."
                    ),
                ),
                (
                    "target",
                    models.CharField(
                        blank=True, max_length=64, help_text="What changed: webhook:3, app:1..."
                    ),
                ),
                (
                    "changes",
                    models.JSONField(default=dict, help_text='{"field": [before, after]}, secrets left out.'),
                ),
                ("prev_hash", models.CharField(max_length=64)),
                ("hash", models.CharField(max_length=64, unique=True)),
            ],
            options={
                "indexes": [models.Index(fields=["app_id", "-id"], name="audit_of_app")],
            },
        ),
    ]
