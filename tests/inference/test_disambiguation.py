"""The answer to "Do you mean X or Y?" through the API door, on the demo pack's release
(``inference.steps.clarification``): a continuation is answered for the chosen label, the policy still
judges that label, anything not offered is a clear 400 that leaves its one log row, the choice is
recorded once as evidence on the asking request, and the trace viewer links the two requests."""

from __future__ import annotations

from typing import Any

import pytest

from inference.models import Feedback, InferenceLog
from taxonomy.models import Role
from tests.review.queue_fixtures import user

pytestmark = pytest.mark.django_db
AMBIGUOUS = (
    "how do I set up single sign on"  # the demo asks: SSO & SAML login (L00028) or Set up 2FA (L00025)
)
SSO, TWO_FA = "L00028", "L00025"


def ask(client: Any) -> dict[str, Any]:
    body = client.post("/api/v1/infer", {"prompt": AMBIGUOUS}, format="json").json()
    assert body["outcome"]["kind"] == "CLARIFY", body
    assert body["outcome"]["active_check"]["options"] == ["SSO & SAML login", "Set up 2FA"]
    return body


def answer(client: Any, asked: str, choice: str, prompt: str = AMBIGUOUS) -> Any:
    return client.post(
        "/api/v1/infer",
        {"prompt": prompt, "disambiguation": {"request_id": asked, "choice": choice}},
        format="json",
    )


def node_labels(acme: Any, node_id: str) -> set[str]:
    from ontology.snapshot_registry import pin_snapshot

    snapshot = pin_snapshot(acme.pk)
    return set(snapshot.node_labels[snapshot.position[node_id]])


@pytest.mark.parametrize(
    "choice,label_id,name",
    [("  sso & saml LOGIN ", SSO, "SSO & SAML login"), (TWO_FA, TWO_FA, "Set up 2FA")],
)
def test_a_continuation_is_answered_for_the_label_the_user_chose(acme, customer, choice, label_id, name):
    asked = ask(customer)["request_id"]

    resp = answer(customer, asked, choice)

    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["labels"] == {label_id: 1.0} and body["confidence"] == 1.0
    assert not {"ABSTAIN_RECOMMENDED", "OOD", "LOW_MARGIN", "VECTOR_AMBIGUITY"} & set(body["flags"])
    assert body["disambiguation"] == {"request_id": asked, "label_id": label_id, "name": name}
    assert body["explanation"].startswith(f"Asked in request {asked}; the user chose {name} ({label_id}).")
    landed = body["path"]["nodes"][0]["node_id"]
    assert label_id in node_labels(acme, landed)  # the answer is about the chosen branch
    outcome = body["outcome"]
    assert (outcome["active_check"] or {}).get("kind") != "disambiguate"  # not asked again
    if label_id == SSO:
        assert outcome["kind"] == "INFO" and outcome["citations"]
    else:  # the 2FA branch of the demo graph leads to its enforcement action, whose org id comes from
        # the client application, not the user: it answers with the how-to and says what it lacked
        assert outcome["kind"] == "ACTION" and outcome["action"]["status"] == "NEEDS_CONTEXT"
        assert outcome["action"]["missing_context"] == ["org_id"] and outcome["citations"]
    # the continuation's own row says what it answered; the asking row got the choice as evidence, once
    log = InferenceLog.objects.get(request_id=body["request_id"])
    assert log.weaver["chosen"] == {"request_id": asked, "label_id": label_id, "name": name}
    assert log.weaver["top_k"]  # the rankings were still computed and logged
    choices = Feedback.objects.filter(log__request_id=asked, kind="disambiguation")
    assert [(f.choice, f.idempotency_key) for f in choices] == [
        (label_id, f"answered-by:{body['request_id']}")
    ]
    assert InferenceLog.objects.get(request_id=asked).silent_outcome is False


