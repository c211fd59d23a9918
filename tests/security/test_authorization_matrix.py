"""The authorization matrix, cell by cell: every URL pattern × every method × five actors.

The routes come from the URL resolver, so an endpoint added anywhere is probed here; one without a row
in ``tests/security/matrix.py`` (or answering a method its row does not list) fails the test with the
name to add. Each request runs in a unit of work of both stores (``graph_atomic``) that is rolled
back, so an allowed write leaves nothing behind for the next cell — on the ``neo4j`` backend too,
where a Django savepoint alone would not undo a graph write.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.urls import resolve

from ontology.store.unit_of_work import graph_atomic
from tests.security import matrix
from tests.security.matrix import (
    ACTORS,
    BODIES,
    EXPECTED,
    METHODS,
    PROBED_WITHOUT_OBJECT,
    all_routes,
    concrete,
    route_values,
)

pytestmark = pytest.mark.django_db

DOCS = __import__("pathlib").Path(__file__).resolve().parents[2] / "docs" / "security.md"


def _cell(response: Any) -> str:
    code = response.status_code
    location = response.get("Location", "") if code in (301, 302) else ""
    if location.startswith(("/accounts/login/?next=", "/admin/login/?next=")):
        return matrix.LOGIN
    if code in (401, 403, 404, 405) or code >= 500:
        return str(code)
    return matrix.OK


class _Undo(Exception):
    """Raised at the end of a probe so that ``graph_atomic`` rolls back what the request wrote."""


def _call(client: Any, method: str, path: str, body: dict[str, Any]) -> Any:
    try:
        with graph_atomic():
            if method == "GET":
                response = client.get(path)
            elif path.startswith("/api/"):
                response = getattr(client, method.lower())(path, body, format="json")
            else:  # web pages take HTML forms
                response = getattr(client, method.lower())(path, body)
            raise _Undo
    except _Undo:
        return response


def _values(world: dict[str, Any]) -> dict[str, str]:
    return {
        "project": world["project"].slug,
        "label_id": "L00002",
        "key": "billing",
        "pk": str(world["incompatibility"].pk),
        "node_id": "N-invoice-download",
        "version": "1",
        "request_id": world["request_id"],
        "distinction_id": "999999",  # no term distinction exists: PROBED_WITHOUT_OBJECT
        "job_pk": str(world["job"].pk),
        **world["memory"],
    }


@pytest.fixture
def probed(world: dict[str, Any], actors: dict[str, Any]) -> dict[str, Any]:
    response = actors["client"].post("/api/v1/infer", {"prompt": "where is my invoice"}, format="json")
    assert response.status_code == 200, response.content
    world["request_id"] = response.json()["request_id"]
    return world


def test_every_route_and_method_answers_each_actor_as_the_matrix_says(probed, actors):
    values = _values(probed)
    routes = [(route, name) for route, name in all_routes() if not name.startswith("admin:")]
    unknown = sorted({name for _, name in routes} - set(EXPECTED))
    if unknown and os.environ.get("ARG_MATRIX_DUMP"):  # print what the new routes answer, to review
        print("\n" + _observed(routes, unknown, values, actors))
    assert unknown == [], f"routes without a row in tests/security/matrix.py EXPECTED: {unknown}"
    stale = sorted(set(EXPECTED) - {name for _, name in routes})
    assert stale == [], f"rows of EXPECTED for routes that no longer exist: {stale}"
    mismatches: list[str] = []
    checked = 0
    for route, name in routes:
        path = concrete(route, route_values(name, values))
        match = resolve(path)
        assert match.view_name == name, (path, match.view_name, name)
        rows = EXPECTED[name]
        body = BODIES.get(name, {})
        query = f"?project={values['project']}" if name in ("infer", "feedback") else ""
        for method in METHODS:
            if method not in rows:
                # not part of the route: even the strongest actor gets 405 (a new method needs a row)
                caller = actors.fresh("admin") if name == "logout" else actors["admin"]
                got = _cell(_call(caller, method, path + query, body))
                if got != "405":
                    mismatches.append(f"{method} {path} ({name}): admin got {got}, expected 405 (no row)")
                checked += 1
                continue
            for actor in ACTORS:
                # signing out ends the session: that cell gets a client of its own
                caller = actors.fresh(actor) if name == "logout" else actors[actor]
                response = _call(caller, method, path + query, body)
                got = _cell(response)
                if got == "404" and name in PROBED_WITHOUT_OBJECT and rows[method][actor] == matrix.OK:
                    got = matrix.OK
                checked += 1
                if got != rows[method][actor]:
                    mismatches.append(
                        f"{method} {path} ({name}) as {actor}: got {got} ({response.status_code}), "
                        f"expected {rows[method][actor]}"
                    )
    assert mismatches == [], "\n".join(mismatches)
    assert checked >= 400


def _observed(routes: list[tuple[str, str]], names: list[str], values: dict[str, str], actors: Any) -> str:
    lines = []
    for route, name in routes:
        if name not in names:
            continue
        path = concrete(route, route_values(name, values))
        for method in METHODS:
            cells = {a: _cell(_call(actors[a], method, path, BODIES.get(name, {}))) for a in ACTORS}
            if cells["admin"] != "405":
                lines.append(
                    f"{name:45} {method:6} {path:70} " + " ".join(f"{a}={c}" for a, c in cells.items())
                )
    return "\n".join(lines)


def test_the_admin_site_is_for_staff_only(probed, actors):
    values = _values(probed)
    admin_routes = [(route, name) for route, name in all_routes() if name.startswith("admin:")]
    assert len(admin_routes) >= 20
    mismatches = []
    for route, name in admin_routes:
        path = concrete(route, values)
        for actor in ACTORS:
            response = _call(actors[actor], "GET", path, {})
            location = response.get("Location", "")
            if name == "admin:login":
                expected_ok = response.status_code == 200  # the sign-in form itself
            elif name == "admin:logout":
                expected_ok = response.status_code == 302 and location == "/admin/"  # GET signs out nobody
            else:  # every other admin page sends non-staff callers to the admin sign-in
                expected_ok = response.status_code == 302 and location.startswith("/admin/login/")
            if not expected_ok:
                mismatches.append(f"GET {path} ({name}) as {actor}: {response.status_code} {location}")
    assert mismatches == [], "\n".join(mismatches)


def test_docs_security_md_shows_the_same_matrix():
    text = DOCS.read_text(encoding="utf-8")
    assert matrix.render_markdown() in text, "regenerate the table: python -m tests.security.matrix"
