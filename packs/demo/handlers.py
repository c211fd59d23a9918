"""Python action handlers for the demo pack (``packs/demo``), so the demo runs end to end.

Every handler is a *simulation*: deterministic (the same parameters give the same result, references
are derived from a hash of the inputs), side-effect-free (nothing is sent, stored or charged) and
plausible (it answers what the real integration would). A real deployment registers its own handlers
under the same names and lists their modules in ``ARG_ACTION_HANDLER_MODULES``.

Some registrations make node preconditions machine-checkable from the request context (the policy
role, the user id) or the parameters (enumerations, amounts); the others stay "to confirm".
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from inference.actions.registry import ActionContext, Verdict, action_handler

ORG_ADMIN_ROLES = frozenset({"customer-admin"})
STAFF_ROLES = frozenset({"support-agent", "sre-operator", "privacy-officer"})
SIGNED_OUT_ROLES = frozenset({"anonymous-visitor"})

Params = Mapping[str, Any]
Checker = Callable[[ActionContext, Params], Mapping[str, Verdict]]


def reference(prefix: str, *parts: object) -> str:
    """A stable reference for a simulated object, e.g. ``TCK-3F9A1C02``."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return f"{prefix}-{digest[:8].upper()}"


def simulated(result: dict[str, Any]) -> dict[str, Any]:
    return {**result, "simulated": True}


# --- reusable checks ---------------------------------------------------------------------------------


def org_admin(context: ActionContext) -> Verdict:
    """ "Requester is an Owner or Admin"-style preconditions, as far as the policy role tells."""
    if context.role in ORG_ADMIN_ROLES:
        return True, "the request comes from an organization admin"
    if context.role in SIGNED_OUT_ROLES:
        return False, "the requester is not signed in"
    return None


def staff(context: ActionContext) -> Verdict:
    if context.role in STAFF_ROLES:
        return True, f"the request comes from the {context.role} role"
    if context.role is not None:
        return False, f"the {context.role} role is not Acme Cloud staff"
    return None


def one_of(name: str, allowed: tuple[str, ...]) -> Checker:
    text = f"{name} is one of {', '.join(allowed)}"

    def check(context: ActionContext, params: Params) -> Mapping[str, Verdict]:
        value = params.get(name)
        if value is None:
            return {}
        ok = str(value).lower() in allowed
        return {text: (ok, "" if ok else f"got {value!r}")}

    return check


def checks(*checkers: Checker) -> Checker:
    """Merge several checkers into one ``check_preconditions`` callable."""

    def check(context: ActionContext, params: Params) -> Mapping[str, Verdict]:
        merged: dict[str, Verdict] = {}
        for checker in checkers:
            merged.update(checker(context, params))
        return merged

    return check


def role_check(text: str, verdict: Callable[[ActionContext], Verdict]) -> Checker:
    return lambda context, params: {text: verdict(context)}


# --- support -----------------------------------------------------------------------------------------


def _signed_in(context: ActionContext, params: Params) -> Mapping[str, Verdict]:
    signed_in = bool(context.user_id) and context.role not in SIGNED_OUT_ROLES
    return {
        "Requester is signed in or has provided a contact email": (True, "signed in")
        if signed_in
        else (None, "no user id in the request context")
    }


@action_handler(
    "support.open_ticket",
    check_preconditions=checks(
        _signed_in,
        one_of("category", ("billing", "access", "deployments", "incidents", "privacy", "integrations")),
        one_of("priority", ("low", "normal", "high", "urgent")),
    ),
)
def open_ticket(params: Params, context: ActionContext) -> dict[str, Any]:
    ticket = reference("TCK", params["subject"], params["category"], context.user_id)
    return simulated(
        {
            "ticket_id": ticket,
            "queue": params["category"],
            "priority": params.get("priority", "normal"),
            "message": f"Ticket {ticket} opened; support answers by email.",
        }
    )


# --- billing -----------------------------------------------------------------------------------------


@action_handler(
    "billing.resend_invoice",
    check_preconditions=role_check("Requester is an Owner, Admin or Billing member", org_admin),
)
def resend_invoice(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "sent_to": params.get("recipient_email") or "billing email on file",
            "invoice": params["invoice_id"],
            "from": "billing@acmecloud.example",
        }
    )


