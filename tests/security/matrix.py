"""The authorization matrix: who may call which route with which method.

Five actors — ``anonymous``, ``client`` (a client app's API token with a policy role), ``expert``,
``reviewer``, ``admin`` (platform roles, by session) — against every URL pattern of the platform and
every method it answers. ``EXPECTED`` holds the cell of each (route name, method) explicitly, one group
of routes after the other; ``tests/security/test_authorization_matrix.py`` walks the URL resolver and
fails for a route or a method that has no row here, so a new endpoint cannot ship without an
authorization decision. ``docs/security.md`` shows the same table (``render_markdown``; a test keeps
the two identical).

Cells: ``OK`` — authorization passed (the answer may still be a 4xx about the body, never 401/403, a
login redirect or 404); ``401`` — API, no credentials; ``403`` — known caller, role too weak;
``LOGIN`` — web page, redirected to the sign-in page (a client token is no web session).
Django's own admin site (``admin:*``) is for staff only and none of the five actors is staff:
every admin page sends them to the admin sign-in, except the sign-in page itself.
"""

from __future__ import annotations

import re
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver

ACTORS = ("anonymous", "client", "expert", "reviewer", "admin")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
OK, LOGIN, E401, E403 = "OK", "LOGIN", "401", "403"


def cells(anonymous: str, client: str, expert: str, reviewer: str, admin: str) -> dict[str, str]:
    return dict(zip(ACTORS, (anonymous, client, expert, reviewer, admin), strict=True))


# --- the profiles the groups below use ---------------------------------------------------------------
PUBLIC = cells(OK, OK, OK, OK, OK)
STAFF_ONLY_API = cells(E401, E401, E403, E403, E403)  # /metrics: metrics token or staff session
API_SIGNED_IN = cells(E401, OK, OK, OK, OK)  # any authenticated caller, no project
API_READ = cells(E401, OK, OK, OK, OK)  # Capability.READ
API_CURATE = cells(E401, E403, OK, E403, OK)  # Capability.CURATE
API_PUBLISH = cells(E401, E403, E403, E403, OK)  # Capability.PUBLISH
API_ADMIN = cells(E401, E403, E403, E403, OK)  # Capability.ADMIN (erasure of an end user's data)
API_INFER = cells(E401, OK, OK, OK, OK)  # Capability.INFER (people name the project with ?project=)
UI_SIGNED_IN = cells(LOGIN, LOGIN, OK, OK, OK)
UI_READ = cells(LOGIN, LOGIN, OK, OK, OK)
UI_CURATE = cells(LOGIN, LOGIN, OK, E403, OK)
UI_PUBLISH = cells(LOGIN, LOGIN, E403, E403, OK)
UI_ADMIN = cells(LOGIN, LOGIN, E403, E403, OK)  # Capability.ADMIN (the project's merge bar)
API_MEMORY = cells(E401, OK, OK, OK, OK)  # Capability.MEMORY (people name the project with ?project=)
UI_REVIEW = cells(LOGIN, LOGIN, E403, OK, OK)  # Capability.REVIEW (resolve UNSURE memory, promote InfoUnits)
API_REVIEW_READ = cells(E401, E403, OK, OK, OK)  # review lists: API clients see nothing of the review
API_REVIEW = cells(E401, E403, E403, OK, OK)  # Capability.REVIEW: only reviewers (and admins) decide

