"""Bots that apps bring: registered bot endpoints (issue: competition, part 3)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("games", "0010_tournaments")]

    operations: list[migrations.operations.base.Operation] = []
