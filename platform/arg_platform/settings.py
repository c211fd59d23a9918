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
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from .env import env_bool, env_int, env_list, env_str
from .schedule import beat_schedule
from .throttling import rate_parse

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
    "axes",  # sign-in throttling (arg_platform.login_throttling)
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc, served from our static files (no CDN)
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
    "arg_platform.metrics.MetricsMiddleware",
    "arg_platform.nul_characters.NulCharacterMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "arg_platform.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "arg_platform.unavailable.ServiceUnavailableMiddleware",
    # Last, as axes asks: turns a sign-in refused for a lock-out into the lock-out page.
    "axes.middleware.AxesMiddleware",
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
            "ARG_DB_CONN_MAX_AGE", 60, doc="persistent DB connections (s); 0 = a new connection per request"
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
        {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            # synchronous=NORMAL: in WAL mode a commit no longer waits for fsync (every request commits
            # its InferenceLog row); the database stays consistent, and a power cut can lose at most
            # the last commits — SQLite's recommended setting for WAL.
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
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
    "DEFAULT_PARSER_CLASSES": [
        "arg_platform.parsers.BoundedJSONParser",  # DRF's JSON parser with a nesting bound
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "arg_platform.api.exception_handler",
    "DEFAULT_PAGINATION_CLASS": "arg_platform.pagination.LimitOffsetPagination",  # bounded limit/offset
    "PAGE_SIZE": 100,
    "DEFAULT_THROTTLE_CLASSES": ["arg_platform.throttling.TokenRateThrottle"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "ARG knowledge platform API",
    "DESCRIPTION": "REST API v1 of the ARG (Adaptive Reasoning Graph) knowledge platform.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # /api/v1/docs/ (Swagger UI) and /api/v1/redoc/ load their assets from drf-spectacular-sidecar's static
    # files, never a CDN; no online validator badge (it would call validator.swagger.io)
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "COMPONENT_SPLIT_REQUEST": True,
    # `check --deploy` is about deployment security; the schema's own warnings are checked where the
    # schema is (`manage.py spectacular --validate --fail-on-warn`), not mixed into the deploy check.
    "ENABLE_DJANGO_DEPLOY_CHECK": False,
    "ENUM_NAME_OVERRIDES": {
        "LabelStatusEnum": "taxonomy.models.LabelStatus.choices",
        "NodeStatusEnum": "arg_platform.vocabulary.NODE_STATUS_CHOICES",
        "NodeTypeEnum": "arg_platform.vocabulary.NODE_TYPE_CHOICES",
        "EdgeTypeEnum": "arg_platform.vocabulary.EDGE_TYPE_CHOICES",
        "ProposalKindEnum": "review.models.ProposalKind.choices",
        "ProposalStatusEnum": "review.models.ProposalStatus.choices",
        "ReleaseSourceEnum": "ontology.models.RELEASE_SOURCE_CHOICES",
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
NEO4J_MAX_RETRY_S = env_int(
    "NEO4J_MAX_RETRY_S", 3, doc="how long a graph store call retries an unreachable Neo4j before a 503 (s)"
)
GDS_NODE_SIMILARITY_MAX_NODES = env_int(
    "ARG_GDS_NODE_SIMILARITY_MAX_NODES",
    20_000,
    doc="above this many ACTIVE nodes, Node Similarity is the sparse product, not GDS (quadratic)",
)
if GRAPH_BACKEND == "neo4j" and not NEO4J_URI:
    raise ImproperlyConfigured("NEO4J_URI must be set when ARG_GRAPH_BACKEND=neo4j")

SNAPSHOT_CHECK_S = float(
    env_str(
        "ARG_SNAPSHOT_CHECK_S",
        "1.0",
        doc="how often a process checks which release is active, and a web worker preloads a new one (s)",
    )
)
# A web worker loads the encoder, the active releases' runtimes and indexes before it accepts a request
# (``arg_platform.health.warm_up_run``); off, they load on the first request that needs them.
WARM_UP = env_bool("ARG_WARM_UP", True, doc="web workers load models and releases before serving")

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
# The one place where the nightly schedule lives (arg_platform.schedule); the offline loop adds
# its entries in arg_platform.schedule.
NIGHTLY_HOUR_UTC = env_int("ARG_NIGHTLY_HOUR_UTC", 2, doc="hour (UTC) of the nightly offline loop")
CELERY_BEAT_SCHEDULE = beat_schedule(nightly_hour_utc=NIGHTLY_HOUR_UTC)

# The offline refinement loop (ARG §3 steps A–E): every threshold and weight it uses, read through
# review.loop.params.loop_params(). Scores are shares of the replayed interactions (a gain of 0.05 = five
# points). Auto-commit needs HIGH_CONF *and* a confirmed gain or enough active-check coverage (§3.4.1).
OFFLINE_LOOP: dict[str, object] = {
    "window_days": 7,  # logs the night reads
    "max_logs": 200_000,  # most recent logs kept when the window holds more
    "seed": 7,  # samples, clustering and replay draws
    "reuse_proxy_s": 0,  # > 0: "immediate reuse of a related action" confirms an Info answer (§3.1.1)
    "generators": [
        "split",
        "merge",
        "detour",
        "coactivation",
        "reinforce",
        "child_label",
        "unreached_label",
        "promote",
        "memory",
        "obsolescence",
        "removal",
        "reattach",
    ],
    "split": {
        "min_landings": 40,
        "max_prompts": 300,
        "max_children": 3,
        "min_share": 0.2,
        "min_silhouette": 0.12,
        "max_centroid_cosine": 0.8,
        "label_weight": 0.3,
        "outcome_weight": 0.15,
        "shared_sentence_margin": 0.03,
        # a node is split only when its users' helpful share is significantly below the project's:
        # the one-sided Wilson upper bound at this z must fall under the project's share
        "satisfaction_z": 1.645,
    },
    "merge": {
        "min_content_cosine": 0.9,
        "max_pairs": 200,
        "max_prompts": 200,
        "min_landings": 5,
        "min_usage_cosine": 0.8,
        "min_competitions": 10,
        "fgw_alpha": 0.5,
        "fgw_epsilon": 0.2,
    },
    "edges": {
        "min_detour_support": 15,
        "min_detour_share": 0.2,
        "min_sources": 3,
        "new_edge_weight": 0.7,
        "followup_s": 300,
        "min_coactivation_support": 10,  # a floor: the follow-up share decides (edges module doc)
        "min_coactivation_share": 0.25,
        "min_coactivation_lift": 2.0,
        "coactivation_z": 1.645,
        "z_low": -0.5,
        "z_weak": 0.1,
        "temperature": 1.0,
        "learning_rate": 0.1,
        "discount": 1.0,
        "damping": 0.3,
        "decay": 0.01,
        "epochs": 3,
        "min_node_episodes": 15,
        "min_edge_support": 10,
        "min_strong_support": 5,
        "min_weight_delta": 0.15,
        "veto_z": 1.645,
        "min_veto_outcomes": 10,
        "veto_weight": -0.5,
    },
    "labels": {
        "max_prompts": 2000,
        "min_support": 12,
        "min_wordings": 3,
        "min_sources": 3,
        "cluster_cosine": 0.6,
        "max_examples": 8,
        "sibling_cosine": 0.9,
        "attach_cosine": 0.35,
        "min_shadow_support": 10,
    },
    "memory": {
        "min_recurrence": 5,
        "min_sources": 3,
        "min_segments": 2,
        "max_segment_share": 0.8,
        "weak_weight": 0.25,
        "min_weighted_support": 3.0,
        "max_uncertain_share": 0.6,
        "infounit_cosine": 0.85,
        "node_cosine": 0.85,
        "attach_cosine": 0.4,
    },
    # review.loop.generators.lifecycle: obsolescence, DEPRECATED → REMOVED, label re-attachment (§3.5,
    # §3.2.4). observation_days and idle_days are read from the night's logs: keep them ≤ window_days.
    "lifecycle": {
        # outcome-bearing landings before failures count: a floor only, the Wilson bound weighs the evidence
        # (10 of 10 failing is a lower bound of 0.79; 8 of 10, 0.54)
        "min_landings": 10,
        "min_nights": 3,  # distinct days with failures: persistent, not one bad evening
        "negative_share": 0.5,  # Wilson lower bound (at z) of the failure share (silence is no failure)
        "z": 1.645,
        "idle_days": 7,  # no traffic at all that long …
        "min_door_traffic": 10,  # … while its labels brought this many requests
        "replacement_cosine": 0.6,
        "observation_days": 7,  # DEPRECATED at least that long before REMOVED …
        "max_alias_traffic": 0,  # … with no request, memory read or write reaching it through its alias
        "reattach_min_support": 12,
        "reattach_min_sources": 3,
        "reattach_max_prompts": 300,
        # the nearest-node view (mean of a prompt's 3 highest node cosines in a cluster) must agree with
        # the centroid view; 0: the centroid view alone
        "reattach_neighbours": 3,
        "margin": 0.08,  # lower bound of the mean gap to the other cluster, in the weaker view
        "parent_cosine": 0.5,  # the nearest relative (module doc) from this cosine
    },
    "replay": {
        "zone_sample": 200,
        "control_sample": 100,
        "knn_k": 7,
        "knn_min": 3,
        "knn_cosine": 0.6,
        # the answer-fit model (review.loop.replay): logged Info requests it learns from, window, floor
        "fit_model_sample": 1500,
        "fit_model_k": 300,
        "fit_model_min": 300,
        # an existing action nobody reached in the window: the window's mean action outcome, from this
        # many logged action requests (fewer: unknown, 0)
        "action_prior_min": 30,
    },
    "score": {
        "a_confirmed": 1.0,
        "b_uncertain": 0.3,
        "c_lowconf": 0.7,
        "kappa_silence": 0.3,
        "action_weight": 1.0,
        "fit_weight": 0.5,
        "ambiguity_weight": 0.3,
        "path_weight": 0.2,
        "lambda_complexity": 0.02,
        "mu_taxonomy": 1.0,
        "nu_security": 2.0,
    },
    "gedig": {
        "lam": 1.0,
        "gamma": 1.0,
        "c_max": 20.0,
        "max_hops": 3,
        "temperature": 0.1,
        # the AG/DG gates before auto-commit (review.loop.gedig_gate): θ_AG / θ_DG are these percentiles of
        # g0 / b over the project's last `history_window` proposal gauges from earlier nights (per kind
        # when the kind has `min_history` of them); with fewer than `min_history` in all, the fixed
        # theta_ag / theta_dg stand in
        "theta_ag": 0.3,
        "theta_dg": 0.0,
        "ag_percentile": 90.0,
        "dg_percentile": 50.0,
        "min_history": 30,
        "history_window": 500,
    },
    "bins": {
        "high_score": 0.08,
        "mid_score": 0.01,
        "min_confirmed_gain": 0.03,
        "min_coverage": 0.3,
        "max_uncertain_share": 0.5,
        "min_zone_interactions": 20,
        "autocommit_kinds": ["EDGE_ADD", "EDGE_WEIGHT", "EDGE_INHIBIT", "MERGE", "LABEL_PROMOTE"],
        # kinds that change where a label sits in the taxonomy rather than where requests go: replay
        # measures routing, so a score below mid_score goes to an expert unless, without its ambiguity
        # term, it is ≤ −mid_score (measured harm to answers, landings or paths)
        "placement_kinds": ["LABEL_REATTACH"],
        "critical_clusters": [],
        "boost_uncertain_share": 0.6,
        "boost_active_check_rate": 0.3,
        "silent_samples": 20,
    },
}

# Retention of the request logs (inference.retention, beat entry "inference-logs-purge" an hour after the
# nightly loop): InferenceLog rows (their feedback with them) and ActionExecution rows older than this many
# days are deleted. 0 keeps them forever; any other value must cover the window the nightly loop reads.
LOG_RETENTION_DAYS = env_int(
    "ARG_LOG_RETENTION_DAYS",
    90,
    doc="days request logs, feedback and action runs are kept (0 = forever; else >= the loop's window)",
)
_loop_window_days = int(str(OFFLINE_LOOP["window_days"]))
if LOG_RETENTION_DAYS < 0 or 0 < LOG_RETENTION_DAYS < _loop_window_days:
    raise ImproperlyConfigured(
        f"ARG_LOG_RETENTION_DAYS={LOG_RETENTION_DAYS}: use 0 (keep forever) or at least "
        f"{_loop_window_days}, the days of logs the nightly offline loop reads"
    )

# --- Models and the optional LLM ------------------------------------------------------------------
EMBEDDER_BATCH_SIZE = env_int("ARG_EMBEDDER_BATCH_SIZE", 64, doc="sentences per embedding batch")
EMBEDDER_CACHE_SIZE = env_int(
    "ARG_EMBEDDER_CACHE_SIZE", 50_000, doc="embeddings kept in the content-hash cache"
)
EMBEDDER_RUNTIME = env_str(
    "ARG_EMBEDDER_RUNTIME",
    "onnx",
    doc="what runs the encoder's forward pass: onnx (onnxruntime, default, ≈ 2.4× faster) | torch",
)
if EMBEDDER_RUNTIME not in ("onnx", "torch"):
    raise ImproperlyConfigured(f"ARG_EMBEDDER_RUNTIME must be onnx or torch, not {EMBEDDER_RUNTIME!r}")
# Curation guard-rail (taxonomy.term_guard): a new synonym or example whose embedding cosine with another
# label's name, synonym or example reaches this value is "very close" — refused unless the curator
# confirms it; the release review lists such pairs. 0.90 separates near-paraphrases on the demo pack.
TERM_SIMILARITY_THRESHOLD = float(
    env_str(
        "ARG_TERM_SIMILARITY_THRESHOLD",
        "0.90",
        doc="cosine from which a new synonym/example counts as very close to another label's term",
    )
)
if not 0.0 < TERM_SIMILARITY_THRESHOLD <= 1.0:
    raise ImproperlyConfigured("ARG_TERM_SIMILARITY_THRESHOLD must be in (0, 1]")
# Context Weaver (inference/steps/weaver.py): the label-index vector Top-K (ARG §2.3.1, 10–20), and which
# labels the distilled classifier chooses among — protocol: only C = L_raw (lexical top-20) ∪ that Top-K;
# all: every label of the release. The default is all: protocol cost 1.1 pt of CLINC150 in-scope accuracy
# and changed nothing on the demo prompt set (docs/benchmarks.md, "Lexical-first candidates").
WEAVER_TOP_K = env_int(
    "ARG_WEAVER_TOP_K", 15, doc="Context Weaver: labels surfaced by the label vector search"
)
if WEAVER_TOP_K < 1:
    raise ImproperlyConfigured("ARG_WEAVER_TOP_K must be at least 1")
WEAVER_CANDIDATES = env_str(
    "ARG_WEAVER_CANDIDATES",
    "protocol",
    doc="labels the weaver's classifier chooses among: protocol (L_raw ∪ vector Top-K) | all",
)
if WEAVER_CANDIDATES not in ("protocol", "all"):
    raise ImproperlyConfigured(f"ARG_WEAVER_CANDIDATES must be protocol or all, not {WEAVER_CANDIDATES!r}")
CLASSIFIER_FINETUNE = env_str(
    "ARG_CLASSIFIER_FINETUNE",
    "auto",
    doc="fine-tune the release encoder on the label examples at publication: auto | on | off",
)
CLASSIFIER_FINETUNE_MIN_EXAMPLES = env_int(
    "ARG_CLASSIFIER_FINETUNE_MIN_EXAMPLES", 2000, doc="auto: fine-tune from this many validated examples"
)
CLASSIFIER_FINETUNE_MIN_PER_LABEL = env_int(
    "ARG_CLASSIFIER_FINETUNE_MIN_PER_LABEL", 20, doc="auto: … and at least this many per label on average"
)
CLASSIFIER_FINETUNE_EPOCHS = env_int("ARG_CLASSIFIER_FINETUNE_EPOCHS", 3, doc="fine-tuning epochs")
LLM_URL = env_str("ARG_LLM_URL", "", doc="OpenAI-compatible endpoint; empty = no LLM (extractive answers)")
LLM_MODEL = env_str("ARG_LLM_MODEL", "", doc="model name sent to the LLM endpoint")
LLM_API_KEY = env_str("ARG_LLM_API_KEY", "", doc="bearer token for the LLM endpoint")
LLM_TIMEOUT_S = env_int("ARG_LLM_TIMEOUT_S", 20, doc="LLM request timeout (s)")
# The bounded label proposer (inference/steps/proposer.py) asks the LLM on escalation only, on the hot
# path: its own short timeout, and at most this many calls per process per minute (0 = never asked).
LLM_PROPOSER_PER_MINUTE = env_int(
    "ARG_LLM_PROPOSER_PER_MINUTE", 60, doc="label proposer: LLM calls per process per minute (0 = off)"
)
LLM_PROPOSER_TIMEOUT_MS = env_int(
    "ARG_LLM_PROPOSER_TIMEOUT_MS", 2000, doc="label proposer: LLM timeout (ms); a late answer abstains"
)

# --- Memory (memory/: episodic memory, Info Registry, Memory Guard) -------------------------------
MEMORY_LABEL_SIGNATURE = env_str(
    "ARG_MEMORY_LABEL_SIGNATURE", "primary", doc="LabelSignature of an InfoKey: primary | set (of LabelIDs)"
)
if MEMORY_LABEL_SIGNATURE not in {"primary", "set"}:
    raise ImproperlyConfigured(
        f"ARG_MEMORY_LABEL_SIGNATURE={MEMORY_LABEL_SIGNATURE!r}: use 'primary' or 'set'"
    )
MEMORY_LLM_COMPARE = env_bool(
    "ARG_MEMORY_LLM_COMPARE", False, doc="ask the LLM SAME/DIFFERENT/UNSURE on grey-zone memory merges"
)
MEMORY_PHONE_REGIONS = env_list(
    "ARG_MEMORY_PHONE_REGIONS", ["US", "GB", "FR", "DE"], doc="regions of phone numbers written without +"
)
MEMORY_MAX_FACT_CHARS = env_int(
    "ARG_MEMORY_MAX_FACT_CHARS", 2000, doc="longest memorizable fact (characters)"
)
if not 1 <= MEMORY_MAX_FACT_CHARS <= 4000:
    raise ImproperlyConfigured("ARG_MEMORY_MAX_FACT_CHARS must be between 1 and 4000")
# Offline consolidation (memory.services.consolidation, the nightly loop's first step): a private fact
# becomes a GLOBAL semantic unit when at least `min_subjects` distinct users (or orgs) wrote it, in at
# least `min_sessions` sessions spanning `min_span_hours`, with evidence in the last `window_days` days.
# `min_subjects` below 2 is refused: it would aggregate one person's facts.
MEMORY_CONSOLIDATION = {"window_days": 30, "min_subjects": 3, "min_sessions": 2, "min_span_hours": 24.0}
ACTION_TIMEOUT_S = env_int("ARG_ACTION_TIMEOUT_S", 5, doc="action webhook timeout (s)")
OUTBOUND_ALLOW = env_list(
    "ARG_OUTBOUND_ALLOW",
    [],
    doc="internal hosts / IPs / CIDRs that webhooks and the LLM client may call (default: public only)",
)
ACTION_HANDLER_MODULES = env_list(
    "ARG_ACTION_HANDLER_MODULES",
    [],
    doc="modules imported to register Python action handlers (the demo pack's: packs.demo.handlers)",
)

# --- Review notifications -------------------------------------------------------------------------
REVIEW_WEBHOOK_URL = env_str(
    "ARG_REVIEW_WEBHOOK_URL", "", doc="URL POSTed a JSON summary when proposals await review (empty = off)"
)
REVIEW_EMAIL = env_bool("ARG_REVIEW_EMAIL", False, doc="email reviewers when proposals await review")
EMAIL_HOST = env_str("ARG_EMAIL_HOST", "localhost", doc="SMTP host for review emails")
EMAIL_PORT = env_int("ARG_EMAIL_PORT", 25, doc="SMTP port for review emails")
DEFAULT_FROM_EMAIL = env_str("ARG_EMAIL_FROM", "arg@localhost", doc="sender of review emails")

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
        "axes": {"level": "WARNING"},  # failed sign-ins and lock-outs; not every successful one
    },
}

# --- Metrics, cache, rate limits --------------------------------------------------------------------
# prometheus_client multiprocess mode: every gunicorn worker and Celery process writes its samples to
# files in this folder and GET /metrics adds them up. It must be in the environment before
# prometheus_client is first imported (arg_platform.metrics), hence here.
PROMETHEUS_MULTIPROC_DIR = Path(
    env_str(
        "PROMETHEUS_MULTIPROC_DIR",
        str(DATA_DIR / "prometheus"),
        doc="folder of the per-process metric files (shared by web and worker)",
    )
)
PROMETHEUS_MULTIPROC_DIR.mkdir(parents=True, exist_ok=True)
os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(PROMETHEUS_MULTIPROC_DIR)
METRICS_TOKEN = env_str(
    "ARG_METRICS_TOKEN", "", doc="bearer secret of GET /metrics for Prometheus (empty: staff sessions only)"
)
if PRODUCTION and METRICS_TOKEN and len(METRICS_TOKEN) < 32:
    raise ImproperlyConfigured("ARG_METRICS_TOKEN must be at least 32 characters")

# Every process must share the cache: files under ARG_DATA_DIR (embedded: gunicorn workers and CLI on
# one host) or Redis (production, where it also holds the rate-limit counters: RATE_LIMIT_STORE).
_cache_url = env_str(
    "ARG_CACHE_URL", "", doc="redis://… in production; empty = file cache under ARG_DATA_DIR"
)
CACHES: dict[str, dict[str, object]]
if _cache_url.startswith(("redis://", "rediss://")):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _cache_url}}
elif not _cache_url:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(DATA_DIR / "cache"),
            "OPTIONS": {"MAX_ENTRIES": 20_000},
        }
    }