@action_handler("billing.reissue_invoice")
def reissue_invoice(params: Params, context: ActionContext) -> dict[str, Any]:
    corrected = sorted(k for k in ("legal_name", "address", "tax_id", "po_number") if k in params)
    return simulated(
        {
            "original_invoice": params["invoice_id"],
            "corrected_invoice": f"{params['invoice_id']}-R1",
            "corrected_fields": corrected,
            "credit_note": reference("CN", params["invoice_id"]),
        }
    )


@action_handler("billing.create_card_update_link")
def create_card_update_link(params: Params, context: ActionContext) -> dict[str, Any]:
    token = reference("link", params["org_id"]).lower()
    return simulated(
        {
            "url": f"https://app.acmecloud.example/billing/card/{token}",
            "expires_in_hours": 24,
            "make_default": params.get("make_default", True),
        }
    )


@action_handler("billing.retry_charge")
def retry_charge(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "invoice": params["invoice_id"],
            "charge_id": reference("ch", params["invoice_id"]).lower(),
            "status": "succeeded",
        }
    )


@action_handler("billing.change_plan", check_preconditions=one_of("target_plan", ("pro", "team")))
def change_plan(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "plan": params["target_plan"],
            "billing_cycle": params.get("billing_cycle", "monthly"),
            "seats": params.get("seats"),
            "effective": "immediately, prorated on the next invoice",
        }
    )


@action_handler(
    "billing.schedule_downgrade", check_preconditions=one_of("target_plan", ("hobby", "pro", "team"))
)
def schedule_downgrade(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {"plan": params["target_plan"], "seats": params.get("seats"), "effective": "end of billing period"}
    )


@action_handler(
    "billing.cancel_subscription", check_preconditions=one_of("effective", ("end_of_period", "immediately"))
)
def cancel_subscription(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "cancellation_id": reference("CXL", params["effective"], context.user_id),
            "effective": params["effective"],
            "data_retained_days": 30,
        }
    )


@action_handler("billing.extend_trial")
def extend_trial(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated({"org_id": params["org_id"], "extended_by_days": 14})


def _refund_approval(context: ActionContext, params: Params) -> Mapping[str, Verdict]:
    amount = params.get("amount")
    text = "Supervisor approval recorded for amounts over $500"
    if amount is not None and float(amount) <= 500:
        return {text: (True, "the amount is $500 or less: no approval needed")}
    return {text: None}


@action_handler(
    "billing.issue_refund",
    check_preconditions=checks(
        _refund_approval,
        one_of("reason", ("duplicate", "accidental_purchase", "service_issue", "other")),
    ),
)
def issue_refund(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "refund_id": reference("re", params["charge_id"], params.get("amount")).lower(),
            "charge_id": params["charge_id"],
            "amount": params.get("amount", "full charge"),
            "arrives_in": "5–10 business days",
        }
    )


@action_handler(
    "billing.send_usage_report",
    check_preconditions=role_check("Requester is an Owner, Admin or Billing member", org_admin),
)
def send_usage_report(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {"period": params["period"], "sent_to": params.get("recipient_email") or "the requester's email"}
    )


def _positive_amount(context: ActionContext, params: Params) -> Mapping[str, Verdict]:
    amount = float(params.get("amount", 0))
    return {"The credit amount is positive": (amount > 0, "" if amount > 0 else f"got {amount:g}")}


@action_handler("billing.grant_credit", check_preconditions=_positive_amount)
def grant_credit(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "credit_id": reference("CR", params["org_id"], params["amount"]),
            "amount": params["amount"],
            "applies_to": "the next invoice",
        }
    )


@action_handler("billing.apply_promo_code")
def apply_promo_code(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {"code": str(params["code"]).upper(), "applied": True, "discount": "as per the promotion"}
    )


@action_handler(
    "billing.file_sla_claim",
)
def file_sla_claim(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "claim_id": reference("SLA", params["org_id"], params["incident_id"]),
            "incident_id": params["incident_id"],
            "review_within_days": 10,
        }
    )


# --- accounts and access -----------------------------------------------------------------------------


def _email_shape(name: str) -> Checker:
    def check(context: ActionContext, params: Params) -> Mapping[str, Verdict]:
        value = str(params.get(name, ""))
        local, _, domain = value.partition("@")
        ok = bool(local) and "." in domain
        return {f"{name} is an email address": (ok, "" if ok else f"got {value!r}")}

    return check


@action_handler("accounts.send_password_reset", check_preconditions=_email_shape("email"))
def send_password_reset(params: Params, context: ActionContext) -> dict[str, Any]:
    # Same answer whether or not the account exists, like the real flow (no account enumeration).
    return simulated(
        {"message": "If an account exists for this address, a reset link valid for 1 hour was sent."}
    )