def test_a_retried_continuation_records_its_choice_once(acme, customer):
    """A client that times out and sends the continuation again makes a new request: it is answered
    again, but the asking request keeps one record of each option the user chose."""
    asked = ask(customer)["request_id"]

    first, retry = answer(customer, asked, "SSO & SAML login"), answer(customer, asked, SSO)
    changed_mind = answer(customer, asked, "Set up 2FA")

    assert {first.status_code, retry.status_code, changed_mind.status_code} == {200}
    assert first.json()["labels"] == retry.json()["labels"] == {SSO: 1.0}
    assert first.json()["request_id"] != retry.json()["request_id"]
    choices = Feedback.objects.filter(log__request_id=asked, kind="disambiguation").order_by("pk")
    assert [(f.choice, f.idempotency_key) for f in choices] == [
        (SSO, f"answered-by:{first.json()['request_id']}"),
        (TWO_FA, f"answered-by:{changed_mind.json()['request_id']}"),
    ]


def test_the_policy_still_judges_the_chosen_label(acme, customer, token_client):
    """The anonymous visitor's policy does not allow SSO & SAML login: answering the customer's
    question with it gets that policy's refocus message, not the SSO answer."""
    asked = ask(customer)["request_id"]
    visitor = token_client(acme, role=Role.objects.get(project=acme, key="anonymous-visitor"), name="site")

    body = answer(visitor, asked, "SSO & SAML login").json()

    assert body["outcome"]["kind"] == "REFOCUS"
    assert body["labels"] == {} and body["path"] == {"nodes": [], "edges": []}
    assert "single sign" not in body["outcome"]["answer"].lower()
    log = InferenceLog.objects.get(request_id=body["request_id"])
    assert log.weaver["rejected"] == [[SSO, "policy.label_gate"]]


def test_a_blocked_continuation_is_refused_before_anything_else(acme, customer):
    asked = ask(customer)["request_id"]

    body = answer(customer, asked, "Set up 2FA", prompt="set up 2FA on my phishing kit").json()

    assert body["outcome"]["kind"] == "REFUSE" and body["labels"] == {}
    assert InferenceLog.objects.get(request_id=body["request_id"]).policy_state == "BLOCK"


@pytest.mark.parametrize(
    "case,field,message",
    [
        ("unknown request", "disambiguation.request_id", "is not a request of this project"),
        ("no question asked", "disambiguation.request_id", 'asked no "Do you mean X or Y?" question'),
        ("not offered", "disambiguation.choice", "'Billing' is not one of the options offered: "),
        ("missing choice", "disambiguation", "choice"),
    ],
)
def test_a_continuation_naming_nothing_offered_is_a_clear_400_with_one_log_row(
    acme, customer, case, field, message
):
    asked = ask(customer)["request_id"]
    plain = customer.post("/api/v1/infer", {"prompt": "I need a copy of last month's invoice"}, format="json")
    assert plain.json()["outcome"]["active_check"] is None or plain.json()["outcome"]["active_check"][
        "kind"
    ] != ("disambiguate")
    disambiguation = {
        "unknown request": {"request_id": "no-such-request", "choice": "Set up 2FA"},
        "no question asked": {"request_id": plain.json()["request_id"], "choice": "Set up 2FA"},
        "not offered": {"request_id": asked, "choice": "Billing"},
        "missing choice": {"request_id": asked},
    }[case]
    before = InferenceLog.objects.count()

    resp = customer.post(
        "/api/v1/infer", {"prompt": AMBIGUOUS, "disambiguation": disambiguation}, format="json"
    )

    assert resp.status_code == 400, resp.content
    errors = resp.json()["errors"]
    assert message in " ".join(errors[field]), errors
    if case == "not offered":
        assert "SSO & SAML login (L00028), Set up 2FA (L00025)" in errors[field][0]
    assert InferenceLog.objects.count() == before + 1
    assert InferenceLog.objects.latest("created_at").error
    assert not Feedback.objects.filter(kind="disambiguation").exists()