else:
    raise ImproperlyConfigured(f"ARG_CACHE_URL={_cache_url!r}: use redis://… or leave it empty")

RATE_LIMITS = {
    "infer": env_str("ARG_RATE_LIMIT_INFER", "3000/min", doc="per-token budget of POST /api/v1/infer"),
    "feedback": env_str(
        "ARG_RATE_LIMIT_FEEDBACK", "3000/min", doc="per-token budget of POST /api/v1/feedback"
    ),
    "api": env_str("ARG_RATE_LIMIT_API", "600/min", doc="per-token budget of every other API endpoint"),
}
for _scope, _rate in RATE_LIMITS.items():
    rate_parse(_rate, name=f"ARG_RATE_LIMIT_{_scope.upper()}")  # a malformed rate stops the start-up
RATE_LIMIT_STORE = env_str(
    "ARG_RATE_LIMIT_STORE",
    "cache" if _cache_url else "sqlite",
    doc="where the rate-limit counters live: sqlite (one file under ARG_DATA_DIR, one atomic statement "
    "per check; the default without ARG_CACHE_URL) | cache (Django's cache: Redis with ARG_CACHE_URL)",
)
if RATE_LIMIT_STORE not in ("sqlite", "cache"):
    raise ImproperlyConfigured(f"ARG_RATE_LIMIT_STORE must be sqlite or cache, not {RATE_LIMIT_STORE!r}")
