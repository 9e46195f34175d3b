"""A table's engine state kept as JSON text, not jsonb (games.models.JSONText: cheaper to write and read)."""

from typing import Any

from django.db import migrations

import games.models


def _to_text(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":  # elsewhere a JSONField is text already
        schema_editor.execute('ALTER TABLE "games_table" ALTER COLUMN "state" TYPE text USING "state"::text')


def _to_jsonb(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            'ALTER TABLE "games_table" ALTER COLUMN "state" TYPE jsonb USING "state"::jsonb'
        )


class Migration(migrations.Migration):
    dependencies = [
        ("games", "0018_table_hints"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="table",
                    name="state",
                    field=games.models.JSONText(blank=True, null=True),
                ),
            ],
            database_operations=[migrations.RunPython(_to_text, _to_jsonb)],
        ),
    ]
