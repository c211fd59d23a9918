"""``manage.py bootstrap_demo`` prints the address the platform will actually serve (``make run PORT=…``
passes the port) — the ``curl`` line and the API reference — not a fixed port 8000."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db


def test_the_printed_address_is_the_port_given():
    out = io.StringIO()
    call_command("bootstrap_demo", "--pack", str(SMALL), "--no-traffic", "--port", "8123", stdout=out)
    text = out.getvalue()
    assert "curl -H 'Authorization: Bearer arg_" in text
    assert "http://127.0.0.1:8123/api/v1/projects/" in text
    assert "http://127.0.0.1:8123/api/v1/docs/ (Swagger UI)" in text
    assert ":8000" not in text
