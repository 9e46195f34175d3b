"""Django settings read from the environment, so one machine needs nothing set and production sets URLs."""

from pathlib import Path

import dj_database_url
import django_stubs_ext
from django.conf.locale import LANG_INFO
from django.core.exceptions import ImproperlyConfigured

from hearts_service.env import env_bool, env_float, env_int, env_list, env_str

# Django's generic classes (ModelAdmin, QuerySet...) take their type parameters at run time too, as
# their stubs do: `class TableAdmin(admin.ModelAdmin[Table])` (games/admin.py).
django_stubs_ext.monkeypatch()

# Every value below that comes from the environment goes through hearts_service/env.py: a flag,
# number or word that does not parse stops start-up with ImproperlyConfigured naming the variable.
# Seconds that must be positive are at least this (a poll or timeout of 0 would spin or never wait).
_POSITIVE = 0.01

BASE_DIR = Path(__file__).resolve().parent.parent

# HEARTS_ENV: "development" (the default: a local run, with a development signing key) or
# "production" (the image sets it: a real SECRET_KEY is required and the security settings are on).
HEARTS_ENV = env_str("HEARTS_ENV", "development", choices=("development", "production"), lower=True)
PRODUCTION = HEARTS_ENV == "production"

# Django's debug pages (tracebacks, settings) are off in every mode unless a developer asks for
# them with DEBUG=true; they are refused in production.
DEBUG = env_bool("DEBUG", default=False)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("DEBUG must stay off when HEARTS_ENV is production.")

_DEV_SECRET_KEY = "django-insecure-dev-only-key-never-use-in-production"
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("SECRET_KEY must be set when HEARTS_ENV is production.")
    SECRET_KEY = _DEV_SECRET_KEY

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", default="localhost,127.0.0.1,[::1],testserver")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "corsheaders",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc assets, pinned and served locally (no CDN)
    "graphene_django",
    "games",
    "bots",
]

MIDDLEWARE = [
    "hearts_service.probes.ProbeHost",  # /healthz, /readyz, /metrics: any Host (a scrape by address)
    "hearts_service.observability.RequestContextMiddleware",  # request id, log context, access log, latency
    "django.middleware.locale.LocaleMiddleware",  # the answer's language from Accept-Language (LANGUAGES)
    "django.middleware.security.SecurityMiddleware",
    "hearts_service.limits.BodySizeLimit",  # 413 before anything reads an oversized body
    "hearts_service.limits.RateLimitHeaders",  # RateLimit-Policy and RateLimit on counted answers
    "corsheaders.middleware.CorsMiddleware",  # browser clients on other origins (CORS_* below)
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "hearts_service.outages.DatabaseUnavailable",  # a database that does not answer: 503, not 500
]

ROOT_URLCONF = "hearts_service.urls"
WSGI_APPLICATION = "hearts_service.wsgi.application"
ASGI_APPLICATION = "hearts_service.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

_DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
try:
    _database = dj_database_url.parse(_DATABASE_URL, conn_max_age=env_int("CONN_MAX_AGE", 0, minimum=0))
except ValueError as exc:  # an unknown scheme; the URL itself is not repeated: it holds a password
    raise ImproperlyConfigured(f"Environment variable DATABASE_URL is not valid: {exc}") from None
DATABASES = {"default": _database}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded run writes from request threads and the sweeping thread at once: take the write
    # lock at BEGIN (no read-to-write upgrade that fails at once with "database is locked"), wait
    # for it, and let readers run beside the writer (WAL).
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL;",
    }

