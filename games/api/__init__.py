"""The REST API (/api/v1/): thin DRF views that parse, authenticate and call games.services."""
