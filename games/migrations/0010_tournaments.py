"""Duplicate tournaments (issue: competition, part 2)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("games", "0009_ratings")]

    operations: list[migrations.operations.base.Operation] = []
