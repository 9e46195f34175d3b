"""Bots that apps bring: registered bot endpoints (issue: competition, part 3)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("games", "0010_tournaments")]

    operations = [
        migrations.CreateModel(
            name="BotEndpoint",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(help_text="Seats name it as the level ext:<name>.", max_length=64)),
                ("url", models.CharField(max_length=2000)),
                (
                    "timeout_ms",
                    models.PositiveIntegerField(default=1000, help_text="How long one move may take."),
                ),
                (
                    "secret_salt",
                    models.CharField(help_text="Derives the signing secret (never shown).", max_length=64),
                ),
                (
                    "enabled",
                    models.BooleanField(default=True, help_text="A disabled bot is not called: basic moves."),
                ),
                ("calls", models.PositiveIntegerField(default=0, help_text="Moves it was asked for.")),
                (
                    "answered",
                    models.PositiveIntegerField(default=0, help_text="Moves it answered in time, legally."),
                ),
                ("fallback_timeout", models.PositiveIntegerField(default=0)),
                ("fallback_failed", models.PositiveIntegerField(default=0)),
                ("fallback_bad_answer", models.PositiveIntegerField(default=0)),
                ("fallback_illegal", models.PositiveIntegerField(default=0)),
                ("fallback_disabled", models.PositiveIntegerField(default=0)),
                ("last_error", models.CharField(blank=True, max_length=300)),
                ("last_called_at", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "app",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="bot_endpoints",
                        to="games.app",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("app", "name"), name="bot_endpoint_name_unique")
                ],
            },
        ),
    ]
