"""Infrastructure the domain and adapters share: Redis wake-ups, metrics, rate limits, the task queue."""
