"""The production path, read as files: docker-compose.yml, Dockerfile, .env.example.

No Docker engine is needed (none runs here): the compose file is parsed with PyYAML (anchors and
``<<`` merge keys resolved by ``safe_load``) and compared with what the settings actually read, as
recorded in ``arg_platform.env.ENV_VARS`` by a fresh interpreter in each mode.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, dict] = COMPOSE["services"]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
ENV_EXAMPLE = (ROOT / ".env.example").read_text()

PRODUCTION_SERVICES = {"neo4j", "postgres", "redis", "web", "worker", "beat"}
APP_SERVICES = ("web", "worker", "beat")
BACKING_SERVICES = ("postgres", "redis", "neo4j")
# Set on the app containers but read by Django's entry points, the Hugging Face hub and Python,
# not by the settings.
RUNTIME_VARIABLES = {"DJANGO_SETTINGS_MODULE", "HF_HUB_OFFLINE", "PYTHONUNBUFFERED"}
BLAS_VARIABLES = {"OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}  # read by numpy's BLAS (app services)
SUBSTITUTION = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


def clean_env(**variables: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "DJANGO_SETTINGS_MODULE": "arg_platform.settings",
    }
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "LANG", "LC_ALL"):
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(variables)
    return env


def run_python(code: str, variables: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=clean_env(**variables),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def settings_names(tmp_path_factory: pytest.TempPathFactory) -> frozenset[str]:
    """Every name the settings read, embedded and production (some are read in one mode only)."""
    data_dir = str(tmp_path_factory.mktemp("data"))
    code = (
        "import json; from arg_platform import settings;"
        "from arg_platform.env import ENV_VARS; print(json.dumps(list(ENV_VARS)))"
    )
    names: set[str] = set()
    for variables in (
        {"ARG_DATA_DIR": data_dir},
        {
            "ARG_DATA_DIR": data_dir,
            "ARG_ENV": "production",
            "ARG_SECRET_KEY": secrets.token_urlsafe(64),
            "ARG_ALLOWED_HOSTS": "arg.example.com",
        },
    ):
        names.update(json.loads(run_python(code, variables)))
    return frozenset(names)


def environment(service: dict) -> dict[str, str]:
    raw = service.get("environment") or {}
    if isinstance(raw, list):
        raw = dict(item.split("=", 1) for item in raw)
    return {name: "" if value is None else str(value) for name, value in raw.items()}


def command_text(service: dict) -> str:
    command = service["command"]
    return command if isinstance(command, str) else " ".join(command)


def healthcheck_text(service: dict) -> str:
    test = service["healthcheck"]["test"]
    return test if isinstance(test, str) else " ".join(test)


def interpolate(value: str, variables: dict[str, str]) -> str:
    """Compose's ${NAME}, ${NAME:-default} and ${NAME:?error} (enough for this file; no nesting)."""

    def substitute(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        current = variables.get(name, "")
        if op == ":?" and not current:
            raise LookupError(f"{name}: {arg}")
        if op == ":-" and not current:
            return arg
        return current

    return SUBSTITUTION.sub(substitute, value).replace("$$", "$")


def strings(node: object) -> list[str]:
    """Every string value (and key) in the parsed compose file, comments excluded."""
    if isinstance(node, dict):
        return [text for key, value in node.items() for text in (*strings(key), *strings(value))]
    if isinstance(node, list):
        return [text for item in node for text in strings(item)]
    return [node] if isinstance(node, str) else []


def env_example_entries() -> dict[str, tuple[str, bool]]:
    """NAME -> (value, active); ``# NAME=value`` lines list a name whose default is computed."""
    entries: dict[str, tuple[str, bool]] = {}
    for line in ENV_EXAMPLE.splitlines():
        match = re.fullmatch(r"(?P<comment># )?(?P<name>[A-Z][A-Z0-9_]*)=(?P<value>.*)", line)
        if match:
            entries[match["name"]] = (match["value"], not match["comment"])
    return entries


def dockerfile_stage(name: str) -> str:
    match = re.search(rf"^FROM \S+ AS {name}\n(?P<body>.*?)(?=^FROM |\Z)", DOCKERFILE, re.M | re.S)
    assert match, f"no stage {name}"
    return match["body"]


# --- services, healthchecks, ordering, volumes ------------------------------------------------------


def test_compose_runs_the_six_production_services():
    started_by_up = {name for name, service in SERVICES.items() if not service.get("profiles")}

    assert started_by_up == PRODUCTION_SERVICES
    assert {name for name, service in SERVICES.items() if service.get("profiles")} == {"contract-tests"}
    assert SERVICES["contract-tests"]["profiles"] == ["test"]


@pytest.mark.parametrize("name", sorted(PRODUCTION_SERVICES))
def test_every_service_has_a_healthcheck(name):
    healthcheck = SERVICES[name]["healthcheck"]

    assert healthcheck["test"][0] in {"CMD", "CMD-SHELL"}
    assert len(healthcheck["test"]) >= 2
    assert {"interval", "timeout", "retries"} <= set(healthcheck)


@pytest.mark.parametrize(
    ("name", "probe"),
    [
        ("neo4j", "wget -q --spider http://localhost:7474"),
        ("postgres", "pg_isready"),
        ("redis", "redis-cli ping"),
        ("web", "http://127.0.0.1:8000/healthz"),
        ("worker", "celery -A arg_platform inspect ping --destination celery@$$HOSTNAME"),
        ("beat", "Connection(os.environ['CELERY_BROKER_URL']).ensure_connection("),
    ],
)
def test_healthchecks_probe_the_service_itself(name, probe):
    assert probe in healthcheck_text(SERVICES[name])


def test_neo4j_healthcheck_uses_wget_because_the_image_has_no_curl():
    text = healthcheck_text(SERVICES["neo4j"])

    assert "wget" in text
    assert "curl" not in text


def test_app_healthchecks_need_no_curl():
    # The app image is python:3.11-slim without curl: the probes are Python or the celery CLI.
    for name in APP_SERVICES:
        text = healthcheck_text(SERVICES[name])
        assert "curl" not in text
        assert "wget" not in text
    assert SERVICES["web"]["healthcheck"]["test"][:3] == ["CMD", "python", "-c"]
    assert "urllib.request" in SERVICES["web"]["healthcheck"]["test"][3]


def test_web_healthcheck_sends_an_allowed_host():
    # Django answers 400 to a Host outside ALLOWED_HOSTS, so the probe derives one from the setting.
    code = SERVICES["web"]["healthcheck"]["test"][3]
    headers_code = code.split("r.urlopen(")[0] + "print(h)"
    seen = {
        hosts: run_python(headers_code, {"ARG_ALLOWED_HOSTS": hosts}).strip()
        for hosts in ("arg.example.com,www.example.com", ".example.com", "*")
    }

    assert seen == {
        "arg.example.com,www.example.com": "arg.example.com",
        ".example.com": "example.com",
        "*": "localhost",
    }


@pytest.mark.parametrize("name", APP_SERVICES)
def test_app_services_wait_for_healthy_backing_services(name):
    depends_on = SERVICES[name]["depends_on"]

    for backing in BACKING_SERVICES:
        assert depends_on[backing] == {"condition": "service_healthy"}


@pytest.mark.parametrize("name", ["worker", "beat"])
def test_worker_and_beat_start_after_web_migrated_the_database(name):
    assert SERVICES[name]["depends_on"]["web"] == {"condition": "service_healthy"}


def test_web_migrates_creates_the_graph_schema_then_serves_with_gunicorn():
    command = command_text(SERVICES["web"])

    assert SERVICES["web"]["command"][:2] == ["sh", "-c"]
    assert (
        command.index("python manage.py migrate --noinput &&")
        < command.index("python manage.py graph_init_schema &&")
        < command.index("exec gunicorn arg_platform.wsgi:application")
    )
    assert "--bind 0.0.0.0:8000" in command
    assert SERVICES["web"]["build"] == {"context": ".", "target": "runtime"}


def test_worker_and_beat_run_celery_on_the_platform_app():
    assert SERVICES["worker"]["command"][:4] == ["celery", "-A", "arg_platform", "worker"]
    assert SERVICES["beat"]["command"][:4] == ["celery", "-A", "arg_platform", "beat"]


def test_app_services_share_one_image():
    images = {SERVICES[name]["image"] for name in APP_SERVICES}

    assert images == {"${APP_IMAGE:-arg-platform:latest}"}


def test_data_lives_on_declared_named_volumes():
    declared = set(COMPOSE["volumes"])
    mounts = {
        (name, mount.split(":", 1)[1])
        for name, service in SERVICES.items()
        for mount in service.get("volumes", [])
    }
    named = {mount.split(":", 1)[0] for service in SERVICES.values() for mount in service.get("volumes", [])}

    assert named == declared
    assert {
        ("neo4j", "/data"),
        ("postgres", "/var/lib/postgresql/data"),
        ("redis", "/data"),
        ("beat", "/app/var/celery"),
    } <= mounts


def test_neo4j_is_5_26_with_the_gds_plugin_and_memory_settings():
    neo4j = SERVICES["neo4j"]
    env = environment(neo4j)

    assert neo4j["image"] == "neo4j:5.26-community"
    assert json.loads(env["NEO4J_PLUGINS"]) == ["graph-data-science"]
    assert env["NEO4J_dbms_security_procedures_unrestricted"] == "gds.*"
    assert {
        "NEO4J_server_memory_heap_initial__size",
        "NEO4J_server_memory_heap_max__size",
        "NEO4J_server_memory_pagecache_size",
    } <= set(env)


def test_deploy_doc_names_the_neo4j_and_gds_pairing():
    deploy = (ROOT / "docs" / "deploy.md").read_text()

    assert "Neo4j 5.26" in deploy
    assert "GDS 2.13" in deploy


# --- environment wiring --------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*APP_SERVICES, "contract-tests"])
def test_app_containers_set_only_variables_the_settings_read(name, settings_names):
    env = environment(SERVICES[name])

    unknown = sorted(set(env) - settings_names - RUNTIME_VARIABLES - BLAS_VARIABLES)
    assert unknown == []
    assert set(env) >= RUNTIME_VARIABLES


def test_app_containers_get_the_production_wiring():
    env = environment(SERVICES["web"])

    assert environment(SERVICES["worker"]) == env
    assert environment(SERVICES["beat"]) == env
    assert env["ARG_ENV"] == "production"
    assert env["ARG_GRAPH_BACKEND"] == "neo4j"
    assert env["NEO4J_URI"] == "neo4j://neo4j:7687"
    assert env["NEO4J_USER"] == "neo4j"
    assert env["DATABASE_URL"].startswith("postgres://")
    assert env["DATABASE_URL"].endswith("@postgres:5432/${POSTGRES_DB:-arg}")
    assert env["CELERY_BROKER_URL"] == "redis://redis:6379/0"
    assert env["CELERY_RESULT_BACKEND"] == "redis://redis:6379/1"
    assert env["HF_HUB_OFFLINE"] == "1"
    # numpy's BLAS single-threaded, like the embedded supervisor's children (operators may override)
    assert env["OPENBLAS_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "1"
    assert "ARG_DEBUG" not in env
    assert "CELERY_TASK_ALWAYS_EAGER" not in env


@pytest.mark.parametrize(
    ("service", "variable", "prefix"),
    [
        ("web", "ARG_SECRET_KEY", "${ARG_SECRET_KEY:?"),
        ("web", "ARG_ALLOWED_HOSTS", "${ARG_ALLOWED_HOSTS:?"),
        ("web", "NEO4J_PASSWORD", "${NEO4J_PASSWORD:?"),
        ("web", "ARG_LLM_API_KEY", "${ARG_LLM_API_KEY:-"),
        ("neo4j", "NEO4J_AUTH", "neo4j/${NEO4J_PASSWORD:?"),
        ("postgres", "POSTGRES_PASSWORD", "${POSTGRES_PASSWORD:?"),
        ("contract-tests", "NEO4J_PASSWORD", "${NEO4J_PASSWORD:?"),
    ],
)
def test_secrets_come_from_the_env_file(service, variable, prefix):
    assert environment(SERVICES[service])[variable].startswith(prefix)


def test_no_secret_is_written_in_the_compose_file():
    secret_like = re.compile(r"PASSWORD|SECRET|API_KEY|AUTH")
    literal = {
        (name, variable): value
        for name, service in SERVICES.items()
        for variable, value in environment(service).items()
        if secret_like.search(variable) and "${" not in value
    }

    assert literal == {}
    assert "${POSTGRES_PASSWORD:?" in environment(SERVICES["web"])["DATABASE_URL"]


def test_compose_environment_configures_production_settings(tmp_path):
    # Given the .env an operator writes: the example with the four required values filled in.
    dotenv = {name: value for name, (value, active) in env_example_entries().items() if active}
    dotenv |= {
        "ARG_SECRET_KEY": secrets.token_urlsafe(64),
        "ARG_ALLOWED_HOSTS": "arg.example.com",
        "NEO4J_PASSWORD": "neo4j-password-1",
        "POSTGRES_PASSWORD": "postgres-password-1",
    }
    env = {name: interpolate(value, dotenv) for name, value in environment(SERVICES["web"]).items()}
    env["ARG_DATA_DIR"] = str(tmp_path)  # /app/var exists in the image, not on this machine
    code = (
        "import json; from arg_platform import settings as s; db = s.DATABASES['default'];"
        "print(json.dumps([db['ENGINE'], db['HOST'], db['NAME'], db['USER'], db['PASSWORD'], s.GRAPH_BACKEND,"
        "s.NEO4J_URI, s.NEO4J_PASSWORD, s.CELERY_BROKER_URL, s.CELERY_RESULT_BACKEND, s.ALLOWED_HOSTS,"
        "s.LOG_FORMAT, s.DEBUG, s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.EMBEDDER_BATCH_SIZE, s.LLM_URL]))"
    )

    seen = json.loads(run_python(code, env))

    assert seen == [
        "django.db.backends.postgresql",
        "postgres",
        "arg",
        "arg",
        "postgres-password-1",
        "neo4j",
        "neo4j://neo4j:7687",
        "neo4j-password-1",
        "redis://redis:6379/0",
        "redis://redis:6379/1",
        ["arg.example.com"],
        "json",
        False,
        True,
        31_536_000,
        64,
        "",
    ]


def test_compose_environment_passes_the_deploy_check(tmp_path):
    dotenv = {name: value for name, (value, active) in env_example_entries().items() if active}
    dotenv |= {
        "ARG_SECRET_KEY": secrets.token_urlsafe(64),
        "ARG_ALLOWED_HOSTS": "arg.example.com",
        "NEO4J_PASSWORD": "neo4j-password-1",
        "POSTGRES_PASSWORD": "postgres-password-1",
    }
    env = {name: interpolate(value, dotenv) for name, value in environment(SERVICES["web"]).items()}
    env["ARG_DATA_DIR"] = str(tmp_path)

    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == "System check identified no issues (0 silenced).\n"


def test_the_unedited_example_does_not_start_production():
    # compose refuses an empty ${NAME:?} value, so copying .env.example without setting the secrets fails.
    dotenv = {name: value for name, (value, active) in env_example_entries().items() if active}

    for required in ("ARG_SECRET_KEY", "ARG_ALLOWED_HOSTS", "NEO4J_PASSWORD", "POSTGRES_PASSWORD"):
        assert dotenv[required] == ""
    with pytest.raises(LookupError, match="ARG_SECRET_KEY: set ARG_SECRET_KEY in .env"):
        interpolate(environment(SERVICES["web"])["ARG_SECRET_KEY"], dotenv)


# --- .env.example ----------------------------------------------------------------------------------


def test_env_example_lists_every_variable_the_settings_read(settings_names):
    missing = sorted(settings_names - set(env_example_entries()))

    assert missing == []


def test_env_example_documents_every_compose_substitution():
    substituted = {match["name"] for text in strings(COMPOSE) for match in SUBSTITUTION.finditer(text)}
    active = {name for name, (_, is_active) in env_example_entries().items() if is_active}

    assert sorted(substituted - active) == []


def test_env_example_values_are_the_defaults(tmp_path):
    # Loading the active lines as they are must give the embedded defaults (empty = default).
    active = {name: value for name, (value, is_active) in env_example_entries().items() if is_active}
    active["ARG_DATA_DIR"] = str(tmp_path)
    code = (
        "import json; from arg_platform import settings as s;"
        "print(json.dumps([s.ARG_ENV, s.DATABASES['default']['ENGINE'], s.GRAPH_BACKEND, s.CELERY_BROKER_URL,"
        "s.LOG_FORMAT, s.DEBUG, s.ALLOWED_HOSTS, s.NIGHTLY_HOUR_UTC, s.EMBEDDER_BATCH_SIZE, s.LLM_TIMEOUT_S,"
        "s.ACTION_HANDLER_MODULES]))"
    )

    assert json.loads(run_python(code, active)) == [
        "embedded",
        "django.db.backends.sqlite3",
        "sql",
        "filesystem://",
        "text",
        False,
        ["localhost", "127.0.0.1", "[::1]", "testserver"],
        2,
        64,
        20,
        [],  # the product registers no action handler; the demo pack's are opted into (make run)
    ]


# --- Dockerfile ------------------------------------------------------------------------------------


def test_dockerfile_installs_the_cpu_torch_pin_before_the_project():
    runtime = dockerfile_stage("runtime")
    torch_line = "pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu torch==2.13.0"

    assert DOCKERFILE.startswith("# syntax=docker/dockerfile:1\n")
    assert "FROM python:3.11-slim AS runtime" in DOCKERFILE
    assert torch_line in runtime
    assert runtime.index(torch_line) < runtime.index("pip install --no-cache-dir -r /tmp/requirements.txt")
    assert runtime.index(torch_line) < runtime.index("pip install --no-cache-dir --no-deps -e .")
    assert set(re.findall(r"torch[=<>~!]=?[\w.+]*", DOCKERFILE)) == {"torch==2.13.0"}
    assert '"torch==2.13.0"' in (ROOT / "pyproject.toml").read_text()


def test_dockerfile_runs_offline_as_a_non_root_user():
    runtime = dockerfile_stage("runtime")

    assert "HF_HUB_OFFLINE=1" in runtime
    assert "python manage.py collectstatic --noinput" in runtime
    assert re.findall(r"^USER (\S+)$", runtime, re.M) == ["arg"]
    assert re.findall(r"^USER (\S+)$", dockerfile_stage("test"), re.M) == ["root", "arg"]


def test_dockerfile_environment_is_settings_or_runtime(settings_names):
    names = set(re.findall(r"^\s*(?:ENV\s+)?([A-Z][A-Z0-9_]*)=\S+\s*\\?$", dockerfile_stage("runtime"), re.M))

    assert names == {
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "DJANGO_SETTINGS_MODULE",
        "ARG_DATA_DIR",
    }
    assert names & settings_names == {"ARG_DATA_DIR"}


def test_dockerignore_keeps_secrets_and_local_state_out_of_the_image():
    ignored = set((ROOT / ".dockerignore").read_text().split())

    assert {".env", ".env.*", "!.env.example", ".git", ".venv", "var", "**/node_modules"} <= ignored
