"""Stored tables, seats, hands, scoresheet rows and the move log that replays them."""
