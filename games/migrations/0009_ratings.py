"""Ratings and rating history (issue: competition, part 1)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("games", "0008_spectator_delay")]

    operations: list[migrations.operations.base.Operation] = []