# --- the matrix, one group of routes after the other ------------------------------------------------
EXPECTED: dict[str, dict[str, dict[str, str]]] = {
    # platform
    "healthz": {"GET": PUBLIC},
    "metrics": {"GET": STAFF_ONLY_API},
    "api-schema": {"GET": PUBLIC},
    "api-docs": {"GET": PUBLIC},  # Swagger UI (its assets: static files)
    "api-redoc": {"GET": PUBLIC},
    "api-redoc-script": {"GET": PUBLIC},
    "login": {"GET": PUBLIC, "POST": PUBLIC, "PUT": PUBLIC},  # Django's LoginView treats PUT as POST
    "logout": {"POST": PUBLIC},
    "home": {"GET": UI_SIGNED_IN},
    "job_detail": {"GET": UI_READ},
    # projects API
    "api-project-list": {"GET": API_SIGNED_IN},
    "api-whoami": {"GET": API_SIGNED_IN},
    "api-job-detail": {"GET": API_READ},
    # inference API
    "infer": {"POST": API_INFER},
    "feedback": {"POST": API_INFER},
    "erasures": {"POST": API_ADMIN},
    # taxonomy API
    "typology-templates": {"GET": API_SIGNED_IN},
    "pack": {"GET": API_CURATE, "POST": API_CURATE},
    "typology-copy": {"POST": API_CURATE},
    "cluster-list": {"GET": API_READ, "POST": API_CURATE},
    "cluster-detail": {"GET": API_READ, "PATCH": API_CURATE},
    "label-list": {"GET": API_READ, "POST": API_CURATE},
    "label-detail": {"GET": API_READ, "PATCH": API_CURATE},
    "label-move": {"POST": API_CURATE},
    "label-set-status": {"POST": API_CURATE},
    "incompatibility-list": {"GET": API_READ, "POST": API_CURATE},
    "incompatibility-detail": {"DELETE": API_CURATE},
    "typology-list": {"GET": API_READ, "POST": API_CURATE},
    "typology-detail": {"GET": API_READ, "PATCH": API_CURATE},
    "policy-list": {"GET": API_READ, "POST": API_CURATE},
    "policy-detail": {"GET": API_READ, "PATCH": API_CURATE},
    "role-list": {"GET": API_READ, "POST": API_CURATE},
    "audit-list": {"GET": API_READ},
    "skos": {"GET": API_READ, "POST": API_CURATE},
    # ontology API
    "node-list": {"GET": API_READ, "POST": API_CURATE},
    "node-detail": {"GET": API_READ, "PATCH": API_CURATE},
    "node-status": {"POST": API_CURATE},
    "node-neighbourhood": {"GET": API_READ},
    "edge": {"POST": API_CURATE, "PATCH": API_CURATE, "DELETE": API_CURATE},
    "alias": {"POST": API_CURATE},
    "release-list": {"GET": API_READ, "POST": API_PUBLISH},
    "release-draft": {"GET": API_PUBLISH},
    "release-detail": {"GET": API_READ},
    "release-activate": {"POST": API_PUBLISH},
    "release-diff": {"GET": API_READ},
    # web UI: taxonomy, typologies, policies, roles, history, packs
    "taxonomy:project_home": {"GET": UI_READ},  # members: a redirect to the taxonomy
    "taxonomy:tree": {"GET": UI_READ},
    "taxonomy:cluster_create": {"POST": UI_CURATE},
    "taxonomy:label_create": {"GET": UI_READ, "POST": UI_CURATE},
    "taxonomy:label_detail": {"GET": UI_READ},
    "taxonomy:label_edit": {"POST": UI_CURATE},
    "taxonomy:label_move": {"POST": UI_CURATE},
    "taxonomy:label_status": {"POST": UI_CURATE},
    "taxonomy:label_synonym_add": {"POST": UI_CURATE},
    "taxonomy:label_synonym_remove": {"POST": UI_CURATE},
    "taxonomy:label_example_add": {"POST": UI_CURATE},
    "taxonomy:label_example_remove": {"POST": UI_CURATE},
    "taxonomy:incompatibility_add": {"POST": UI_CURATE},
    "taxonomy:incompatibility_remove": {"POST": UI_CURATE},
    "taxonomy:typologies": {"GET": UI_READ, "POST": UI_CURATE},
    "taxonomy:typology_copy_template": {"POST": UI_CURATE},
    "taxonomy:typology_detail": {"GET": UI_READ, "POST": UI_CURATE},
    "taxonomy:policies": {"GET": UI_READ, "POST": UI_CURATE},
    "taxonomy:policy_detail": {"GET": UI_READ, "POST": UI_CURATE},
    "taxonomy:roles": {"GET": UI_READ, "POST": UI_CURATE},
    "taxonomy:role_detail": {"GET": UI_READ, "POST": UI_CURATE},
    "taxonomy:history": {"GET": UI_READ},
    "taxonomy:packs": {"GET": UI_READ, "POST": UI_CURATE},
    "taxonomy:pack_download": {"GET": UI_READ},  # the API pack GET is curators-only (docs/security.md)
    # web UI: graph and releases
    "graph:node_list": {"GET": UI_READ},
    "graph:node_create": {"GET": UI_CURATE, "POST": UI_CURATE},
    "graph:node_detail": {"GET": UI_READ},
    "graph:node_picture": {"GET": UI_READ},
    "graph:node_edit": {"POST": UI_CURATE},
    "graph:node_status": {"POST": UI_CURATE},
    "graph:edge_add": {"POST": UI_CURATE},
    "graph:edge_update": {"POST": UI_CURATE},
    "graph:edge_remove": {"POST": UI_CURATE},
    "graph:edge_targets": {"GET": UI_READ},
    "graph:release_list": {"GET": UI_READ},
    "graph:release_publish": {"GET": UI_PUBLISH, "POST": UI_PUBLISH},
    # an expert asks the admins to publish (an admin is sent to the publish page)
    "graph:release_publish_ask": {"POST": UI_CURATE},
    "graph:release_ask_threshold": {"POST": UI_CURATE},
    "graph:release_publish_dismiss": {"POST": UI_PUBLISH},
    "graph:release_activate": {"POST": UI_PUBLISH},
    "graph:release_diff": {"GET": UI_READ},
    # web UI: traces and the metrics dashboard
    "inference:traces": {"GET": UI_READ, "POST": UI_CURATE},
    "inference:trace_detail": {"GET": UI_READ},
    "inference:label_preview": {"GET": UI_READ},  # the label page's "what would route here" panel
    "dashboard": {"GET": UI_READ},
    # memory: API and web UI
    "memory": {"GET": API_MEMORY, "POST": API_MEMORY},
    "memory-merge-bar": {"GET": API_MEMORY},
    "memory:browser": {"GET": UI_READ},
    "memory:item_detail": {"GET": UI_READ},
    "memory:units": {"GET": UI_READ},
    "memory:unit_detail": {"GET": UI_READ},
    "memory:unit_promote": {"POST": UI_REVIEW},
    "memory:evidence_detach": {"POST": UI_REVIEW},
    "memory:staging": {"GET": UI_READ},
    "memory:staging_resolve": {"POST": UI_REVIEW},
    "memory:merge_bar_update": {"POST": UI_ADMIN},
    "memory:distinctions": {"GET": UI_READ},
    "memory:distinction_declare": {"POST": UI_REVIEW},
    "memory:distinction_delete": {"POST": UI_REVIEW},
    # review API: proposals and the other review lists
    "proposal-list": {"GET": API_REVIEW_READ},
    "proposal-detail": {"GET": API_REVIEW_READ},
    "proposal-preview": {"GET": API_REVIEW_READ},
    "proposal-edit": {"POST": API_REVIEW_READ},  # experts may edit proposals, reviewers request changes
    "proposal-approve": {"POST": API_REVIEW},
    "proposal-reject": {"POST": API_REVIEW},
    "proposal-request-changes": {"POST": API_REVIEW},
    "proposal-defer": {"POST": API_REVIEW},
    "proposal-claim": {"POST": API_REVIEW},
    "proposal-assign": {"POST": API_REVIEW},
    "proposal-apply-approved": {"POST": API_REVIEW},
    "review-inbox-list": {"GET": API_REVIEW_READ},
    "review-silent-sample-list": {"GET": API_REVIEW_READ},
    "review-silent-sample-label": {"POST": API_REVIEW},
    "review-memory-merge-list": {"GET": API_REVIEW_READ},
    "review-memory-merge-resolve": {"POST": API_REVIEW},
    "review-memory-evidence-detach": {"POST": API_REVIEW},
    "review-memory-distinction-list": {"GET": API_REVIEW_READ, "POST": API_REVIEW},
    "review-memory-distinction-detail": {"DELETE": API_REVIEW},
    "review-shadow-label-list": {"GET": API_REVIEW_READ},
    "review-shadow-label-activate": {"POST": API_REVIEW},
    # review pages
    "review:queue": {"GET": UI_READ},
    "review:proposal_detail": {"GET": UI_READ},
    "review:proposal_edit": {"GET": UI_READ, "POST": UI_READ},  # experts and reviewers edit proposals
    "review:proposal_approve": {"POST": UI_REVIEW},
    "review:proposal_reject": {"POST": UI_REVIEW},
    "review:proposal_request_changes": {"POST": UI_REVIEW},
    "review:proposal_defer": {"POST": UI_REVIEW},
    "review:proposal_claim": {"POST": UI_REVIEW},
    "review:proposal_assign": {"POST": UI_REVIEW},
    "review:publish_approved": {"POST": UI_REVIEW},
    "review:silent_list": {"GET": UI_READ},
    "review:silent_label": {"POST": UI_REVIEW},
    "review:merge_list": {"GET": UI_READ},
    "review:merge_resolve": {"POST": UI_REVIEW},
    "review:shadow_labels": {"GET": UI_READ},
    "review:label_activate": {"POST": UI_REVIEW},
    # offline-loop metrics pages (running the loop by hand is a curation act)
    "review_metrics:metrics": {"GET": UI_READ},
    "review_metrics:runs": {"GET": UI_READ, "POST": UI_CURATE},
}