# ---------------------------------------------------------------------------------------------------
# Production security (deploy/; `HEARTS_ENV=production ... manage.py check --deploy --fail-level WARNING`
# passes). Each flag is on in production and off in development; the env var of the same name overrides it.
# Behind a proxy that terminates TLS, keep SECURE_SSL_REDIRECT on: the proxy's X-Forwarded-Proto marks
# requests secure (SECURE_PROXY_SSL_HEADER; the proxy must set or strip that header), and the probes
# are exempt, so kubelet and compose health checks work over plain HTTP inside the cluster (and so is
# /metrics, scraped pod by pod; it guards itself: games.infra.metrics._allowed).
_SECURE = PRODUCTION
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=_SECURE)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("SECURE_PROXY_SSL_HEADER", default=_SECURE) else None
)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000 if _SECURE else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=_SECURE)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=_SECURE)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=_SECURE)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", default=_SECURE)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# A database that does not answer makes /readyz (and every request) fail in seconds, not hang.
# Django's psycopg pool bounds each process's connections (DB_POOL_MAX_SIZE; a request waits at
# most DB_POOL_TIMEOUT seconds for one, then gets a 503), and a connection goes back to the pool
# at the end of each request, task or stream read. DB_POOL=false: one connection per thread,
# kept CONN_MAX_AGE seconds (behind PgBouncer in transaction mode, for example). After a database
# restart the first request or task to fail tests the pool's idle connections and replaces the
# broken ones (hearts_service.outages.renew_connections; no check per checkout: that would cost a
# round trip on every request). These are PostgreSQL's alone, but read (and so checked) on every
# database.
_DB_CONNECT_TIMEOUT = env_int("DB_CONNECT_TIMEOUT", 5, minimum=1)
_DB_POOL = env_bool("DB_POOL", default=True)
_DB_POOL_MIN_SIZE = env_int("DB_POOL_MIN_SIZE", 2, minimum=0)
_DB_POOL_MAX_SIZE = env_int("DB_POOL_MAX_SIZE", 10, minimum=1)
_DB_POOL_TIMEOUT = env_float("DB_POOL_TIMEOUT", 5.0, minimum=_POSITIVE)
if _DB_POOL_MAX_SIZE < _DB_POOL_MIN_SIZE:
    raise ImproperlyConfigured(
        f"DB_POOL_MAX_SIZE={_DB_POOL_MAX_SIZE} is below DB_POOL_MIN_SIZE={_DB_POOL_MIN_SIZE}: "
        "the pool could never open."
    )
# Parameters bound by the server (psycopg's server-side binding): a statement's text is the same
# for every call, so psycopg prepares the ones a connection runs again and again (its
# prepare_threshold, 5 runs) and PostgreSQL parses and plans each of them once per connection, not
# on every action; the values are not quoted into the text in Python either (issue 37,
# bench/README.md). DB_PREPARED_STATEMENTS=false keeps the binding but prepares nothing: behind
# PgBouncer in transaction mode without max_prepared_statements.
_DB_SERVER_SIDE_BINDING = env_bool("DB_SERVER_SIDE_BINDING", default=True)
_DB_PREPARED_STATEMENTS = env_bool("DB_PREPARED_STATEMENTS", default=True)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    _pg_options = DATABASES["default"].setdefault("OPTIONS", {})
    _pg_options.setdefault("connect_timeout", _DB_CONNECT_TIMEOUT)
    _pg_options.setdefault("server_side_binding", _DB_SERVER_SIDE_BINDING)
    # Django turns psycopg's preparing off unless OPTIONS names a threshold (for poolers' sake)
    _prepared = _DB_SERVER_SIDE_BINDING and _DB_PREPARED_STATEMENTS
    _pg_options.setdefault("prepare_threshold", 5 if _prepared else None)
    if _DB_POOL:
        DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps the connections instead
        _pg_options["pool"] = {
            "min_size": _DB_POOL_MIN_SIZE,
            "max_size": _DB_POOL_MAX_SIZE,
            "timeout": _DB_POOL_TIMEOUT,
            "max_idle": 300.0,
        }
# ---------------------------------------------------------------------------------------------------

REDIS_URL = env_str(
    "REDIS_URL",
    "",
    pattern=r"(redis|rediss|unix)://.*",
    expected="a redis://, rediss:// or unix:// URL",
    secret=True,
)
# Most connections a process's shared client (wake-ups, turn clocks, rate limits, spectator counts)
# opens to Redis, however many threads share it; the streams' pub/sub connection is one more.
REDIS_POOL_SIZE = env_int("REDIS_POOL_SIZE", 3, minimum=1)

if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
    CELERY_BROKER_URL = REDIS_URL
    if REDIS_URL.startswith("redis://"):  # one Redis client per channel, not per message (games.infra.broker)
        CELERY_BROKER_TRANSPORT = "games.infra.broker:Transport"  # broker.NAME
    CELERY_RESULT_BACKEND = REDIS_URL
    CELERY_TASK_ALWAYS_EAGER = False
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CELERY_BROKER_URL = "memory://"
    CELERY_RESULT_BACKEND = "cache+memory://"
    CELERY_TASK_ALWAYS_EAGER = True
    CELERY_TASK_EAGER_PROPAGATES = True