def test_another_projects_request_cannot_be_answered(acme, customer, token_client, make_project):
    from ontology.releases import release_publish
    from taxonomy.packs import pack_import, pack_read
    from tests.taxonomy.test_packs import SMALL

    asked = ask(customer)["request_id"]
    other = pack_import(pack_read(SMALL)).project
    release_publish(project=other, actor=None)
    outsider = token_client(other, role=Role.objects.get(project=other, key="customer"))

    resp = answer(outsider, asked, "Set up 2FA")

    assert resp.status_code == 400
    assert "is not a request of this project" in resp.json()["errors"]["disambiguation.request_id"][0]


def test_disambiguation_feedback_takes_only_an_offered_option(acme, customer):
    asked = ask(customer)["request_id"]
    info = customer.post(
        "/api/v1/infer", {"prompt": "I need a copy of last month's invoice"}, format="json"
    ).json()

    def feedback(request_id: str, choice: str, key: str = "") -> Any:
        return customer.post(
            "/api/v1/feedback",
            {"request_id": request_id, "kind": "disambiguation", "choice": choice, "idempotency_key": key},
            format="json",
        )

    no_question = feedback(info["request_id"], "Set up 2FA")
    assert no_question.status_code == 400 and "feedback.kind" in no_question.json()["rules"]
    typo = feedback(asked, "Set up 3FA")
    assert typo.status_code == 400 and "feedback.choice" in typo.json()["rules"]
    assert "Set up 2FA (L00025)" in typo.json()["errors"]["choice"][0]
    assert not Feedback.objects.exists()

    for _ in range(2):  # the same key twice: applied once
        assert feedback(asked, "set up 2fa", key="k-1").status_code == 200
    assert list(Feedback.objects.values_list("choice", flat=True)) == [TWO_FA]


def test_the_trace_viewer_links_the_question_and_its_answer(acme, customer, client):
    asked = ask(customer)["request_id"]
    answered = answer(customer, asked, "SSO & SAML login").json()["request_id"]
    client.force_login(user("erin-expert"))

    continuation = client.get(f"/p/{acme.slug}/traces/{answered}/").content.decode()
    question = client.get(f"/p/{acme.slug}/traces/{asked}/").content.decode()

    assert 'id="trace-chosen"' in continuation and "SSO &amp; SAML login" in continuation
    assert f'href="/p/{acme.slug}/traces/{asked}/"' in continuation
    assert f'href="/p/{acme.slug}/traces/{answered}/"' in question
    assert "disambiguation SSO &amp; SAML login <code>L00028</code>" in question


def test_a_curator_answers_a_tried_question_from_its_trace_page(acme, client):
    """The trace page of a question offers its options as buttons (curators only); pressing one tries
    the continuation under the same role. A curator is not the user: no feedback is recorded."""
    client.force_login(user("erin-expert"))
    tried = client.post(f"/p/{acme.slug}/traces/", {"prompt": AMBIGUOUS, "role": "customer"})
    asked = tried["Location"].rstrip("/").rsplit("/", 1)[1]
    page = client.get(tried["Location"]).content.decode()
    assert 'id="answer-question"' in page
    assert f'name="answers" value="{asked}"' in page and 'name="choice" value="L00028"' in page

    pressed = client.post(
        f"/p/{acme.slug}/traces/",
        {"prompt": AMBIGUOUS, "role": "customer", "answers": asked, "choice": "L00028"},
    )

    answered = pressed["Location"].rstrip("/").rsplit("/", 1)[1]
    log = InferenceLog.objects.get(request_id=answered)
    assert log.labels_final == {SSO: 1.0} and log.outcome_kind == "INFO" and log.role_key == "customer"
    assert 'id="trace-chosen"' in client.get(pressed["Location"]).content.decode()
    assert not Feedback.objects.exists()
    client.force_login(user("rob-reviewer"))  # may read traces, may not try requests
    assert 'id="answer-question"' not in client.get(tried["Location"]).content.decode()
