"""API fuzzing: every operation of the OpenAPI schema, positive and negative cases, never a 5xx.

Runs in the suite with a bounded number of examples per operation (``ARG_FUZZ_EXAMPLES``, default 3,
deterministic); ``make fuzz`` runs it longer with random seeds and prints the figures recorded in
docs/benchmarks.md. The caller is an admin's personal API token, so write endpoints are reached too,
on the small test pack with a published release (so that ``infer`` routes for real).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core import signals
from django.db import close_old_connections

from tests.fuzz.fuzzing import fuzz_api

SMALL_PACK = Path(__file__).resolve().parents[1] / "taxonomy" / "fixtures" / "small_pack.yaml"
EXAMPLES = int(os.environ.get("ARG_FUZZ_EXAMPLES", "3"))
RANDOM = os.environ.get("ARG_FUZZ_RANDOM", "") == "1"


@pytest.mark.django_db
def test_no_operation_answers_a_server_error(make_user, settings):
    from django.core.wsgi import get_wsgi_application

    from ontology.releases import release_publish
    from projects.services import api_token_create
    from taxonomy.packs import pack_import, pack_read

    settings.RATE_LIMITS = {"infer": "100000/min", "feedback": "100000/min", "api": "100000/min"}
    project = pack_import(pack_read(SMALL_PACK)).project
    release_publish(project=project, actor=None)
    admin = make_user("fuzz-admin", "admin", project)
    _, key = api_token_create(project=project, name="fuzz", user=admin)

    # Like Django's test client: requests run inside this test's transaction, so the WSGI handler must
    # not close the connection at the end of each request.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        report = fuzz_api(
            app=get_wsgi_application(),
            headers={"Authorization": f"Bearer {key}"},
            path_values={"project": project.slug},
            examples=EXAMPLES,
            derandomize=not RANDOM,
        )
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)

    out = Path(django_settings.DATA_DIR) / "fuzz-report.json"
    out.write_text(report.as_json(), encoding="utf-8")
    print(f"\n{report.summary()}  (details: {out})")
    assert report.operations >= 30
    assert report.cases >= report.operations * 2
    assert report.server_errors == []