# Event streams wake on Redis pub/sub and poll the database as a safety net (only poll without Redis).
STREAM_POLL_SECONDS = env_float("STREAM_POLL_SECONDS", 5.0 if REDIS_URL else 0.5, minimum=_POSITIVE)
STREAM_KEEPALIVE_SECONDS = env_float("STREAM_KEEPALIVE_SECONDS", 15.0, minimum=_POSITIVE)
# GraphQL over WebSocket (games/graphql/socket.py, docs/graphql.md#subscriptions): the largest
# message, the connection_init deadline, liveness, and the caps on open sockets and subscriptions.
GRAPHQL_WS_MAX_MESSAGE = env_int("GRAPHQL_WS_MAX_MESSAGE", 64 * 1024, minimum=1)
GRAPHQL_WS_INIT_SECONDS = env_float("GRAPHQL_WS_INIT_SECONDS", 10.0, minimum=_POSITIVE)
GRAPHQL_WS_PING_SECONDS = env_float("GRAPHQL_WS_PING_SECONDS", 10.0, minimum=_POSITIVE)
GRAPHQL_WS_PONG_SECONDS = env_float("GRAPHQL_WS_PONG_SECONDS", 10.0, minimum=_POSITIVE)
GRAPHQL_WS_SOCKETS_PER_TOKEN = env_int("GRAPHQL_WS_SOCKETS_PER_TOKEN", 10, minimum=1)
GRAPHQL_WS_SOCKETS_PER_APP = env_int("GRAPHQL_WS_SOCKETS_PER_APP", 10000, minimum=1)
GRAPHQL_WS_SOCKETS_PER_ADDRESS = env_int("GRAPHQL_WS_SOCKETS_PER_ADDRESS", 20, minimum=1)
GRAPHQL_WS_SUBSCRIPTIONS_PER_TOKEN = env_int("GRAPHQL_WS_SUBSCRIPTIONS_PER_TOKEN", 100, minimum=1)
GRAPHQL_WS_SUBSCRIPTIONS_PER_APP = env_int("GRAPHQL_WS_SUBSCRIPTIONS_PER_APP", 50000, minimum=1)

# Rate limits (games/infra/ratelimit.py), counted in Redis: per token or key, per app, and per client
# address for unauthenticated calls (guest creation). A seated player's own-turn action is exempt.
RATE_LIMITS_ENABLED = env_bool("RATE_LIMITS_ENABLED", default=True)
# A rate is N/unit or N/Munit (games.infra.ratelimit.Rate.parse), unit second, minute, hour or day.
_RATE_PATTERN = r"\d+/\d*(second|minute|hour|day)"
_RATE_EXPECTED = "a rate like 600/minute or 20/10second"
RATE_LIMITS = {
    "token": env_str("RATE_LIMIT_TOKEN", "600/minute", pattern=_RATE_PATTERN, expected=_RATE_EXPECTED),
    "app": env_str("RATE_LIMIT_APP", "30000/minute", pattern=_RATE_PATTERN, expected=_RATE_EXPECTED),
    "address": env_str("RATE_LIMIT_ADDRESS", "60/minute", pattern=_RATE_PATTERN, expected=_RATE_EXPECTED),
}
# Browser clients on other origins: list them (https://game.example.com,...); the API uses bearer
# tokens, never cookies, so no credentials are allowed cross-origin.
CORS_ALLOWED_ORIGINS = env_list("CORS_ALLOWED_ORIGINS", default="")
CORS_ALLOW_ALL_ORIGINS = env_bool("CORS_ALLOW_ALL_ORIGINS", default=False)
CORS_URLS_REGEX = r"^/(api|graphql)/.*$"
CORS_ALLOW_HEADERS = (
    "authorization",
    "content-type",
    "idempotency-key",
    "if-match",
    "if-none-match",
    "last-event-id",
    "accept",
)
CORS_EXPOSE_HEADERS = (
    "Idempotent-Replayed",
    "Retry-After",
    "X-Request-ID",
    "RateLimit",
    "RateLimit-Policy",
    "ETag",
)
CORS_ALLOW_CREDENTIALS = False
CSRF_FAILURE_VIEW = "hearts_service.views.csrf_failure"
# Request bodies: every API body is small JSON (a pass is three cards).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_REQUEST_BYTES", 64 * 1024, minimum=1024)
DATA_UPLOAD_MAX_NUMBER_FIELDS = 200