@action_handler(
    "accounts.enforce_org_2fa", check_preconditions=role_check("Requester is an Owner or Admin", org_admin)
)
def enforce_org_2fa(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {"org_id": params["org_id"], "grace_days": params.get("grace_days", 7), "enforced": True}
    )


@action_handler("accounts.reset_2fa")
def reset_2fa(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated({"user_id": params["user_id"], "ticket_id": params["ticket_id"], "two_factor": "reset"})


@action_handler("accounts.grant_sso_bypass")
def grant_sso_bypass(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {"org_id": params["org_id"], "owner_user_id": params["owner_user_id"], "bypass_valid_hours": 24}
    )


MEMBER_ROLES = ("admin", "developer", "billing", "viewer")


@action_handler(
    "accounts.change_member_role",
    check_preconditions=checks(
        role_check("Requester is an Owner or Admin", org_admin), one_of("role", MEMBER_ROLES)
    ),
)
def change_member_role(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated({"member": params["member_email"], "role": params["role"], "org_id": params["org_id"]})


@action_handler(
    "accounts.invite_member",
    check_preconditions=checks(
        role_check("Requester is an Owner or Admin", org_admin),
        one_of("role", MEMBER_ROLES),
        _email_shape("email"),
    ),
)
def invite_member(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "invitation_id": reference("INVITE", params["org_id"], params["email"]),
            "email": params["email"],
            "role": params["role"],
            "expires_in_days": 7,
        }
    )


@action_handler(
    "accounts.remove_member", check_preconditions=role_check("Requester is an Owner or Admin", org_admin)
)
def remove_member(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated({"removed": params["member_email"], "tokens_revoked": params.get("revoke_tokens", True)})


@action_handler("accounts.transfer_ownership")
def transfer_ownership(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {"org_id": params["org_id"], "new_owner": params["new_owner_email"], "previous_owner_role": "admin"}
    )


@action_handler(
    "accounts.change_email", required_context=("user_id",), check_preconditions=_email_shape("new_email")
)
def change_email(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {"user_id": context.user_id, "pending_email": params["new_email"], "confirmation_sent": True}
    )


@action_handler("accounts.close_account")
def close_account(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated({"user_id": params["user_id"], "closed": True, "data_erased_within_days": 30})


def _token_shape(context: ActionContext, params: Params) -> Mapping[str, Verdict]:
    scopes = [str(s) for s in params.get("scopes", [])]
    ok = bool(scopes) and all(s in ("read", "deploy", "admin") for s in scopes)
    return {"scopes are among read, deploy, admin": (ok, "" if ok else f"got {scopes}")}


@action_handler(
    "accounts.create_token",
    check_preconditions=checks(one_of("kind", ("personal", "organization")), _token_shape),
)
def create_token(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "token_id": reference("tok", params["name"], params["kind"]).lower(),
            "name": params["name"],
            "scopes": params["scopes"],
            "expires_in_days": params.get("expires_in_days"),
            "note": "the secret is shown once in the dashboard",
        }
    )


@action_handler("accounts.rotate_tokens")
def rotate_tokens(params: Params, context: ActionContext) -> dict[str, Any]:
    ids = [str(t) for t in params["token_ids"]]
    replacements = (
        [reference("tok", t, "rotated").lower() for t in ids] if params.get("create_replacement") else []
    )
    return simulated({"revoked": ids, "replacements": replacements})


# --- deployments -------------------------------------------------------------------------------------


@action_handler("deployments.clear_cache_and_redeploy")
def clear_cache_and_redeploy(params: Params, context: ActionContext) -> dict[str, Any]:
    environment = params.get("environment", "production")
    return simulated(
        {
            "deploy_id": reference("dep", params["app_id"], environment, "nocache").lower(),
            "build_cache": "cleared",
        }
    )


@action_handler("deployments.trigger_deploy")
def trigger_deploy(params: Params, context: ActionContext) -> dict[str, Any]:
    commit = params.get("commit_sha", "latest")
    return simulated(
        {
            "deploy_id": reference("dep", params["app_id"], commit).lower(),
            "commit": commit,
            "status": "queued",
        }
    )


@action_handler("deployments.rollback")
def rollback(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {"app_id": params["app_id"], "restored_release": params["release_id"], "status": "rolling back"}
    )


def _instances(context: ActionContext, params: Params) -> Mapping[str, Verdict]:
    if "instances" not in params:
        return {}
    count = int(params["instances"])
    return {"instances is between 1 and 100": (1 <= count <= 100, f"got {count}")}


@action_handler(
    "deployments.scale_app", check_preconditions=checks(_instances, one_of("size", ("s", "m", "l", "xl")))
)
def scale_app(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {"app_id": params["app_id"], "instances": params.get("instances"), "size": params.get("size")}
    )


@action_handler(
    "deployments.set_env_vars",
    check_preconditions=one_of("environment", ("production", "staging", "preview")),
)
def set_env_vars(params: Params, context: ActionContext) -> dict[str, Any]:
    # Values are secrets: the result names the variables, never their values.
    return simulated(
        {
            "app_id": params["app_id"],
            "environment": params["environment"],
            "variables_set": sorted(params["variables"]),
            "redeploy": "required for running instances to see the change",
        }
    )


@action_handler("deployments.delete_app")
def delete_app(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated({"app_id": params["app_id"], "deleted": True})


@action_handler("deployments.recheck_domain")
def recheck_domain(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated({"domain": params["domain"], "check": "queued", "dns_propagation": "up to 24 hours"})


@action_handler("deployments.reissue_certificate")
def reissue_certificate(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "domain": params["domain"],
            "order_id": reference("ACME", params["domain"]),
            "expected_within": "10 minutes",
        }
    )


# --- incidents and status ----------------------------------------------------------------------------


def _a_channel(context: ActionContext, params: Params) -> Mapping[str, Verdict]:
    ok = bool(params.get("email") or params.get("webhook_url"))
    return {"An email address or a webhook URL is given": (ok, "" if ok else "neither was given")}


@action_handler("status.subscribe", check_preconditions=_a_channel)
def status_subscribe(params: Params, context: ActionContext) -> dict[str, Any]:
    target = params.get("email") or params.get("webhook_url")
    return simulated(
        {"subscription_id": reference("SUB", target), "components": params.get("components") or "all"}
    )


def _severity(context: ActionContext, params: Params) -> Mapping[str, Verdict]:
    value = str(params.get("severity", "")).lower()
    ok = value in ("sev1", "sev2", "sev3", "sev4")
    return {"Severity has been chosen": (ok, "" if ok else f"{value!r} is not sev1–sev4")}


def _on_call(context: ActionContext) -> Verdict:
    if context.role is not None and context.role not in STAFF_ROLES:
        return False, f"the {context.role} role is not on an on-call rotation"
    return None


@action_handler(
    "incidents.declare",
    check_preconditions=checks(
        _severity, role_check("Requester is on an engineering or support on-call rotation", _on_call)
    ),
)
def declare_incident(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "incident_id": reference("INC", params["title"], params["severity"]),
            "severity": str(params["severity"]).lower(),
            "components": params["components"],
            "status_page": "draft created",
        }
    )


@action_handler(
    "status.post_update",
    check_preconditions=one_of("state", ("investigating", "identified", "monitoring", "resolved")),
)
def post_status_update(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "incident_id": params["incident_id"],
            "state": params["state"],
            "update_id": reference("UPD", params["incident_id"], params["state"], params["message"]),
        }
    )


@action_handler("incidents.create_postmortem")
def create_postmortem(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "incident_id": params["incident_id"],
            "owner": params["owner"],
            "document": "postmortem draft created",
        }
    )


