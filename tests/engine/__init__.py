"""Tests of the Hearts rules engine (games.engine): rules, errors and properties."""