# The sweep catches any clock or bot move whose task was lost (celery beat runs it).
SWEEP_SECONDS = env_float("SWEEP_SECONDS", 1.0, minimum=_POSITIVE)
CELERY_BEAT_SCHEDULE = {"sweep": {"task": "games.sweep", "schedule": SWEEP_SECONDS}}
# Lanes (games/infra/jobs.py, docs/operations.md#lanes): every kind of background work has its own
# queue and workers, so work a person waits for never waits behind throughput work. `clocks`: turn
# clocks and the sweep; `people`: bot moves at tables with a person; `bots`: bot-only tables, one
# sub-queue per app among BOT_LANE_QUEUES (a worker started with `-Q bots` takes them all, in turn);
# `webhooks`: webhook sends; `push`: push notifications; `bulk`: exports and housekeeping (sealing,
# archiving). One worker may serve several lanes (`-Q clocks,people,bots,webhooks,push,bulk`).
CELERY_TASK_ROUTES = {
    "games.enforce_clock": {"queue": "clocks"},
    "games.sweep": {"queue": "clocks"},
    "games.play_bots": {"queue": "people"},  # bot-only tables are sent to their bots.N sub-queue
    "games.deliver_webhook": {"queue": "webhooks"},
    "games.deliver_push": {"queue": "push"},
    "games.run_export": {"queue": "bulk"},
    "games.housekeeping": {"queue": "bulk"},
    "games.review_hand": {"queue": "hints"},
    "games.compute_hint": {"queue": "hints"},
}
CELERY_TASK_DEFAULT_QUEUE = "people"
BOT_LANE_QUEUES = env_int("BOT_LANE_QUEUES", 8, minimum=1)
# Back pressure (games.infra.pressure, docs/operations.md#lanes): a bot-lane task waits, at
# most BOTS_YIELD_SECONDS (0: never), while a web process's requests queue for a slot or the people
# lane holds more than PEOPLE_BACKLOG tasks; a web process runs at most WEB_MAX_CONCURRENT_REQUESTS
# requests at once (streams apart), the others wait their turn in its event loop.
BOTS_YIELD_SECONDS = env_float("BOTS_YIELD_SECONDS", 0.25, minimum=0.0, maximum=30.0)
PEOPLE_BACKLOG = env_int("PEOPLE_BACKLOG", 20, minimum=0)
WEB_MAX_CONCURRENT_REQUESTS = env_int("WEB_MAX_CONCURRENT_REQUESTS", 32, minimum=1)
# Requests reuse this process's request threads (hearts_service/asgi.py); false: a new thread per
# request, as Django does (bench/requests.py compares the two).
WEB_KEEP_REQUEST_THREADS = env_bool("WEB_KEEP_REQUEST_THREADS", default=True)
# Requests (streams apart) run the middleware chain and the view in their thread in one go
# (hearts_service/asgi.py, SyncChainHandler); false: Django's ASGI handler, which goes back to the
# event loop and into the thread again between the middleware and the view (bench/requests.py).
WEB_SYNC_CHAIN = env_bool("WEB_SYNC_CHAIN", default=True)
# The delay before each bot card played at a table where a person sits, in milliseconds, unless the
# table sets its own `bot_pace_ms` (0 to 2000; docs/bots-and-clocks.md#pace): time to follow a trick.
BOT_PACE_MS = env_int("BOT_PACE_MS", 700, minimum=0, maximum=2000)
# bots/expert.py reads HEARTS_EXPERT_ITERATIONS at each decision (bots import nothing of the service);
# read here too so that a typo stops start-up rather than the first expert move.
_EXPERT_ITERATIONS = env_int("HEARTS_EXPERT_ITERATIONS", 1200, minimum=1)
# Hand reviews (games/services/review.py, docs/bots-and-clocks.md#hand-review), computed on the
# hints lane: the thinking time of each decision's estimate in milliseconds (0: the level's fixed
# budget, which a seed replays exactly), how long a request waits for the lane before answering
# service_unavailable (the lane goes on and keeps the review), and the computations a caller may ask.
REVIEW_THINK_MS = env_int("REVIEW_THINK_MS", 250, minimum=0, maximum=5000)
REVIEW_WAIT_SECONDS = env_float("REVIEW_WAIT_SECONDS", 10.0, minimum=_POSITIVE)
REVIEW_RATE = env_str("REVIEW_RATE", "20/minute", pattern=_RATE_PATTERN, expected=_RATE_EXPECTED)
# Hints (games/services/hints.py, docs/hints.md), computed on the hints lane from the seat's view with
# the level's fixed budget: how long a request waits for the lane's answer in milliseconds (then
# service_unavailable with retry_after: the lane goes on and keeps the answer for the retry), and
# the hints a caller may ask.
HINT_THINK_MS = env_int("HINT_THINK_MS", 2000, minimum=50, maximum=30000)
HINT_RATE = env_str("HINT_RATE", "30/minute", pattern=_RATE_PATTERN, expected=_RATE_EXPECTED)
# Webhooks (games/webhooks/): the signing secrets derive from WEBHOOK_SECRET_KEY (changing it
# changes every endpoint's secret); timeouts, backoff and the sweep's lost-task detection in seconds.
WEBHOOK_SECRET_KEY = env_str("WEBHOOK_SECRET_KEY", SECRET_KEY)
WEBHOOK_TIMEOUT = env_float("WEBHOOK_TIMEOUT", 5.0, minimum=_POSITIVE)
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 10, minimum=1)
WEBHOOK_BACKOFF_BASE = env_float("WEBHOOK_BACKOFF_BASE", 10.0, minimum=0)
WEBHOOK_BACKOFF_MAX = env_float("WEBHOOK_BACKOFF_MAX", 3600.0, minimum=0)
WEBHOOK_LEASE_MARGIN = 30.0  # a claimed send is over after timeout + this; then it can be claimed again
WEBHOOK_SWEEP_GRACE = env_float("WEBHOOK_SWEEP_GRACE", 5.0, minimum=0)  # due for longer: task lost ...
WEBHOOK_REQUEUE_AFTER = env_float("WEBHOOK_REQUEUE_AFTER", 60.0, minimum=0)  # ... unless queued since
WEBHOOK_CLOCK_SKEW = 1.0  # a task on a machine whose clock is behind still finds its delivery due
WEBHOOK_LOG_ATTEMPTS = 20  # attempts kept on each delivery
WEBHOOK_MAX_PER_APP = env_int("WEBHOOK_MAX_PER_APP", 20, minimum=1)
# Quotas per app and per token (games/quotas.py, docs/rest.md#quotas): the defaults; the operator
# overrides them per app (games.AppQuota: the admin, or manage.py set_quota).
QUOTA_STREAMS_PER_TOKEN = env_int("QUOTA_STREAMS_PER_TOKEN", 100, minimum=0)
QUOTA_STREAMS_PER_APP = env_int("QUOTA_STREAMS_PER_APP", 50000, minimum=0)
QUOTA_OPEN_TABLES = env_int("QUOTA_OPEN_TABLES", 10000, minimum=0)
QUOTA_TOURNAMENTS_PER_DAY = env_int("QUOTA_TOURNAMENTS_PER_DAY", 100, minimum=0)
QUOTA_BOTS = env_int("QUOTA_BOTS", 20, minimum=0)
QUOTA_WEBHOOKS = env_int("QUOTA_WEBHOOKS", WEBHOOK_MAX_PER_APP, minimum=0)
# Private, loopback and link-local addresses are refused unless allowed (by default only in development).
WEBHOOK_ALLOW_PRIVATE_HOSTS = env_bool("WEBHOOK_ALLOW_PRIVATE_HOSTS", default=not PRODUCTION)
# An egress proxy URL for webhook sends, if any (it may hold a password: never repeated in a message).
WEBHOOK_PROXY = env_str(
    "WEBHOOK_PROXY", "", pattern=r"[a-z][a-z0-9+.-]*://\S+", expected="a URL", secret=True
)
# Push notifications (games/push/, docs/push.md). Provider secrets are encrypted at rest with the
# first of PUSH_ENCRYPTION_KEYS (Fernet keys, comma-separated; all of them decrypt, so a new key goes
# first and `manage.py push_rotate_keys` re-encrypts); by default one key derived from SECRET_KEY.
PUSH_ENCRYPTION_KEYS = env_list("PUSH_ENCRYPTION_KEYS", "")
PUSH_GRACE_SECONDS = env_float("PUSH_GRACE_SECONDS", 5.0, minimum=0, maximum=600)  # before a turn is pushed
PUSH_TIMEOUT = env_float("PUSH_TIMEOUT", 10.0, minimum=_POSITIVE)
PUSH_MAX_ATTEMPTS = env_int("PUSH_MAX_ATTEMPTS", 8, minimum=1)
PUSH_BACKOFF_BASE = env_float("PUSH_BACKOFF_BASE", 2.0, minimum=0)
PUSH_BACKOFF_MAX = env_float("PUSH_BACKOFF_MAX", 600.0, minimum=0)
PUSH_LEASE_MARGIN = 30.0  # a claim older than timeout + this was a worker that died mid-send: in doubt
PUSH_MAX_DEVICES = env_int("PUSH_MAX_DEVICES", 10, minimum=1, maximum=100)  # per player
# The providers' addresses (tests point them at local servers speaking the same protocol); APNs's
# is chosen by the key's sandbox flag unless PUSH_APNS_URL is set. PUSH_CA_FILE: extra trusted CAs.
PUSH_FCM_URL = env_str(
    "PUSH_FCM_URL", "https://fcm.googleapis.com", pattern=r"https?://\S+", expected="a URL"
)
PUSH_APNS_URL = env_str("PUSH_APNS_URL", "", pattern=r"https?://\S+", expected="a URL")
PUSH_CA_FILE = env_str("PUSH_CA_FILE", "")
PUSH_VAPID_SUBJECT = env_str(
    "PUSH_VAPID_SUBJECT",
    "mailto:push@hearts.invalid",
    pattern=r"(mailto:|https://)\S+",
    expected="a mailto: or https: URL",
)
# Data over time (games.records, games.privacy; docs/data.md). A game that is over is sealed
# SEAL_AFTER_SECONDS after its end (its move log becomes one compact record row), and moves to the
# archive storage once its app's retention period (App.retention_days, or ARCHIVE_AFTER_DAYS for
# guests' tables and apps that set none; 0: at once) has passed. Exports are written to the export
# storage and kept EXPORT_TTL_HOURS. Both storages are Django storages: directories under DATA_DIR by
# default, an S3-compatible bucket (django-storages, the `s3` extra) when ARCHIVE_S3_BUCKET is set.
DATA_DIR = Path(env_str("DATA_DIR", str(BASE_DIR / "var")))
SEAL_AFTER_SECONDS = env_float("SEAL_AFTER_SECONDS", 60.0, minimum=0)
ARCHIVE_AFTER_DAYS = env_int("ARCHIVE_AFTER_DAYS", 30, minimum=0)
ARCHIVE_BATCH = env_int("ARCHIVE_BATCH", 200, minimum=1)  # tables archived per task
EXPORT_TTL_HOURS = env_int("EXPORT_TTL_HOURS", 72, minimum=1)
EXPORT_INLINE_MAX_TABLES = env_int("EXPORT_INLINE_MAX_TABLES", 100, minimum=0)  # larger: a background job
ARCHIVE_S3_BUCKET = env_str("ARCHIVE_S3_BUCKET", "")


