"""Step 8 — ARG-Action on the demo pack's release: checkpoints, clarification, handlers, idempotency."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from types import MappingProxyType
from typing import Any

import pytest

from inference.actions import ActionFailed, HandlerRegistry, action_handler, default_registry, run_action
from inference.contracts import (
    Envelope,
    OutcomeKind,
    PolicyConstraints,
    PolicyDecision,
    PolicyState,
    RequestContext,
    ResponseMode,
)
from inference.models import ActionExecution

from .loopback import Reply, loopback_server

pytestmark = pytest.mark.django_db

RESEND = "N-billing-resend-invoice"  # DirectAction, low risk, python:billing.resend_invoice
CANCEL = "N-billing-cancel-subscription"  # Action, high risk, python:billing.cancel_subscription
RETRY = "N-billing-retry-payment"  # Action, medium risk, python:billing.retry_charge
UPGRADE = "N-billing-upgrade-plan"  # DirectAction, medium risk, seats: integer
INVOICE = {"invoice_id": "INV-2024-004512"}


def envelope(
    *, role: str = "customer", user_id: str | None = "u-42", request_id: str = "r-act-1"
) -> Envelope:
    return Envelope(
        request_id=request_id,
        project_id=1,
        prompt_raw="please do it",
        prompt="please do it",
        language="en",
        language_confidence=1.0,
        context=RequestContext(role=role, user_id=user_id, session_id="s-1", channel="web"),
        role_key=role,
        typology_key=None,
    )


def decision(state: PolicyState = PolicyState.ALLOW, **constraints: Any) -> PolicyDecision:
    return PolicyDecision(
        state=state, constraints=PolicyConstraints(**constraints), response_mode=ResponseMode.NORMAL
    )


class Counting:
    """A registry whose handlers count their calls and answer ``{"ok": True, "n": <call number>}``."""

    def __init__(self, *names: str, delay_s: float = 0.0, **options: Any) -> None:
        self.registry = HandlerRegistry()
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        for name in names:

            @action_handler(name, registry=self.registry, **options)
            def handle(params: Any, context: Any) -> dict[str, Any]:
                time.sleep(delay_s)
                with self._lock:
                    self.calls.append(dict(params))
                    return {"ok": True, "n": len(self.calls)}


def act(snapshot: Any, project: Any, node_id: str = RESEND, **kwargs: Any) -> Any:
    args: dict[str, Any] = {
        "snapshot": snapshot,
        "node_id": node_id,
        "envelope": envelope(),
        "decision": decision(),
        "parameters": {},
        "dry_run": False,
        "idempotency_key": None,
        "project_id": project.pk,
    }
    args.update(kwargs)
    return run_action(**args)


def with_handler(snapshot: Any, node_id: str, handler: str) -> Any:
    """The snapshot with one node's handler replaced (the demo pack declares only Python handlers)."""
    extras = list(snapshot.extras)
    position = snapshot.position[node_id]
    extras[position] = MappingProxyType({**extras[position], "handler": handler})
    return replace(snapshot, extras=tuple(extras))


# --- Python handlers and the demo handlers -----------------------------------------------------------


def test_a_python_handler_runs_and_its_execution_is_recorded(demo_snapshot, project):
    outcome = act(demo_snapshot, project, parameters=INVOICE, idempotency_key="k-1")

    assert outcome.kind == OutcomeKind.ACTION
    action = outcome.action
    assert action["status"] == "SUCCEEDED"
    assert action["handler"] == "python:billing.resend_invoice"
    assert action["node_id"] == RESEND
    assert action["parameters"] == INVOICE
    assert action["idempotency_key"] == "k-1"
    assert action["result"] == {
        "sent_to": "billing email on file",
        "invoice": "INV-2024-004512",
        "from": "billing@acmecloud.example",
        "simulated": True,
    }
    assert action["explanation"] == outcome.answer
    assert outcome.answer.startswith("“Resend an invoice by email”: done.")
    row = ActionExecution.objects.get()
    assert (row.project_id, row.idempotency_key, row.request_id) == (project.pk, "k-1", "r-act-1")
    assert (row.node_id, row.handler, row.status) == (RESEND, "python:billing.resend_invoice", "SUCCEEDED")
    assert row.parameters == INVOICE
    assert row.result == {**action["result"], "from": "<EMAIL>"}  # stored as the Memory Guard scrubbed it