# Routes probed without an object behind their id (the world has no proposal, memory item or merge):
# for them an allowed actor's 404 ("no such proposal") counts as having passed authorization; the
# denied cells are still exact, which also shows that the permission check runs before the lookup.
PROBED_WITHOUT_OBJECT = frozenset(
    {
        "proposal-detail",
        "proposal-preview",
        "proposal-edit",
        "proposal-approve",
        "proposal-claim",
        "proposal-defer",
        "memory:item_detail",
        "memory:unit_detail",
        "memory:unit_promote",
        "memory:evidence_detach",
        "memory:staging_resolve",
        "memory:distinction_delete",
        "review:proposal_detail",
        "review:proposal_edit",
        "review:proposal_approve",
        "review:proposal_reject",
        "review:proposal_request_changes",
        "review:proposal_defer",
        "review:proposal_claim",
        "review:proposal_assign",
        "review:merge_resolve",
        "review-memory-evidence-detach",
        "review-memory-distinction-detail",
    }
)

# Route kwargs that are not the defaults of ``route_values`` (which object each route is probed on).
KWARGS: dict[str, dict[str, str]] = {
    "cluster-detail": {"key": "billing"},
    "typology-detail": {"key": "quick"},
    "policy-detail": {"key": "customer"},
    "taxonomy:typology_detail": {"key": "quick"},
    "taxonomy:policy_detail": {"key": "customer"},
    "taxonomy:role_detail": {"key": "customer"},
    "taxonomy:label_synonym_remove": {"label_id": "L00001"},
    "inference:label_preview": {"label_id": "L00001"},
    "release-diff": {"version": "2"},
}
# Parameters filled from an object of the probed world (the world's value under that key).
WORLD_KWARGS: dict[str, dict[str, str]] = {
    "job_detail": {"pk": "job_pk"},
    "api-job-detail": {"pk": "job_pk"},
}


