"""The API reference through its door: Swagger UI at /api/v1/docs/ and Redoc at /api/v1/redoc/, public
like the schema, every asset from the platform's own static files (no CDN, no inline script)."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db

EXTERNAL = re.compile(rb"""(?:src|href)=["'](?:https?:)?//""")


def _no_inline_script(html: bytes) -> None:
    for tag in re.findall(rb"<script[^>]*>", html):
        assert b"src=" in tag, tag


def test_swagger_ui_is_served_from_local_files(client):
    resp = client.get("/api/v1/docs/")
    assert resp.status_code == 200
    html = resp.content
    assert b"/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert b"/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css" in html
    assert EXTERNAL.search(html) is None and b"cdn." not in html
    _no_inline_script(html)
    script = client.get("/api/v1/docs/?script=")
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    assert b"/api/v1/schema/" in script.content
    assert b'"validatorUrl": null' in script.content  # no badge from validator.swagger.io


def test_redoc_is_served_from_local_files_and_its_bundle_calls_nothing_outside(client, settings):
    resp = client.get("/api/v1/redoc/")
    assert resp.status_code == 200
    html = resp.content
    assert b'<script src="/api/v1/redoc/redoc.standalone.js">' in html
    assert b'spec-url="/api/v1/schema/"' in html
    assert EXTERNAL.search(html) is None and b"fonts.googleapis" not in html
    _no_inline_script(html)
    # Redoc's worker comes from a blob: URL, allowed on this page only
    assert resp["Content-Security-Policy"] == f"{settings.CONTENT_SECURITY_POLICY}; worker-src 'self' blob:"
    assert "blob:" not in client.get("/api/v1/docs/")["Content-Security-Policy"]
    bundle = client.get("/api/v1/redoc/redoc.standalone.js")
    assert bundle.status_code == 200 and bundle["Content-Type"].startswith("application/javascript")
    body = b"".join(bundle.streaming_content) if bundle.streaming else bundle.content
    assert len(body) > 500_000 and b"cdn.redoc.ly" not in body


def test_the_docs_pages_are_not_in_the_schema(client):
    paths = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"]
    assert not [p for p in paths if "docs" in p or "redoc" in p]
