"""Test suite for the Hearts service."""
