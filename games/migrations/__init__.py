"""Schema history of the games app."""
