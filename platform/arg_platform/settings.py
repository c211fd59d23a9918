"""Settings of the ARG knowledge platform, read from the environment.

Two modes:

* ``embedded`` (default): SQLite file, the ``sql`` graph backend, a filesystem Celery broker and a
  file result backend under ``ARG_DATA_DIR`` — nothing external is needed.
* ``production``: every secret and host comes from the environment; a missing one raises
  ``ImproperlyConfigured``; the security settings make ``manage.py check --deploy`` clean.

``.env.example`` lists every variable with its default; ``arg_platform.env.ENV_VARS`` is the
machine-readable list.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from .env import env_bool, env_int, env_list, env_str
from .schedule import beat_schedule

BASE_DIR = Path(__file__).resolve().parent.parent.parent

ARG_ENV = env_str("ARG_ENV", "embedded", doc="embedded | production")
if ARG_ENV not in {"embedded", "production"}:
    raise ImproperlyConfigured(f"ARG_ENV={ARG_ENV!r}: use 'embedded' or 'production'")
PRODUCTION = ARG_ENV == "production"

DATA_DIR = Path(env_str("ARG_DATA_DIR", str(BASE_DIR / "var"), doc="folder for SQLite, broker, caches"))
DATA_DIR.mkdir(parents=True, exist_ok=True)

_secret = env_str("ARG_SECRET_KEY", doc="Django secret key (required in production)")
if PRODUCTION and not _secret:
    raise ImproperlyConfigured("ARG_SECRET_KEY must be set when ARG_ENV=production")
SECRET_KEY = _secret or "embedded-insecure-key-only-for-local-use-0123456789-abcdefghijklmnop"

DEBUG = env_bool("ARG_DEBUG", False, doc="Django debug pages (never in production)")
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("ARG_DEBUG must be false when ARG_ENV=production")

ALLOWED_HOSTS = env_list(
    "ARG_ALLOWED_HOSTS",
    [] if PRODUCTION else ["localhost", "127.0.0.1", "[::1]", "testserver"],
    doc="comma-separated host names (required in production)",
)
if PRODUCTION and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ARG_ALLOWED_HOSTS must be set when ARG_ENV=production")
CSRF_TRUSTED_ORIGINS = env_list(
    "ARG_CSRF_TRUSTED_ORIGINS", [], doc="comma-separated origins, e.g. https://arg.example.com"
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "django_htmx",
    "arg_platform.apps.ArgPlatformConfig",
    "projects",
    "taxonomy",
    "ontology",
    "memory",
    "review",
    "inference",
]

MIDDLEWARE = [
    "arg_platform.request_id.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "arg_platform.urls"
WSGI_APPLICATION = "arg_platform.wsgi.application"
ASGI_APPLICATION = "arg_platform.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "projects.context_processors.current_project",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str(
            "DATABASE_URL", f"sqlite:///{DATA_DIR / 'arg.sqlite3'}", doc="database URL (SQLite or Postgres)"
        ),
        conn_max_age=env_int(
            "ARG_DB_CONN_MAX_AGE", 60 if PRODUCTION else 0, doc="persistent DB connections (s)"
        ),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server, the worker and beat read while one of them writes.
    # A file (not :memory:) test database, so a real Celery worker or gunicorn started by a test
    # sees the rows the test committed.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test-db.sqlite3")}
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].update(
        {"timeout": 30, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"}
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not PRODUCTION
if not PRODUCTION:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)

# --- REST API -----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "projects.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "arg_platform.api.exception_handler",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "ARG knowledge platform API",
    "DESCRIPTION": "REST API v1 of the ARG (Adaptive Reasoning Graph) knowledge platform.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # `check --deploy` is about deployment security; the schema's own warnings are checked where the
    # schema is (`manage.py spectacular --validate --fail-on-warn`), not mixed into the deploy check.
    "ENABLE_DJANGO_DEPLOY_CHECK": False,
    "ENUM_NAME_OVERRIDES": {
        "LabelStatusEnum": "taxonomy.models.LabelStatus.choices",
        "NodeStatusEnum": "ontology.domain.NODE_STATUS_CHOICES",
        "NodeTypeEnum": "ontology.domain.NODE_TYPE_CHOICES",
        "EdgeTypeEnum": "ontology.domain.EDGE_TYPE_CHOICES",
    },
}

# --- Graph store ----------------------------------------------------------------------------------
GRAPH_BACKEND = env_str("ARG_GRAPH_BACKEND", "sql", doc="sql | neo4j")
if GRAPH_BACKEND not in {"sql", "neo4j"}:
    raise ImproperlyConfigured(f"ARG_GRAPH_BACKEND={GRAPH_BACKEND!r}: use 'sql' or 'neo4j'")
NEO4J_URI = env_str("NEO4J_URI", "", doc="bolt/neo4j URI, e.g. neo4j://neo4j:7687")
NEO4J_USER = env_str("NEO4J_USER", "neo4j", doc="Neo4j user")
NEO4J_PASSWORD = env_str("NEO4J_PASSWORD", "", doc="Neo4j password")
NEO4J_DATABASE = env_str("NEO4J_DATABASE", "neo4j", doc="Neo4j database name")
if GRAPH_BACKEND == "neo4j" and not NEO4J_URI:
    raise ImproperlyConfigured("NEO4J_URI must be set when ARG_GRAPH_BACKEND=neo4j")

SNAPSHOT_CHECK_S = float(
    env_str("ARG_SNAPSHOT_CHECK_S", "1.0", doc="how often a process checks which release is active (s)")
)

# --- Celery ---------------------------------------------------------------------------------------
CELERY_DATA_DIR = DATA_DIR / "celery"
CELERY_DATA_DIR.mkdir(parents=True, exist_ok=True)  # beat's schedule file lives here, whatever the broker
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://", doc="redis://… in production")
CELERY_RESULT_BACKEND = env_str(
    "CELERY_RESULT_BACKEND", f"file://{CELERY_DATA_DIR / 'results'}", doc="redis://… in production"
)
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_DATA_DIR / "queue"),
        "data_folder_out": str(CELERY_DATA_DIR / "queue"),
        "processed_folder": str(CELERY_DATA_DIR / "processed"),
        "control_folder": str(CELERY_DATA_DIR / "control"),
        "store_processed": False,
    }
    for _folder in ("queue", "processed", "control"):
        (CELERY_DATA_DIR / _folder).mkdir(parents=True, exist_ok=True)
if CELERY_RESULT_BACKEND.startswith("file://"):
    Path(CELERY_RESULT_BACKEND.removeprefix("file://")).mkdir(parents=True, exist_ok=True)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False, doc="run tasks inline (tests only)")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BEAT_SCHEDULE_FILENAME = str(CELERY_DATA_DIR / "beat-schedule")
CELERY_TIMEZONE = "UTC"
# The one place where the nightly schedule lives (ARCHITECTURE decision 4); the offline loop adds
# its entries in arg_platform.schedule.
NIGHTLY_HOUR_UTC = env_int("ARG_NIGHTLY_HOUR_UTC", 2, doc="hour (UTC) of the nightly offline loop")
CELERY_BEAT_SCHEDULE = beat_schedule(nightly_hour_utc=NIGHTLY_HOUR_UTC)

# --- Models and the optional LLM ------------------------------------------------------------------
EMBEDDER_BATCH_SIZE = env_int("ARG_EMBEDDER_BATCH_SIZE", 64, doc="sentences per embedding batch")
EMBEDDER_CACHE_SIZE = env_int(
    "ARG_EMBEDDER_CACHE_SIZE", 50_000, doc="embeddings kept in the content-hash cache"
)
LLM_URL = env_str("ARG_LLM_URL", "", doc="OpenAI-compatible endpoint; empty = no LLM (extractive answers)")
LLM_MODEL = env_str("ARG_LLM_MODEL", "", doc="model name sent to the LLM endpoint")
LLM_API_KEY = env_str("ARG_LLM_API_KEY", "", doc="bearer token for the LLM endpoint")
LLM_TIMEOUT_S = env_int("ARG_LLM_TIMEOUT_S", 20, doc="LLM request timeout (s)")
ACTION_TIMEOUT_S = env_int("ARG_ACTION_TIMEOUT_S", 5, doc="action webhook timeout (s)")
ACTION_HANDLER_MODULES = env_list(
    "ARG_ACTION_HANDLER_MODULES",
    ["inference.demo_handlers"],
    doc="modules imported to register Python action handlers",
)

# --- Logging --------------------------------------------------------------------------------------
LOG_FORMAT = env_str("ARG_LOG_FORMAT", "json" if PRODUCTION else "text", doc="json | text")
LOG_LEVEL = env_str("ARG_LOG_LEVEL", "INFO", doc="root log level")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "arg_platform.request_id.RequestIdLogFilter"}},
    "formatters": {
        "json": {"()": "arg_platform.logs.JsonFormatter"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id"]},
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.server": {"level": "WARNING"},
        "celery": {"level": "INFO"},
    },
}

# --- Security (production) ------------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the cookie-less meta tag; harmless either way
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("ARG_SECURE_SSL_REDIRECT", True, doc="redirect http to https")
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
    SECURE_HSTS_SECONDS = env_int("ARG_HSTS_SECONDS", 31_536_000, doc="HSTS max-age in production")
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    if len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5:
        raise ImproperlyConfigured("ARG_SECRET_KEY must be at least 50 characters with 5 distinct ones")

# Silence a check that cannot apply: SECURE_SSL_REDIRECT may be turned off by operators whose TLS
# proxy redirects itself; they say so explicitly through ARG_SECURE_SSL_REDIRECT=false.
SILENCED_SYSTEM_CHECKS = ["security.W008"] if PRODUCTION and not SECURE_SSL_REDIRECT else []

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
