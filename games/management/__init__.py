"""Management commands of the games app."""