TOKEN_AUTH_CACHE_S = env_int(
    "ARG_TOKEN_AUTH_CACHE_S",
    30,
    doc="seconds a process keeps an authenticated API token's row (revocation and expiry are still read "
    "on every request); 0 = no cache",
)

# --- Imports: packs and SKOS files (docs/security.md#hostile-files) --------------------------------
IMPORT_MAX_BYTES = env_int(
    "ARG_IMPORT_MAX_BYTES",
    50 * 2**20,
    doc="largest pack or SKOS file an import accepts (bytes): browser, API and import commands; "
    "a larger one is refused before it is read",
)
if IMPORT_MAX_BYTES < 1:
    raise ImproperlyConfigured("ARG_IMPORT_MAX_BYTES must be a positive number of bytes")

# --- Sign-in throttling (django-axes: arg_platform.login_throttling, docs/security.md#logins) -------
LOGIN_FAILURE_LIMIT = env_int(
    "ARG_LOGIN_FAILURE_LIMIT",
    5,
    doc="failed sign-ins, counted per account and per client address, that lock that account or address out",
)
LOGIN_LOCKOUT_MINUTES = env_int(
    "ARG_LOGIN_LOCKOUT_MINUTES",
    15,
    doc="how long a lock-out lasts, and how long failed sign-ins count after the last one (minutes)",
)
if LOGIN_FAILURE_LIMIT < 1 or LOGIN_LOCKOUT_MINUTES < 1:
    raise ImproperlyConfigured("ARG_LOGIN_FAILURE_LIMIT and ARG_LOGIN_LOCKOUT_MINUTES must be at least 1")
