"""Live events: the fan-out hub and the per-viewer event generators shared by streams and subscriptions."""
