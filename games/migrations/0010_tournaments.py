"""Duplicate tournaments (issue: competition, part 2): the Tournament and its tables' links."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("games", "0009_ratings")]

    operations = [
        migrations.AddField(
            model_name="table",
            name="bot_rng",
            field=models.JSONField(
                blank=True,
                help_text="Tournament: the random stream its bots share (Random.getstate), so that they decide as bots.tournament's do.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="table",
            name="deal_set",
            field=models.PositiveIntegerField(blank=True, help_text="Tournament: the deal set.", null=True),
        ),
        migrations.AddField(
            model_name="table",
            name="rotation",
            field=models.PositiveSmallIntegerField(
                blank=True, help_text="Tournament: the rotation of the entrants through the seats.", null=True
            ),
        ),
        migrations.CreateModel(
            name="Tournament",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(blank=True, max_length=100)),
                (
                    "entrants",
                    models.JSONField(
                        help_text='[{"player": id or null, "bot": level or null, "name": str}].'
                    ),
                ),
                (
                    "options",
                    models.JSONField(
                        help_text="Engine options of its tables (without first_hand and hands)."
                    ),
                ),
                (
                    "clocks",
                    models.JSONField(default=dict, help_text="Turn clocks of its tables with people."),
                ),
                ("deal_sets", models.PositiveIntegerField()),
                (
                    "seed",
                    models.CharField(
                        help_text="The seed its deal sets derive from: secret until it is finished.",
                        max_length=128,
                    ),
                ),
                (
                    "seed_given",
                    models.BooleanField(
                        default=False,
                        help_text="The app chose the seed (reproducible, as bots.tournament's --seed); otherwise each deal set's seed is a MAC of the secret one, so a finished table reveals no other deal set.",
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[("running", "Running"), ("finished", "Finished")],
                        db_index=True,
                        default="running",
                        max_length=16,
                    ),
                ),
                ("tables_total", models.PositiveIntegerField(default=0)),
                ("tables_finished", models.PositiveIntegerField(default=0)),
                (
                    "standings",
                    models.JSONField(blank=True, help_text="The final standings, once finished.", null=True),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                (
                    "app",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="tournaments",
                        to="games.app",
                    ),
                ),
            ],
        ),
        migrations.AddField(
            model_name="table",
            name="tournament",
            field=models.ForeignKey(
                blank=True,
                help_text="The duplicate tournament this table plays a deal set of (docs/tournaments.md).",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="tables",
                to="games.tournament",
            ),
        ),
    ]
