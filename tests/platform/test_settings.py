"""Settings read from the environment: embedded defaults, production refusals, a clean deploy check.

Each test runs a fresh interpreter (the venv's, ``sys.executable``) with a clean environment, because
settings are read once at import and the test process has its own.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Imports the settings module the way Django does and prints the values under test, or the message
# of the ImproperlyConfigured it raised (exit code 3).
PROBE = """
import json, sys
from django.core.exceptions import ImproperlyConfigured
try:
    from arg_platform import settings as s
except ImproperlyConfigured as exc:
    print(json.dumps({"error": str(exc)}))
    sys.exit(3)
from arg_platform.env import ENV_VARS
db = s.DATABASES["default"]
print(json.dumps({
    "engine": db["ENGINE"], "db_name": str(db["NAME"]), "db_host": db.get("HOST", ""),
    "conn_max_age": db["CONN_MAX_AGE"], "graph_backend": s.GRAPH_BACKEND, "neo4j_uri": s.NEO4J_URI,
    "broker": s.CELERY_BROKER_URL, "result_backend": s.CELERY_RESULT_BACKEND, "debug": s.DEBUG,
    "allowed_hosts": s.ALLOWED_HOSTS, "log_format": s.LOG_FORMAT, "secret_len": len(s.SECRET_KEY),
    "ssl_redirect": getattr(s, "SECURE_SSL_REDIRECT", False), "env_vars": ENV_VARS,
    "redirect_exempt": getattr(s, "SECURE_REDIRECT_EXEMPT", []), "csp": s.CONTENT_SECURITY_POLICY,
    "middleware": s.MIDDLEWARE,
}))
"""


def clean_env(home: Path, **variables: str) -> dict[str, str]:
    """Only what a process needs to run, plus ``variables``; nothing of the test process's ARG_* leaks."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "DJANGO_SETTINGS_MODULE": "arg_platform.settings",
    }
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "LANG", "LC_ALL"):  # machine quirks, not config
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(variables)
    return env


def probe(home: Path, **variables: str) -> tuple[int, dict]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=clean_env(home, **variables),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 3), done.stderr
    return done.returncode, json.loads(done.stdout)


def strong_secret() -> str:
    return secrets.token_urlsafe(64)


def production(tmp_path: Path, **variables: str) -> dict[str, str]:
    """A complete production configuration on a throwaway SQLite file, overridable per test."""
    base = {
        "ARG_ENV": "production",
        "ARG_SECRET_KEY": strong_secret(),
        "ARG_ALLOWED_HOSTS": "arg.example.com",
        "ARG_DATA_DIR": str(tmp_path / "data"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'arg.sqlite3'}",
    }
    base.update(variables)
    return {name: value for name, value in base.items() if value is not None}


def check_deploy(tmp_path: Path, variables: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=clean_env(tmp_path, **variables),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_embedded_defaults_need_no_variable_at_all(tmp_path):
    code, out = probe(tmp_path)

    assert code == 0
    assert out["engine"] == "django.db.backends.sqlite3"
    assert out["db_name"] == str(ROOT / "var" / "arg.sqlite3")
    assert out["conn_max_age"] == 60
    assert out["graph_backend"] == "sql"
    assert out["neo4j_uri"] == ""
    assert out["broker"] == "filesystem://"
    assert out["result_backend"] == f"file://{ROOT / 'var' / 'celery' / 'results'}"
    assert out["debug"] is False
    assert out["allowed_hosts"] == ["localhost", "127.0.0.1", "[::1]", "testserver"]
    assert out["log_format"] == "text"
    assert out["secret_len"] >= 50


def test_embedded_data_dir_moves_database_and_celery_files(tmp_path):
    code, out = probe(tmp_path, ARG_DATA_DIR=str(tmp_path / "state"))

    assert code == 0
    assert out["db_name"] == str(tmp_path / "state" / "arg.sqlite3")
    assert out["broker"] == "filesystem://"
    assert out["result_backend"] == f"file://{tmp_path / 'state' / 'celery' / 'results'}"


def test_empty_values_mean_the_defaults(tmp_path):
    # What an operator gets from `NAME=` lines in a copied .env.example.
    code, out = probe(
        tmp_path,
        ARG_ENV="",
        DATABASE_URL="",
        ARG_GRAPH_BACKEND="",
        CELERY_BROKER_URL="",
        ARG_LOG_FORMAT="",
        ARG_DEBUG="",
        ARG_DB_CONN_MAX_AGE="",
        ARG_ALLOWED_HOSTS="",
    )

    assert code == 0
    assert out["engine"] == "django.db.backends.sqlite3"
    assert out["graph_backend"] == "sql"
    assert out["broker"] == "filesystem://"
    assert out["log_format"] == "text"
    assert out["debug"] is False
    assert out["conn_max_age"] == 60
    assert out["allowed_hosts"] == ["localhost", "127.0.0.1", "[::1]", "testserver"]


def test_production_reads_postgres_neo4j_and_redis(tmp_path):
    code, out = probe(
        tmp_path,
        **production(
            tmp_path,
            DATABASE_URL="postgres://arg:pw@postgres:5432/arg",
            ARG_GRAPH_BACKEND="neo4j",
            NEO4J_URI="neo4j://neo4j:7687",
            CELERY_BROKER_URL="redis://redis:6379/0",
            CELERY_RESULT_BACKEND="redis://redis:6379/1",
        ),
    )

    assert code == 0
    assert out["engine"] == "django.db.backends.postgresql"
    assert (out["db_name"], out["db_host"], out["conn_max_age"]) == ("arg", "postgres", 60)
    assert (out["graph_backend"], out["neo4j_uri"]) == ("neo4j", "neo4j://neo4j:7687")
    assert (out["broker"], out["result_backend"]) == ("redis://redis:6379/0", "redis://redis:6379/1")
    assert out["allowed_hosts"] == ["arg.example.com"]
    assert out["log_format"] == "json"
    assert out["ssl_redirect"] is True
    assert out["debug"] is False
    assert "arg_platform.csp.ContentSecurityPolicyMiddleware" in out["middleware"]
    assert "script-src 'self';" in out["csp"] and "frame-ancestors 'none'" in out["csp"]
    # celery beat keeps its schedule file under ARG_DATA_DIR/celery with any broker.
    assert (tmp_path / "data" / "celery").is_dir()


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"ARG_SECRET_KEY": None}, "ARG_SECRET_KEY must be set when ARG_ENV=production"),
        ({"ARG_SECRET_KEY": ""}, "ARG_SECRET_KEY must be set when ARG_ENV=production"),
        ({"ARG_ALLOWED_HOSTS": None}, "ARG_ALLOWED_HOSTS must be set when ARG_ENV=production"),
        ({"ARG_ALLOWED_HOSTS": " , "}, "ARG_ALLOWED_HOSTS must be set when ARG_ENV=production"),
        (
            {"ARG_SECRET_KEY": "too-short-for-production"},
            "ARG_SECRET_KEY must be at least 50 characters with 5 distinct ones",
        ),
        ({"ARG_SECRET_KEY": "ab" * 40}, "ARG_SECRET_KEY must be at least 50 characters with 5 distinct ones"),
        ({"ARG_DEBUG": "true"}, "ARG_DEBUG must be false when ARG_ENV=production"),
    ],
    ids=[
        "no-secret",
        "empty-secret",
        "no-hosts",
        "blank-hosts",
        "short-secret",
        "low-entropy-secret",
        "debug",
    ],
)
def test_production_refuses_to_start_without_secret_and_hosts(tmp_path, variables, message):
    code, out = probe(tmp_path, **production(tmp_path, **variables))

    assert code == 3
    assert out == {"error": message}


