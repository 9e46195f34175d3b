"""Bot players that fill empty seats, kept apart from games so strategies depend only on the engine."""