def _team_and_urgency(context: ActionContext, params: Params) -> Mapping[str, Verdict]:
    team_ok = str(params.get("team")) in ("platform", "builds", "networking", "database", "billing")
    urgency_ok = str(params.get("urgency")) in ("high", "low")
    ok = team_ok and urgency_ok
    return {"Team and urgency are specified": (ok, "" if ok else "team or urgency is not a known value")}


@action_handler(
    "oncall.page",
    check_preconditions=checks(
        _team_and_urgency, role_check("Requester is an Acme Cloud staff member", staff)
    ),
)
def page_oncall(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "page_id": reference("PAGE", params["team"], params["summary"]),
            "team": params["team"],
            "acknowledge_within_minutes": 5 if params["urgency"] == "high" else 30,
        }
    )


def _distinct_regions(context: ActionContext, params: Params) -> Mapping[str, Verdict]:
    ok = params.get("from_region") != params.get("to_region")
    return {
        "The target region differs from the impaired region": (ok, "" if ok else "both regions are the same")
    }


@action_handler("oncall.region_failover", check_preconditions=_distinct_regions)
def region_failover(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "from_region": params["from_region"],
            "to_region": params["to_region"],
            "failover": "initiated",
            "incident_id": params["incident_id"],
        }
    )


# --- data and privacy --------------------------------------------------------------------------------