PROXY_COUNT = env_int(
    "ARG_PROXY_COUNT",
    1 if PRODUCTION else 0,
    doc="reverse proxies in front of web that append the client's address to X-Forwarded-For (the TLS "
    "proxy in production); 0 = the connection's address is the client's, X-Forwarded-For is ignored",
)
if PROXY_COUNT < 0:
    raise ImproperlyConfigured("ARG_PROXY_COUNT must be 0 or more")
AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out account or address before any password is checked.
    "arg_platform.login_throttling.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=LOGIN_LOCKOUT_MINUTES)
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either count locks: the account, or the address
AXES_RESET_ON_SUCCESS = True  # for that account from that address only (LoginAttemptHandler)
# A refused attempt during a lock-out neither extends it nor is written again (its row would grow).
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_HANDLER = "arg_platform.login_throttling.LoginAttemptHandler"
AXES_CLIENT_IP_CALLABLE = "arg_platform.login_throttling.client_ip_address"
AXES_LOCKOUT_CALLABLE = "arg_platform.login_throttling.login_locked_out_response"
AXES_ENABLE_ACCESS_FAILURE_LOG = True  # every failed sign-in, listed in the admin
AXES_SENSITIVE_PARAMETERS = ["username", "ip_address", "csrfmiddlewaretoken"]  # masked in logs and rows
AXES_VERBOSE = False  # no start-up banner in every process

# --- Security (production) ------------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the cookie-less meta tag; harmless either way
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
# Every response, in every mode (so the browser tests run the pages under it): arg_platform.csp.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("ARG_SECURE_SSL_REDIRECT", True, doc="redirect http to https")
    # The container's own probe asks over plain HTTP on loopback; anonymously /healthz says only up/down.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
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