def test_uncheckable_preconditions_are_listed_to_confirm(demo_snapshot, project):
    customer = act(demo_snapshot, project, parameters=INVOICE)
    admin = act(
        demo_snapshot, project, parameters=INVOICE, envelope=envelope(role="customer-admin", request_id="r-2")
    )

    assert customer.answer == (
        "“Resend an invoice by email”: done. Preconditions to confirm (not checked automatically): "
        "Invoice belongs to the requester's organization; Requester is an Owner, Admin or Billing member."
    )
    assert [p["status"] for p in customer.action["preconditions"]] == ["to_confirm", "to_confirm"]
    assert admin.action["preconditions"][1] == {
        "precondition": "Requester is an Owner, Admin or Billing member",
        "status": "met",
        "reason": "the request comes from an organization admin",
    }
    assert admin.answer.endswith(
        "(not checked automatically): Invoice belongs to the requester's organization."
    )


def test_every_demo_action_has_a_registered_handler_that_runs(demo_snapshot, project):
    registered = default_registry().names()
    actions = [
        demo_snapshot.node(i)
        for i in range(demo_snapshot.node_count)
        if demo_snapshot.node(i).type in ("Action", "DirectAction")
    ]
    assert len(actions) == 53

    for i, node in enumerate(actions):
        assert node.extras["handler"].removeprefix("python:") in registered
        outcome = act(
            demo_snapshot,
            project,
            node_id=node.node_id,
            envelope=envelope(role="support-agent", request_id=f"r-demo-{i}"),
            parameters={**plausible_parameters(node.extras["parameters"]), "confirm": True},
        )
        assert outcome.action["status"] == "SUCCEEDED", (node.node_id, outcome.answer)
        assert outcome.action["result"]["simulated"] is True
    assert ActionExecution.objects.filter(status="SUCCEEDED").count() == 53


EXAMPLE_IDS = {"INV-": "INV-2024-004512", "ch_": "ch_3PqA9x2B", "wh_": "wh_8Kq2x", r"\d{4}-\d{2}": "2024-05"}


