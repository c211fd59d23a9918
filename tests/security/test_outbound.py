"""Outbound calls cannot be turned against the platform's own network (SSRF).

A listener on loopback stands in for an internal service. With the default (empty) ``OUTBOUND_ALLOW``
an expert cannot save a webhook pointing at it (400 naming ``action.webhook_target_refused``), a handler
stored anyway is refused where the call connects (the listener receives nothing), and the LLM and the
review webhook are held to the same rules. With the allow-list naming the listener the call works and is
signed; redirects are not followed, oversized replies are refused, the client sees the action's status
and result fields (never the raw reply body) and never the webhook URL.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import time
from typing import Any

import pytest

from arg_platform import outbound
from arg_platform.llm import LlmError, chat_complete
from inference.models import ActionExecution
from ontology.store import get_graph_store
from projects.webhook_secrets import project_webhook_secret
from review.queue.notifications import review_pending_notify
from taxonomy.packs import pack_import, pack_read
from tests.inference.conftest import demo_snapshot  # noqa: F401 — the served release the actions run in
from tests.inference.loopback import Reply, loopback_server
from tests.inference.test_actions import INVOICE, RESEND, act, with_handler
from tests.review.queue_fixtures import make_proposal, weight_changeset  # noqa: F401
from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db
BASE = "/api/v1/projects/tiny/"
NODE = BASE + "nodes/N-resend-invoice/"
RULE = "action.webhook_target_refused"
PUBLIC_IP = "93.184.216.34"  # a globally routable literal: no DNS lookup in the test


@pytest.fixture(autouse=True)
def default_allow_list(settings: Any) -> None:
    settings.OUTBOUND_ALLOW = []  # what a deployment gets unless the operator names targets


@pytest.fixture
def tiny() -> Any:
    return pack_import(pack_read(SMALL)).project


@pytest.fixture
def people(tiny: Any, make_user: Any) -> dict[str, Any]:
    return {role: make_user(f"{role}-1", role, tiny) for role in ("expert", "reviewer", "admin")}


def stored_handler(project: Any) -> str:
    node = get_graph_store().get_node(project.pk, "N-resend-invoice")
    assert node is not None
    return node.handler


def verify(secret: str, header: str, body: bytes, tolerance_s: int = 300) -> bool:
    """What a receiver does (the snippet of docs/security.md)."""
    fields = dict(part.split("=", 1) for part in header.split(","))
    t = int(fields["t"])
    expected = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return abs(time.time() - t) <= tolerance_s and hmac.compare_digest(expected, fields["v1"])


# --- saving a handler --------------------------------------------------------------------------------


def test_an_expert_cannot_save_a_webhook_to_the_internal_listener(tiny, people, api_as):
    expert = api_as(people["expert"])
    with loopback_server(lambda request: Reply(200, {"ok": True}), allow=False) as internal:
        resp = expert.patch(NODE, {"handler": f"webhook:{internal.url}/admin"}, format="json")

    assert resp.status_code == 400, resp.content
    assert resp.json()["rules"] == [RULE]
    assert "loopback" in json.dumps(resp.json())
    assert internal.requests == []
    assert stored_handler(tiny) == "python:billing.resend_invoice"


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:8000/hook",  # a name resolving to 127.0.0.1
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata
        "http://10.0.0.5/hook",  # RFC 1918
        "http://[::1]/hook",
        "http://[fd00::1]/hook",  # IPv6 ULA
        "http://0.0.0.0/hook",
        "file:///etc/passwd",
    ],
)
def test_internal_and_non_http_webhook_targets_are_refused_at_save(tiny, people, api_as, url):
    resp = api_as(people["expert"]).patch(NODE, {"handler": f"webhook:{url}"}, format="json")

    assert resp.status_code == 400, resp.content
    assert resp.json()["rules"] == [RULE]
    assert stored_handler(tiny) == "python:billing.resend_invoice"


def test_a_public_webhook_target_is_saved(tiny, people, api_as):
    resp = api_as(people["expert"]).patch(
        NODE, {"handler": f"webhook:https://{PUBLIC_IP}/hook"}, format="json"
    )

    assert resp.status_code == 200, resp.content
    assert stored_handler(tiny) == f"webhook:https://{PUBLIC_IP}/hook"


def test_the_allow_list_admits_a_named_internal_target_at_save(tiny, people, api_as, settings):
    settings.OUTBOUND_ALLOW = ["10.0.5.0/24"]
    resp = api_as(people["expert"]).patch(NODE, {"handler": "webhook:http://10.0.5.7/hook"}, format="json")

    assert resp.status_code == 200, resp.content


# --- calling a handler stored anyway -----------------------------------------------------------------


def test_a_stored_webhook_to_the_internal_listener_is_refused_at_call_time(demo_snapshot, project):  # noqa: F811
    with loopback_server(lambda request: Reply(200, {"secret": "internal data"}), allow=False) as internal:
        snapshot = with_handler(demo_snapshot, RESEND, f"webhook:{internal.url}/admin")
        outcome = act(snapshot, project, parameters=INVOICE)

    assert internal.requests == []
    assert outcome.action["status"] == "FAILED"
    assert "loopback" in outcome.answer
    assert "internal data" not in json.dumps(outcome.action)


@pytest.mark.parametrize("host", ["169.254.169.254", "10.1.2.3", "localhost"])
def test_metadata_private_and_loopback_names_are_refused_at_call_time(demo_snapshot, project, host):  # noqa: F811
    snapshot = with_handler(demo_snapshot, RESEND, f"webhook:http://{host}/hook")

    outcome = act(snapshot, project, parameters=INVOICE)

    assert outcome.action["status"] == "FAILED"
    assert "ARG_OUTBOUND_ALLOW" in outcome.answer


def test_a_name_resolving_to_an_internal_address_is_refused_where_the_call_connects(monkeypatch):
    # DNS rebinding: the name passed no check at save time (or resolved elsewhere then); the call
    # resolves it again and checks every address it got before connecting.
    def resolve(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC_IP, port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    with loopback_server(lambda request: Reply(200, {}), allow=False) as internal:
        port = internal.url.rsplit(":", 1)[1]
        with pytest.raises(outbound.OutboundRefused, match="resolves to 127.0.0.1"):
            outbound.request("POST", f"http://rebind.test:{port}/", body=b"{}", timeout_s=2, max_bytes=100)
    assert internal.requests == []


def test_the_call_connects_to_the_checked_address_with_the_original_host(monkeypatch, settings):
    settings.OUTBOUND_ALLOW = ["hook.test"]
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, port, *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))],
    )
    with loopback_server(lambda request: Reply(200, {"ok": True}), allow=False) as hook:
        port = hook.url.rsplit(":", 1)[1]
        response = outbound.request(
            "POST", f"http://hook.test:{port}/x", body=b"{}", timeout_s=2, max_bytes=1000
        )

    assert response.status == 200
    (request,) = hook.requests
    assert request["headers"]["Host"] == f"hook.test:{port}"


# --- an allowed receiver ----------------------------------------------------------------------------


def test_an_allowed_webhook_works_and_carries_a_valid_signature(demo_snapshot, project):  # noqa: F811
    reply = {"queued": True, "job": "J-7", "debug": {"db_password": "hunter2"}, "trace": ["x"] * 3}
    with loopback_server(lambda request: Reply(200, reply)) as hook:
        snapshot = with_handler(demo_snapshot, RESEND, f"webhook:{hook.url}/actions/resend")
        outcome = act(snapshot, project, parameters=INVOICE)

    (request,) = hook.requests
    secret = project_webhook_secret(project=project)
    assert verify(secret, request["headers"]["X-ARG-Signature"], request["raw"])
    assert not verify("another secret", request["headers"]["X-ARG-Signature"], request["raw"])
    assert outcome.action["status"] == "SUCCEEDED"
    # Only the scalar result fields are relayed: the nested parts of the reply stay with the platform.
    assert outcome.action["result"] == {"queued": True, "job": "J-7"}
    assert "hunter2" not in json.dumps(outcome.action)
    assert hook.url not in json.dumps(outcome.action)


def test_a_redirect_to_another_address_is_not_followed(demo_snapshot, project):  # noqa: F811
    with loopback_server(lambda request: Reply(200, {"reached": True})) as second:
        target = f"{second.url}/internal"
        with loopback_server(lambda request: Reply(302, b"", headers={"Location": target})) as hook:
            snapshot = with_handler(demo_snapshot, RESEND, f"webhook:{hook.url}/hook")
            outcome = act(snapshot, project, parameters=INVOICE)

    assert len(hook.requests) == 1 and second.requests == []
    assert outcome.action["status"] == "FAILED"
    assert outcome.action["result"] == {
        "error": "the webhook answered HTTP 302 (redirects are not followed)",
        "http_status": 302,
    }


def test_an_oversized_reply_is_refused(demo_snapshot, project):  # noqa: F811
    big = {"blob": "x" * 1_100_000}
    with loopback_server(lambda request: Reply(200, big)) as hook:
        snapshot = with_handler(demo_snapshot, RESEND, f"webhook:{hook.url}/hook")
        outcome = act(snapshot, project, parameters=INVOICE)

    assert outcome.action["status"] == "FAILED"
    assert outcome.action["result"] == {"error": "the webhook answer is larger than 1000000 bytes"}
    assert ActionExecution.objects.get().result == outcome.action["result"]


def test_an_error_reply_body_is_not_relayed(demo_snapshot, project):  # noqa: F811
    with loopback_server(lambda request: Reply(500, b"<html>stack trace: /srv/app.py line 3</html>")) as hook:
        snapshot = with_handler(demo_snapshot, RESEND, f"webhook:{hook.url}/hook")
        outcome = act(snapshot, project, parameters=INVOICE)

    assert outcome.action["result"] == {"error": "the webhook answered HTTP 500", "http_status": 500}
    assert "stack trace" not in json.dumps(outcome.action)


# --- the other outbound callers --------------------------------------------------------------------


def test_the_llm_client_refuses_an_internal_endpoint(settings):
    with loopback_server(lambda request: Reply(200, {}), allow=False) as internal:
        settings.LLM_URL = internal.url
        with pytest.raises(LlmError, match="OutboundRefused"):
            chat_complete([{"role": "user", "content": "hi"}], max_reply_bytes=1000)
    assert internal.requests == []


def test_the_review_webhook_refuses_an_internal_target(settings, tiny, make_proposal):  # noqa: F811
    proposal = make_proposal(tiny, changeset=weight_changeset())
    with loopback_server(lambda request: Reply(204, b""), allow=False) as internal:
        settings.REVIEW_WEBHOOK_URL = internal.url
        result = review_pending_notify(project=tiny, proposals=[proposal])
    assert internal.requests == []
    assert result.webhook_status is None and "loopback" in result.error


def test_the_review_webhook_is_signed(settings, tiny, make_proposal):  # noqa: F811
    proposal = make_proposal(tiny, changeset=weight_changeset())
    with loopback_server(lambda request: Reply(204, b"")) as hook:
        settings.REVIEW_WEBHOOK_URL = hook.url
        review_pending_notify(project=tiny, proposals=[proposal])
    (request,) = hook.requests
    assert verify(project_webhook_secret(project=tiny), request["headers"]["X-ARG-Signature"], request["raw"])


# --- who sees the target -----------------------------------------------------------------------------


def test_a_client_token_cannot_read_the_webhook_url(tiny, people, api_as, token_client, run_jobs):
    url = f"https://{PUBLIC_IP}/internal-billing-hook"
    expert, admin = api_as(people["expert"]), api_as(people["admin"])
    assert expert.patch(NODE, {"handler": f"webhook:{url}"}, format="json").status_code == 200
    with run_jobs():
        assert admin.post(BASE + "releases/", {}, format="json").status_code == 202
    client, reviewer = token_client(tiny), api_as(people["reviewer"])

    for reader in (client, reviewer):
        assert reader.get(NODE).json()["handler"] == "webhook"
        listing = reader.get(BASE + "nodes/?type=Action").content.decode()
        hood = reader.get(NODE + "neighbourhood/").content.decode()
        assert url not in listing and url not in hood
    for reader in (client, reviewer):  # the audit trail recorded the change
        assert url not in reader.get(BASE + "audit/?object_type=node").content.decode()
    assert url in expert.get(BASE + "audit/?object_type=node").content.decode()
    assert expert.get(NODE).json()["handler"] == f"webhook:{url}"
    assert expert.get(NODE + "?source=draft").json()["handler"] == f"webhook:{url}"


def test_the_node_page_shows_the_webhook_url_to_curators_only(tiny, people, api_as, client):
    url = f"https://{PUBLIC_IP}/internal-billing-hook"
    assert (
        api_as(people["expert"]).patch(NODE, {"handler": f"webhook:{url}"}, format="json").status_code == 200
    )
    page = "/p/tiny/graph/nodes/N-resend-invoice/"

    client.force_login(people["reviewer"])
    reviewer_html = client.get(page).content.decode()
    client.force_login(people["expert"])
    expert_html = client.get(page).content.decode()

    assert url not in reviewer_html and ">webhook</code>" in reviewer_html
    assert url in expert_html
