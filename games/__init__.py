"""Hearts tables: the rules engine, the stored games and the APIs through which they are played."""
