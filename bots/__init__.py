"""Bot players that fill empty seats, kept apart from games so strategies depend only on the engine."""

# The levels a seat can be given, weakest first (see the bots issue for what each one does).
LEVELS = ("random", "basic", "strong", "expert")