def _export_scope(context: ActionContext, params: Params) -> Mapping[str, Verdict]:
    scope = str(params.get("scope", ""))
    if scope == "project":
        ok = bool(params.get("project_id"))
        return {"A project export names the project": (ok, "" if ok else "project_id is missing")}
    if scope == "account":
        if context.user_id:
            return {"An account export knows the account": (True, "")}
        return {"An account export knows the account": (False, "no user id in the request context")}
    return {"scope is one of account, project": (False, f"got {scope!r}")}


@action_handler("privacy.start_export", check_preconditions=_export_scope)
def start_export(params: Params, context: ActionContext) -> dict[str, Any]:
    subject = params.get("project_id") or context.user_id
    return simulated(
        {
            "export_id": reference("EXP", params["scope"], subject),
            "ready_within_hours": 24,
            "delivery": "download link by email",
        }
    )


@action_handler("privacy.submit_erasure")
def submit_erasure(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {"deletion_id": reference("DEL", params["user_id"], params["ticket_id"]), "completes_within_days": 30}
    )


@action_handler("privacy.delete_project")
def delete_project(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "project_id": params["project_id"],
            "deletion_id": reference("DEL", params["project_id"]),
            "deleted": True,
        }
    )


@action_handler("privacy.send_deletion_letter", check_preconditions=_email_shape("recipient_email"))
def send_deletion_letter(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated({"deletion_id": params["deletion_id"], "sent_to": params["recipient_email"]})


@action_handler(
    "privacy.send_dpa",
    check_preconditions=checks(
        role_check("Requester is an Owner or Admin", org_admin), _email_shape("signatory_email")
    ),
)
def send_dpa(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "envelope_id": reference("DPA", params["org_id"], params["signatory_email"]),
            "sent_to": params["signatory_email"],
        }
    )


@action_handler("privacy.request_soc2", check_preconditions=_email_shape("requester_email"))
def request_soc2(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {"request_id": reference("SOC2", params["requester_email"]), "next_step": "NDA sent for signature"}
    )


@action_handler("privacy.migrate_region")
def migrate_region(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "migration_id": reference("MIG", params["project_id"], params["target_region"]),
            "target_region": params["target_region"],
            "write_freeze_starts": params["switch_at"],
        }
    )


@action_handler("security.lock_account")
def lock_account(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {"user_id": params["user_id"], "locked": True, "sessions_revoked": True, "tokens_revoked": True}
    )


# --- integrations ------------------------------------------------------------------------------------


@action_handler("integrations.reconnect_github")
def reconnect_github(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "org_id": params["org_id"],
            "installation_id": params.get("installation_id"),
            "status": "reconnected",
        }
    )


def _slack_events(context: ActionContext, params: Params) -> Mapping[str, Verdict]:
    known = ("deploy.failed", "deploy.succeeded", "build.failed", "status.incident")
    events = [str(e) for e in params.get("events", [])]
    ok = bool(events) and all(e in known for e in events)
    return {f"events are among {', '.join(known)}": (ok, "" if ok else f"got {events}")}


@action_handler("integrations.add_slack_rule", check_preconditions=_slack_events)
def add_slack_rule(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "rule_id": reference("SLK", params["project_id"], params["channel"]),
            "channel": params["channel"],
            "events": params["events"],
        }
    )


@action_handler("integrations.rotate_webhook_secret")
def rotate_webhook_secret(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "webhook_id": params["webhook_id"],
            "overlap_hours": params.get("overlap_hours", 24),
            "new_secret": "shown once in the dashboard",
        }
    )


@action_handler("integrations.replay_webhooks")
def replay_webhooks(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "webhook_id": params["webhook_id"],
            "since": params["since"],
            "only_failed": params.get("only_failed", True),
            "replay_id": reference("RPL", params["webhook_id"], params["since"]),
        }
    )


@action_handler("integrations.add_log_drain")
def add_log_drain(params: Params, context: ActionContext) -> dict[str, Any]:
    return simulated(
        {
            "drain_id": reference("DRN", params["project_id"], params["url"]),
            "include_build_logs": params.get("include_build_logs", False),
        }
    )