def _data_storage(location: str) -> dict[str, object]:
    """The storage of archives or exports: a directory of DATA_DIR, or a prefix of the S3 bucket.
    MinIO and other S3-compatible servers without a wildcard DNS name want path-style addressing
    (ARCHIVE_S3_ADDRESSING_STYLE=path); Signature Version 4 is what every current one accepts."""
    if not ARCHIVE_S3_BUCKET:
        return {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(DATA_DIR / location), "base_url": None},
        }
    return {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": ARCHIVE_S3_BUCKET,
            "location": location,
            "endpoint_url": env_str(
                "ARCHIVE_S3_ENDPOINT_URL", "", pattern=r"https?://\S+", expected="an http(s):// URL"
            )
            or None,
            "region_name": env_str("ARCHIVE_S3_REGION", "") or None,
            "access_key": env_str("ARCHIVE_S3_ACCESS_KEY_ID", "") or None,
            "secret_key": env_str("ARCHIVE_S3_SECRET_ACCESS_KEY", "") or None,
            "addressing_style": env_str(
                "ARCHIVE_S3_ADDRESSING_STYLE", "auto", lower=True, choices=("auto", "path", "virtual")
            ),
            "signature_version": "s3v4",
            "default_acl": None,
            "querystring_auth": True,
            "file_overwrite": True,
        },
    }


STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "archives": _data_storage("archives"),
    "exports": _data_storage("exports"),
}

CELERY_WORKER_PREFETCH_MULTIPLIER = 1  # with late acks: a killed worker holds at most one task
CELERY_TASK_ACKS_ON_FAILURE_OR_TIMEOUT = True
# Unacknowledged tasks (their worker died) come back after this; the sweep acts sooner anyway.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 600}
# A worker back on the broker within a fraction of a second after Redis restarts (kombu waits 2 s).
CELERY_WORKER_CONSUMER = "games.infra.broker:Consumer"  # broker.CONSUMER
# Nothing reads a task's result: workers store none, and the one result backend object is shared by
# every thread (Django runs each request in a thread of its own, and Celery otherwise builds a
# backend, with a new Redis connection and an entry-point scan, in every thread that queues a task:
# it was most of a play's time under load).
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND_THREAD_SAFE = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
# Celery's Django fixup closes every database connection before and after each task, and with
# Django's pool in a prefork worker it closes the whole pool: every task then opened two new
# PostgreSQL connections (a backend forked for each, threads started for the pool), a fifth of a bot
# task's CPU and more of PostgreSQL's under load (issue 37). This count of tasks (times two) between
# its closes makes that never; instead each task gives its connection back to the pool when it ends,
# and a broken one is dropped, as a web request does (hearts_service.celery `_connections_back`).
CELERY_DB_REUSE_MAX = 1_000_000_000

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Error details come in these languages (games/messages.py; docs/errors.md, "Languages"): chosen by
# Accept-Language, or by a player's own preference; English when neither names one of them.
LANGUAGE_CODE = "en"
LANGUAGES = [
    ("en", "English"),
    ("mi", "Māori"),
    ("eu", "Basque"),
    ("ms", "Malay"),
    ("ky", "Kyrgyz"),
]
# The translations are the games app's own (games/locale/<language>/LC_MESSAGES/django.po and the
# compiled django.mo), found by Django as every app's are and shipped in its wheel (pyproject.toml).
# Django knows every language above but Māori: a language it does not know is described from its
# name here, so that get_language_info("mi") works.
for _code, _name in LANGUAGES:
    LANG_INFO.setdefault(_code, {"bidi": False, "code": _code, "name": _name, "name_local": _name})
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["games.api.auth.BearerAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["games.api.auth.IsPrincipal"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["games.api.parsing.StrictJSONParser"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "games.api.parsing.JSONOnly",
    "EXCEPTION_HANDLER": "games.api.errors.handle",
    "DEFAULT_THROTTLE_CLASSES": ["games.api.auth.RateLimit"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}

GRAPHENE = {"SCHEMA": "games.graphql.schema.schema", "MIDDLEWARE": []}

SPECTACULAR_SETTINGS = {
    "TITLE": "Hearts service API",
    "DESCRIPTION": "Tables, seats, passes, plays and moon choices for the card game Hearts. Every error "
    "body is {code, detail, ...}; the codes are stable and shared with the rules engine.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and Redoc load their assets from this server (hearts_service/urls.py), never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},  # no badge from validator.swagger.io
    # games/api/urls.py: ids are 1 to 18 digits (always within the 64-bit id columns).
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": 0, "maximum": 10**18 - 1}},
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "BotLevelEnum": "bots.LEVELS",
        "ErrorCode": "games.errors.Code",
        "MoonChoiceEnum": ["subtract", "add"],
        "DeliveryStatusEnum": "games.webhooks.DELIVERY_STATUSES",
        "TableStatusEnum": "games.reads.TABLE_STATUSES",
        "RateLimitEnum": ["token", "app", "address"],
        "TournamentStatusEnum": ["starting", "running", "finished"],
        "LegalOutTypeEnum": ["pass", "play", "moon"],  # an action's type: also what a turn owes
        "DeviceKindEnum": "games.push.devices.KINDS",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "games.api.streams.add_streams",  # the event types (games.contracts) and the two streams
        "games.api.schemas.strict_requests",  # request bodies are closed: unknown fields are refused
        "games.api.schemas.error_details",  # each error response's codes, Retry-After headers
    ],
}