def route_values(name: str, values: dict[str, str]) -> dict[str, str]:
    """The path parameters of route ``name``: the world's ``values`` with the route's own ones."""
    found = {param: values[key] for param, key in WORLD_KWARGS.get(name, {}).items() if key in values}
    return {**values, **KWARGS.get(name, {}), **found}


# Bodies that authorized callers send: valid enough to reach the view, refused before any costly write
# (e.g. release notes over the 500-character limit, so an allowed publish stops at validation).
BODIES: dict[str, dict[str, Any]] = {
    "release-list": {"notes": "x" * 600},
    "graph:release_publish": {"notes": "x" * 600},
    "release-activate": {"reason": "x" * 600},
    "graph:release_activate": {"reason": "x" * 600},
    "graph:release_ask_threshold": {"ask_threshold": "2"},  # outside [0, 1): refused on its field
    "taxonomy:label_example_remove": {"text": "get invoice pdf"},
    "taxonomy:label_synonym_remove": {"text": "bill"},
    "taxonomy:typology_copy_template": {"template": "quick-answer", "key": "copied"},
    "graph:edge_update": {
        "source": "N-invoice-download",
        "target": "N-resend-invoice",
        "type": "LEADS_TO",
        "weight": "0.5",
    },
    "graph:edge_remove": {"source": "N-invoice-download", "target": "N-resend-invoice", "type": "LEADS_TO"},
}


def _walk(patterns: list[Any], prefix: str = "", namespace: str = "") -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for p in patterns:
        route = prefix + str(p.pattern)
        if isinstance(p, URLResolver):
            ns = p.namespace or ""
            full = f"{namespace}:{ns}".strip(":") if ns else namespace
            out.extend(_walk(p.url_patterns, route, full))
        elif isinstance(p, URLPattern):
            name = p.name or f"<unnamed {route}>"
            out.append((route, f"{namespace}:{name}" if namespace else name))
    return out


def all_routes() -> list[tuple[str, str]]:
    """(route pattern, view name) of every URL pattern the resolver knows, the admin site's too."""
    return sorted(set(_walk(get_resolver().url_patterns)))


def concrete(route: str, values: dict[str, str]) -> str:
    """A real path for ``route`` with ``values`` for its parameters ("1" for unknown ones)."""
    route = route.replace("^", "").replace("$", "").replace("\\.", ".")
    route = re.sub(r"\(\?P<format>[^)]*\)", "", route)

    def fill(match: re.Match[str]) -> str:
        name = match.group(2) or match.group(3)
        return values.get(name, "1")

    route = re.sub(r"<(?:(\w+):)?(\w+)>|\(\?P<(\w+)>[^)]*\)", fill, route)
    return "/" + route.replace("//", "/")


def render_markdown() -> str:
    """The matrix as the Markdown table of docs/security.md."""
    names = {"OK": "✓", "LOGIN": "→ login", "401": "401", "403": "403"}
    lines = [
        "| route (URL name) | method | anonymous | API client | domain expert | reviewer | admin |",
        "| --- | --- | :-: | :-: | :-: | :-: | :-: |",
    ]
    for name, methods in EXPECTED.items():
        for method, row in methods.items():
            lines.append(
                f"| `{name}` | {method} | " + " | ".join(names[row[actor]] for actor in ACTORS) + " |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # python -m tests.security.matrix > table.md (pasted into docs/security.md)
    print(render_markdown(), end="")