def test_production_refusal_stops_manage_py_with_the_name(tmp_path):
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=clean_env(tmp_path, **production(tmp_path, ARG_SECRET_KEY=None)),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "django.core.exceptions.ImproperlyConfigured: ARG_SECRET_KEY must be set when ARG_ENV=production"
    )
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"ARG_ENV": "x"}, "ARG_ENV='x': use 'embedded' or 'production'"),
        ({"ARG_GRAPH_BACKEND": "foo"}, "ARG_GRAPH_BACKEND='foo': use 'sql' or 'neo4j'"),
        ({"ARG_GRAPH_BACKEND": "neo4j"}, "NEO4J_URI must be set when ARG_GRAPH_BACKEND=neo4j"),
        ({"ARG_DEBUG": "maybe"}, "ARG_DEBUG='maybe' is not a boolean (use true/false)"),
        ({"ARG_EMBEDDER_BATCH_SIZE": "many"}, "ARG_EMBEDDER_BATCH_SIZE='many' is not an integer"),
    ],
    ids=["env", "graph-backend", "neo4j-without-uri", "bool", "int"],
)
def test_bad_values_name_the_variable(tmp_path, variables, message):
    code, out = probe(tmp_path, **variables)

    assert code == 3
    assert out == {"error": message}


@pytest.mark.parametrize(
    ("variables", "silenced"),
    [({}, 0), ({"ARG_SECURE_SSL_REDIRECT": "false"}, 1)],
    ids=["default", "proxy-redirects"],
)
def test_check_deploy_reports_nothing_in_production(tmp_path, variables, silenced):
    done = check_deploy(tmp_path, production(tmp_path, **variables))

    assert done.returncode == 0, done.stderr
    assert done.stdout == f"System check identified no issues ({silenced} silenced).\n"
    assert done.stderr == ""


def test_check_deploy_is_not_vacuous(tmp_path):
    # Given a production configuration an operator weakened: no HSTS.
    done = check_deploy(tmp_path, production(tmp_path, ARG_HSTS_SECONDS="0"))

    assert done.returncode == 1
    assert "(security.W004) You have not set a value for the SECURE_HSTS_SECONDS setting." in done.stderr
    assert "System check identified 1 issue (0 silenced)." in done.stderr


@pytest.mark.parametrize("mode", ["embedded", "production"])
def test_every_variable_read_is_documented(tmp_path, mode):
    variables = production(tmp_path) if mode == "production" else {}
    code, out = probe(tmp_path, **variables)

    assert code == 0
    undocumented = sorted(name for name, doc in out["env_vars"].items() if not doc.strip())
    assert undocumented == []


@pytest.mark.django_db
def test_production_redirects_metrics_to_https_and_only_the_probe_stays_on_http(tmp_path, settings, client):
    """Over plain HTTP in production, /metrics (and everything else) answers a redirect to HTTPS, so
    its bearer token never has to travel in clear; only the anonymous up/down of /healthz is served."""
    code, out = probe(tmp_path, **production(tmp_path))
    assert code == 0
    settings.SECURE_SSL_REDIRECT = out["ssl_redirect"]
    settings.SECURE_REDIRECT_EXEMPT = out["redirect_exempt"]
    for path in ("/metrics", "/api/v1/infer", "/accounts/login/"):
        response = client.get(path)
        assert response.status_code == 301 and response["Location"] == f"https://testserver{path}", path
    health = client.get("/healthz")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    assert health["Content-Security-Policy"] == settings.CONTENT_SECURITY_POLICY
