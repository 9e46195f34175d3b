"""Tests of the games app: the write path, and (next) the REST and GraphQL adapters."""