LOG_LEVEL = env_str(
    "LOG_LEVEL", "INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"), upper=True
)

# -- Observability (hearts_service/observability.py, games/infra/metrics.py; docs/operations.md) -------
# LOG_FORMAT: "json" (one object per line; the default in production) or "text" (the development default).
LOG_FORMAT = env_str("LOG_FORMAT", "json" if PRODUCTION else "text", choices=("json", "text"), lower=True)
# SQL statements carry table states (every hand): logged at DEBUG only when LOG_SQL is set too.
LOG_SQL = env_bool("LOG_SQL", default=False)

# Traces (hearts_service/tracing.py, docs/operations.md#traces): OpenTelemetry, off unless there is
# somewhere to send spans: an OTLP endpoint, or OTEL_TRACES_EXPORTER=console; OTEL_SDK_DISABLED wins.
# Only the standard OTEL_* variables; the SDK reads the others it knows (OTEL_BSP_*, headers...) itself.
OTEL_SDK_DISABLED = env_bool("OTEL_SDK_DISABLED", default=False)
OTEL_TRACES_EXPORTER = env_str(
    "OTEL_TRACES_EXPORTER", "otlp", choices=("otlp", "console", "none"), lower=True
)
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = env_str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
OTEL_EXPORTER_OTLP_ENDPOINT = env_str("OTEL_EXPORTER_OTLP_ENDPOINT", "")
_OTLP_SET = bool(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT)
TRACING = not OTEL_SDK_DISABLED and (
    OTEL_TRACES_EXPORTER == "console" or (OTEL_TRACES_EXPORTER == "otlp" and _OTLP_SET)
)
OTEL_SERVICE_NAME = env_str("OTEL_SERVICE_NAME", "hearts-service")
OTEL_TRACES_SAMPLER = env_str(
    "OTEL_TRACES_SAMPLER",
    "parentbased_always_on",
    choices=(
        "always_on",
        "always_off",
        "traceidratio",
        "parentbased_always_on",
        "parentbased_always_off",
        "parentbased_traceidratio",
    ),
    lower=True,
)
OTEL_TRACES_SAMPLER_ARG = env_float("OTEL_TRACES_SAMPLER_ARG", 1.0, minimum=0.0, maximum=1.0)
# /metrics in production: with METRICS_TOKEN, only `Authorization: Bearer <METRICS_TOKEN>`;
# without it, only direct (unproxied) requests from private or loopback addresses.
METRICS_TOKEN = env_str("METRICS_TOKEN", "")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "context": {"()": "hearts_service.observability.ContextFilter"},
        "repeats": {"()": "hearts_service.observability.Repeats", "seconds": 5.0},
    },
    "formatters": {
        "text": {"()": "hearts_service.observability.TextFormatter"},
        "json": {"()": "hearts_service.observability.JsonFormatter"},
    },
    "handlers": {
        "stdout": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stdout",
            "formatter": LOG_FORMAT,
            "filters": ["context"],
        },
    },
    "root": {"handlers": ["stdout"], "level": LOG_LEVEL},
    "loggers": {
        "django": {"level": LOG_LEVEL},  # drops Django's default console handler: one format only
        "django.db.backends": {"level": "DEBUG" if LOG_SQL else "INFO"},
        # uvicorn's own lines go through the same handler; its access log (raw paths with query
        # strings, plain text) gives way to hearts.access, written by the middleware.
        "uvicorn": {"handlers": ["stdout"], "level": LOG_LEVEL, "propagate": False},
        "uvicorn.error": {"level": LOG_LEVEL},
        "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
        # a failed reconnection attempt, every RECONNECT_EVERY while the database is down: one in 5 s
        "psycopg.pool": {"filters": ["repeats"]},
    },
}