def plausible_parameters(declared: list[dict[str, Any]]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for p in declared:
        options = (
            [o.strip() for o in p["description"].split("(")[0].split("|")] if "|" in p["description"] else []
        )
        name, kind = p["name"], p["type"]
        if kind == "enum":
            values[name] = p["values"][0]
        elif kind == "identifier" or p.get("pattern"):
            values[name] = next(v for k, v in EXAMPLE_IDS.items() if k in p["pattern"])
        elif kind == "list":
            values[name] = options[:1] or ["item-1"]
        elif kind == "map":
            values[name] = {"LOG_LEVEL": "debug"}
        elif kind == "integer":
            values[name] = 2
        elif kind == "number":
            values[name] = 40
        elif kind == "boolean":
            values[name] = True
        elif kind == "datetime":
            values[name] = "2025-03-01T09:00:00+00:00"
        elif "email" in name:
            values[name] = "ops@example.com"
        else:
            values[name] = options[0] if options else f"{name}-1"
    return values


# --- clarification -----------------------------------------------------------------------------------


def test_missing_required_parameters_are_asked_for_in_one_question(demo_snapshot, project):
    counting = Counting("billing.resend_invoice")

    outcome = act(
        demo_snapshot, project, parameters={"recipient_email": "a@b.example"}, registry=counting.registry
    )

    assert outcome.kind == OutcomeKind.CLARIFY
    assert outcome.missing_parameters == ("invoice_id",)
    assert outcome.answer == (
        "To resend an invoice by email, please provide: invoice_id (Invoice number, e.g. INV-2024-004512)."
    )
    assert outcome.action["status"] == "NEEDS_PARAMETERS"
    assert outcome.action["parameters"] == {"recipient_email": "a@b.example"}
    assert counting.calls == []
    assert ActionExecution.objects.count() == 0


def test_ill_typed_parameters_are_clarified_and_well_typed_ones_coerced(demo_snapshot, project):
    counting = Counting("billing.change_plan")

    bad = act(
        demo_snapshot,
        project,
        node_id=UPGRADE,
        parameters={"target_plan": "pro", "seats": "many"},
        registry=counting.registry,
    )
    good = act(
        demo_snapshot,
        project,
        node_id=UPGRADE,
        parameters={"target_plan": "pro", "seats": "5", "colour": "red"},
        registry=counting.registry,
    )

    assert bad.kind == OutcomeKind.CLARIFY
    assert bad.missing_parameters == ("seats",)
    assert bad.action["invalid_parameters"] == {"seats": "a whole number"}
    assert bad.answer == "To upgrade the plan, please provide: seats (a whole number)."
    assert good.action["status"] == "SUCCEEDED"
    assert counting.calls == [{"target_plan": "pro", "seats": 5}]
    assert good.action["ignored_parameters"] == ["colour"]


# --- preconditions -----------------------------------------------------------------------------------


def test_an_unmet_machine_checked_precondition_stops_the_action(demo_snapshot, project):
    counting = Counting(
        "oncall.page",
        check_preconditions=lambda ctx, params: {
            "Requester is an Acme Cloud staff member": (ctx.role == "sre-operator", "policy role")
        },
    )
    page = {"team": "platform", "urgency": "high", "summary": "EU deploys fail"}

    refused = act(
        demo_snapshot, project, node_id="N-incident-page-oncall", parameters=page, registry=counting.registry
    )
    allowed = act(
        demo_snapshot,
        project,
        node_id="N-incident-page-oncall",
        parameters=page,
        registry=counting.registry,
        envelope=envelope(role="sre-operator", request_id="r-2"),
    )

    assert refused.kind == OutcomeKind.ACTION
    assert refused.action["status"] == "PRECONDITION_FAILED"
    assert refused.answer.endswith(
        "I could not page the on-call engineer here: Requester is an Acme Cloud staff member (policy role)."
    )
    assert allowed.action["status"] == "SUCCEEDED"
    assert len(counting.calls) == 1
    assert ActionExecution.objects.count() == 1


def test_a_handler_invariant_outside_the_node_preconditions_is_enforced(demo_snapshot, project):
    outcome = act(
        demo_snapshot, project, node_id="N-incident-subscribe-status", parameters={"components": ["api"]}
    )

    assert outcome.action["status"] == "PRECONDITION_FAILED"
    assert outcome.action["preconditions"] == [
        {
            "precondition": "An email address or a webhook URL is given",
            "status": "unmet",
            "reason": "neither was given",
        }
    ]
    assert ActionExecution.objects.count() == 0


def test_required_context_comes_from_the_calling_application(demo_snapshot, project):
    node = "N-access-change-email"
    anonymous = act(
        demo_snapshot,
        project,
        node_id=node,
        parameters={"new_email": "new@example.com"},
        envelope=envelope(user_id=None),
    )
    known = act(demo_snapshot, project, node_id=node, parameters={"new_email": "new@example.com"})

    assert anonymous.action["status"] == "PRECONDITION_FAILED"
    assert anonymous.action["preconditions"] == [
        {
            "precondition": "The request context provides user_id",
            "status": "unmet",
            "reason": "the calling application did not send user_id",
        }
    ]
    assert known.action["status"] == "SUCCEEDED"
    assert known.action["result"]["user_id"] == "u-42"


def test_a_failing_precondition_check_blocks_rather_than_skips(demo_snapshot, project):
    def broken(ctx: Any, params: Any) -> dict[str, Any]:
        raise KeyError("plan")

    counting = Counting("billing.resend_invoice", check_preconditions=broken)

    outcome = act(demo_snapshot, project, parameters=INVOICE, registry=counting.registry)

    assert outcome.action["status"] == "PRECONDITION_FAILED"
    assert "the check raised KeyError('plan')" in outcome.answer
    assert counting.calls == []


# --- policy checkpoints and confirmation -------------------------------------------------------------


def test_a_node_type_the_policy_forbids_is_refused(demo_snapshot, project):
    counting = Counting("billing.resend_invoice")
    forbidden = decision(forbidden_node_types=frozenset({"Action", "DirectAction"}))

    outcome = act(demo_snapshot, project, parameters=INVOICE, decision=forbidden, registry=counting.registry)

    assert outcome.kind == OutcomeKind.REFUSE
    assert outcome.action["status"] == "NOT_ALLOWED"
    assert outcome.answer == "“Resend an invoice by email” is not available under your access policy."
    assert counting.calls == []
    assert ActionExecution.objects.count() == 0


def test_a_node_whose_labels_the_policy_forbids_is_refused(demo_snapshot, project):
    outcome = act(
        demo_snapshot, project, parameters=INVOICE, decision=decision(forbidden_labels=frozenset({"L00004"}))
    )

    assert outcome.kind == OutcomeKind.REFUSE
    assert outcome.answer == "“Resend an invoice by email” is outside what your access policy allows."


def test_a_high_risk_action_is_refused_unless_the_policy_state_is_allow(demo_snapshot, project):
    counting = Counting("billing.cancel_subscription")

    outcome = act(
        demo_snapshot,
        project,
        node_id=CANCEL,
        parameters={"effective": "end_of_period", "confirm": True},
        decision=decision(PolicyState.RESTRICT),
        registry=counting.registry,
    )

    assert outcome.kind == OutcomeKind.REFUSE
    assert outcome.action["status"] == "NOT_ALLOWED"
    assert "high-risk action and cannot run while the request is restricted" in outcome.answer
    assert counting.calls == []


def test_a_high_risk_action_runs_only_after_explicit_confirmation(demo_snapshot, project):
    counting = Counting("billing.cancel_subscription")
    params = {"effective": "end_of_period"}

    asked = act(demo_snapshot, project, node_id=CANCEL, parameters=params, registry=counting.registry)
    declined = act(
        demo_snapshot,
        project,
        node_id=CANCEL,
        parameters={**params, "confirm": "no"},
        registry=counting.registry,
    )
    done = act(
        demo_snapshot,
        project,
        node_id=CANCEL,
        parameters={**params, "confirm": "true"},
        registry=counting.registry,
    )

    assert asked.kind == declined.kind == OutcomeKind.CLARIFY
    assert asked.missing_parameters == ("confirm",)
    assert asked.action["status"] == "NEEDS_CONFIRMATION"
    assert asked.answer.startswith(
        "Please confirm: cancel the subscription with effective=end_of_period. This is a high-risk action. "
        "Send the same request with confirm=true to proceed."
    )
    assert done.action["status"] == "SUCCEEDED"
    assert counting.calls == [params]  # "confirm" is a control parameter, never forwarded


def test_a_medium_risk_action_asks_for_confirmation_only_under_restrict(demo_snapshot, project):
    counting = Counting("billing.retry_charge")

    restricted = act(
        demo_snapshot,
        project,
        node_id=RETRY,
        parameters={"invoice_id": "INV-2024-000001"},
        decision=decision(PolicyState.RESTRICT),
        registry=counting.registry,
    )
    allowed = act(
        demo_snapshot,
        project,
        node_id=RETRY,
        parameters={"invoice_id": "INV-2024-000001"},
        registry=counting.registry,
    )

    assert restricted.kind == OutcomeKind.CLARIFY
    assert restricted.missing_parameters == ("confirm",)
    assert allowed.action["status"] == "SUCCEEDED"
    assert len(counting.calls) == 1


# --- dry run, failures -------------------------------------------------------------------------------


def test_a_dry_run_validates_and_shows_the_call_without_running_it(demo_snapshot, project):
    counting = Counting("billing.cancel_subscription")
    params = {"effective": "immediately"}

    dry = act(
        demo_snapshot,
        project,
        node_id=CANCEL,
        parameters=params,
        dry_run=True,
        idempotency_key="k-9",
        registry=counting.registry,
    )

    assert dry.kind == OutcomeKind.ACTION
    assert dry.action["status"] == "DRY_RUN"
    assert dry.action["result"]["would_send"]["call"] == "python:billing.cancel_subscription"
    assert dry.action["result"]["would_send"]["parameters"] == params
    assert counting.calls == []
    row = ActionExecution.objects.get()
    assert (row.status, row.idempotency_key) == ("DRY_RUN", "dry-run:r-act-1")
    # the caller's key was not consumed: the real, confirmed run happens
    real = act(
        demo_snapshot,
        project,
        node_id=CANCEL,
        parameters={**params, "confirm": True},
        idempotency_key="k-9",
        registry=counting.registry,
    )
    assert real.action["status"] == "SUCCEEDED"
    assert counting.calls == [params]


def test_an_unknown_handler_fails_with_a_clear_explanation(demo_snapshot, project):
    empty = HandlerRegistry()

    outcome = act(demo_snapshot, project, parameters=INVOICE, registry=empty)

    assert outcome.kind == OutcomeKind.ACTION
    assert outcome.action["status"] == "FAILED"
    assert outcome.answer == "no handler registered for python:billing.resend_invoice."
    assert ActionExecution.objects.count() == 0


@pytest.mark.parametrize(
    ("raised", "explanation"),
    [
        (
            ActionFailed("Invoice INV-2024-004512 is not in this organization"),
            "Invoice INV-2024-004512 is not in this organization",
        ),
        (RuntimeError("boom"), "the handler raised RuntimeError: boom"),
    ],
)
def test_a_raising_handler_is_a_failed_action_not_an_exception(demo_snapshot, project, raised, explanation):
    registry = HandlerRegistry()

    @action_handler("billing.resend_invoice", registry=registry)
    def fails(params: Any, context: Any) -> dict[str, Any]:
        raise raised

    outcome = act(demo_snapshot, project, parameters=INVOICE, registry=registry)

    assert outcome.action["status"] == "FAILED"
    assert outcome.action["result"] == {"error": explanation}
    assert outcome.answer.startswith(f"“Resend an invoice by email” failed: {explanation}.")
    assert ActionExecution.objects.get().status == "FAILED"


# --- webhooks ----------------------------------------------------------------------------------------


def test_a_webhook_handler_posts_json_and_records_the_answer(demo_snapshot, project):
    with loopback_server(lambda request: Reply(200, {"queued": True, "job": "J-7"})) as hook:
        snapshot = with_handler(demo_snapshot, RESEND, f"webhook:{hook.url}/actions/resend")
        outcome = act(snapshot, project, parameters=INVOICE, idempotency_key="k-web")

    assert outcome.action["status"] == "SUCCEEDED"
    assert outcome.action["result"] == {"queued": True, "job": "J-7"}
    (request,) = hook.requests
    assert request["path"] == "/actions/resend"
    assert request["headers"]["Idempotency-Key"] == "k-web"
    assert request["headers"]["Content-Type"] == "application/json"
    body = request["json"]
    assert (body["action"], body["handler"]) == (RESEND, "webhook")  # the URL is for curators only
    assert body["parameters"] == INVOICE
    assert body["context"]["user_id"] == "u-42"
    assert body["context"]["role"] == "customer"
    assert ActionExecution.objects.get().result == {"queued": True, "job": "J-7"}


def test_a_webhook_answering_500_is_a_failed_action(demo_snapshot, project):
    with loopback_server(lambda request: Reply(500, {"error": "upstream exploded"})) as hook:
        snapshot = with_handler(demo_snapshot, RESEND, f"webhook:{hook.url}/hook")
        outcome = act(snapshot, project, parameters=INVOICE)

    assert outcome.kind == OutcomeKind.ACTION
    assert outcome.action["status"] == "FAILED"
    assert outcome.action["result"] == {"error": "the webhook answered HTTP 500", "http_status": 500}
    assert "upstream exploded" not in json.dumps(outcome.action)  # the reply body is not relayed
    assert outcome.answer.startswith("“Resend an invoice by email” failed: the webhook answered HTTP 500.")
    assert ActionExecution.objects.get().status == "FAILED"


def test_a_silent_webhook_times_out(demo_snapshot, project):
    with loopback_server(lambda request: Reply(200, {"late": True}, delay_s=1.5)) as hook:
        snapshot = with_handler(demo_snapshot, RESEND, f"webhook:{hook.url}/slow")
        started = time.perf_counter()
        outcome = act(snapshot, project, parameters=INVOICE, timeout_s=0.3)
        elapsed = time.perf_counter() - started

    assert elapsed < 1.2
    assert outcome.kind == OutcomeKind.ACTION
    assert outcome.action["status"] == "TIMEOUT"
    assert outcome.action["result"] == {"error": "no answer within 0.3 s"}
    assert "whether the action happened is unknown" in outcome.answer
    assert ActionExecution.objects.get().status == "TIMEOUT"


def test_the_webhook_timeout_defaults_to_the_setting(demo_snapshot, project, settings):
    settings.ACTION_TIMEOUT_S = 1
    with loopback_server(lambda request: Reply(200, {}, delay_s=2.5)) as hook:
        snapshot = with_handler(demo_snapshot, RESEND, f"webhook:{hook.url}/slow")
        outcome = act(snapshot, project, parameters=INVOICE)

    assert outcome.action["result"] == {"error": "no answer within 1 s"}


def test_an_unreachable_webhook_is_a_failed_action(demo_snapshot, project, settings):
    with loopback_server(lambda request: Reply()) as hook:
        url = hook.url
    settings.OUTBOUND_ALLOW = ["127.0.0.1"]  # allowed, but nothing listens there any more
    snapshot = with_handler(demo_snapshot, RESEND, f"webhook:{url}/gone")

    outcome = act(snapshot, project, parameters=INVOICE)

    assert outcome.action["status"] == "FAILED"
    assert outcome.action["result"]["error"].startswith("the webhook could not be reached")


def test_a_webhook_dry_run_shows_the_request_and_sends_nothing(demo_snapshot, project):
    with loopback_server(lambda request: Reply()) as hook:
        snapshot = with_handler(demo_snapshot, RESEND, f"webhook:{hook.url}/hook")
        outcome = act(snapshot, project, parameters=INVOICE, dry_run=True)

    assert hook.requests == []
    would_send = outcome.action["result"]["would_send"]
    assert would_send["method"] == "POST" and hook.url not in json.dumps(outcome.action)
    assert would_send["headers"]["Idempotency-Key"] == "dry-run:r-act-1"
    assert would_send["body"]["parameters"] == INVOICE


def test_a_non_http_webhook_url_is_refused_before_anything_is_sent(demo_snapshot, project):
    snapshot = with_handler(demo_snapshot, RESEND, "webhook:file:///etc/passwd")

    outcome = act(snapshot, project, parameters=INVOICE)

    assert outcome.action["status"] == "FAILED"
    assert outcome.answer == "unsupported webhook URL scheme 'file'; use http or https."
    assert ActionExecution.objects.count() == 0


# --- idempotency -------------------------------------------------------------------------------------


def test_a_repeated_idempotency_key_returns_the_stored_result_without_acting_again(demo_snapshot, project):
    counting = Counting("billing.resend_invoice")

    first = act(
        demo_snapshot, project, parameters=INVOICE, idempotency_key="k-same", registry=counting.registry
    )
    second = act(
        demo_snapshot,
        project,
        parameters=INVOICE,
        idempotency_key="k-same",
        registry=counting.registry,
        envelope=envelope(request_id="r-act-2"),
    )
    other = act(
        demo_snapshot,
        project,
        parameters=INVOICE,
        idempotency_key="k-other",
        registry=counting.registry,
        envelope=envelope(request_id="r-act-3"),
    )

    assert len(counting.calls) == 2  # k-same once, k-other once
    assert first.action["result"] == second.action["result"] == {"ok": True, "n": 1}
    assert other.action["result"] == {"ok": True, "n": 2}
    assert second.action["replayed"] is True and first.action["replayed"] is False
    assert second.answer == (
        "Returned the recorded result of the execution with idempotency key k-same (request r-act-1, "
        "SUCCEEDED); the action was not run again."
    )
    assert ActionExecution.objects.filter(idempotency_key="k-same").count() == 1


def test_an_idempotency_key_belongs_to_its_caller_and_node(demo_snapshot, project):
    """Another caller's key is another key (a stranger never receives the first caller's parameters or
    result); the same caller reusing its key for other parameters is refused with a 409 naming the
    rule, and retrying the original request still replays its result."""
    from inference.actions.execute import IdempotencyKeyReused

    counting = Counting("billing.resend_invoice")
    other_invoice = {"invoice_id": "INV-2024-009999"}
    mine = act(
        demo_snapshot,
        project,
        parameters=INVOICE,
        idempotency_key="k-shared",
        caller="token:1",
        registry=counting.registry,
    )
    theirs = act(
        demo_snapshot,
        project,
        parameters=other_invoice,
        idempotency_key="k-shared",
        caller="token:2",
        registry=counting.registry,
        envelope=envelope(request_id="r-act-2"),
    )
    assert len(counting.calls) == 2 and counting.calls[1] == other_invoice
    assert theirs.action["replayed"] is False and theirs.action["parameters"] == other_invoice
    assert theirs.action["result"] == {"ok": True, "n": 2}

    with pytest.raises(IdempotencyKeyReused) as refused:
        act(
            demo_snapshot,
            project,
            parameters=other_invoice,
            idempotency_key="k-shared",
            caller="token:1",
            registry=counting.registry,
            envelope=envelope(request_id="r-act-3"),
        )
    assert refused.value.status_code == 409
    assert refused.value.as_dict()["rules"] == ["action.idempotency_key_reused"]
    assert "r-act-1" in refused.value.message

    retried = act(
        demo_snapshot,
        project,
        parameters={**INVOICE, "confirm": True},
        idempotency_key="k-shared",
        caller="token:1",
        registry=counting.registry,
        envelope=envelope(request_id="r-act-4"),
    )
    assert retried.action["replayed"] is True and retried.action["result"] == mine.action["result"]
    assert len(counting.calls) == 2
    assert sorted(ActionExecution.objects.values_list("caller", flat=True)) == ["token:1", "token:2"]


def test_a_stored_timeout_is_replayed_not_retried(demo_snapshot, project):
    with loopback_server(lambda request: Reply(200, {}, delay_s=1.0)) as hook:
        snapshot = with_handler(demo_snapshot, RESEND, f"webhook:{hook.url}/slow")
        first = act(snapshot, project, parameters=INVOICE, idempotency_key="k-t", timeout_s=0.2)
        second = act(snapshot, project, parameters=INVOICE, idempotency_key="k-t", timeout_s=0.2)

    assert first.action["status"] == second.action["status"] == "TIMEOUT"
    assert second.action["replayed"] is True
    assert len(hook.requests) == 1


def test_keys_are_per_project(demo_snapshot, project, other_project):
    counting = Counting("billing.resend_invoice")

    act(demo_snapshot, project, parameters=INVOICE, idempotency_key="k-p", registry=counting.registry)
    act(demo_snapshot, other_project, parameters=INVOICE, idempotency_key="k-p", registry=counting.registry)

    assert len(counting.calls) == 2
    assert ActionExecution.objects.filter(idempotency_key="k-p").count() == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicates_run_the_handler_once(demo_snapshot, project):
    from django.db import connection

    counting = Counting("billing.resend_invoice", delay_s=0.4)
    outcomes: list[Any] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def call(request_id: str) -> None:
        try:
            barrier.wait()
            outcomes.append(
                act(
                    demo_snapshot,
                    project,
                    parameters=INVOICE,
                    idempotency_key="k-race",
                    registry=counting.registry,
                    envelope=envelope(request_id=request_id),
                )
            )
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=call, args=(f"r-race-{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert errors == []
    assert len(counting.calls) == 1
    assert ActionExecution.objects.filter(idempotency_key="k-race").count() == 1
    assert [o.action["result"] for o in outcomes] == [{"ok": True, "n": 1}, {"ok": True, "n": 1}]
    assert sorted(o.action["replayed"] for o in outcomes) == [False, True]
    assert ActionExecution.objects.get().status == "SUCCEEDED"


# --- registry ----------------------------------------------------------------------------------------


def test_the_registry_refuses_duplicate_names_and_unknown_context_keys():
    registry = HandlerRegistry()

    @action_handler("x.y", registry=registry)
    def first(params: Any, context: Any) -> dict[str, Any]:
        return {}

    with pytest.raises(ValueError, match="already registered"):
        action_handler("x.y", registry=registry)(lambda params, context: {})
    with pytest.raises(ValueError, match="unknown context keys"):
        action_handler("x.z", registry=registry, required_context=("shoe_size",))(lambda params, context: {})
    with pytest.raises(ValueError, match="bare name"):
        action_handler("python:x.w", registry=registry)
    assert registry.names() == frozenset({"x.y"})


def test_a_non_action_node_is_a_caller_error(demo_snapshot, project):
    with pytest.raises(ValueError, match="N-access-2fa-setup is a Info, not an Action"):
        act(demo_snapshot, project, node_id="N-access-2fa-setup")
