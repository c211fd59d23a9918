"""The hidden "true" domain of the offline-loop simulation, with its planted defects.

"Orbit Hosting" support: three clusters (account, billing, deploy), 15 true intents. Every intent has
a *fact* — the sentence a good answer rests on — and paraphrased prompts. The knowledge pack the
platform starts from (``pack``) is what a hurried expert would have written, with planted defects the
offline loop should find:

===================  ===========================================================================
defect               what is wrong in the starting pack
===================  ===========================================================================
``split``            ``N-signin`` answers two intents (password reset and lost 2FA device) at once
``merge``            ``N-billing-email`` and ``N-invoice-recipient`` say the same thing twice
``child_label``      invoice-currency requests have no label (only the ``Invoices`` parent exists)
``detour``           restart requests land on ``N-deploy-troubleshoot`` and reach the restart action
                     only through ``N-runtime-issues``
``stale_edge``       ``N-capacity`` → ``N-legacy-migrate`` (a retired flow) is the heavy edge, so
                     capacity requests end on an action that fails
``obsolete``         ``N-domain-verify-legacy``, an Action of a retired feature (the old DNS TXT check),
                     is still ACTIVE under ``Custom domains``: domain requests that land on it fail,
                     night after night (fixed by OBSOLESCENCE: deprecate it)
``reattach``         the ``Build failures`` label (and ``N-build-failed``) sits in the ``billing`` cluster
                     although failed builds are deployment requests (fixed by LABEL_REATTACH to
                     ``deploy``)
``consolidation``    the pack has no node for rolling back a deployment; simulated users write that
                     fact (``MEMORY_FACT``) into their USER memory night after night (fixed by the
                     NODE_ADD the memory generator proposes from the consolidated GLOBAL unit); no
                     simulated intent asks for it, so routing accuracy does not measure it
===================  ===========================================================================

``obsolete`` needs negative outcomes on ``min_nights`` distinct days and ``consolidation`` needs
sessions ≥ 24 h apart: the runner puts night *k* on simulated day *k* (``bench.simulation.runner``).

The *oracle* knows which node serves which intent: a node serves intent I when its chunk carries I's
fact and no other intent's fact (a node carrying two facts serves neither well).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

SLUG = "sim-orbit"
POISON_SLUG = "sim-orbit-poison"
HANDLER = "python:billing.reissue_invoice"  # a demo handler: the simulation only dry-runs actions
HANDLER_MODULE = "packs.demo.handlers"  # registers HANDLER (the runner imports it whatever the settings say)

FACTS: dict[str, str] = {
    "reset": (
        "To reset a forgotten password, click Forgot password on the sign-in page; the reset link arrives by "
        "email within five minutes and expires after one hour."
    ),
    "2fa": (
        "If you lost the phone with your two-factor authenticator, sign in with one of your backup recovery "
        "codes, then enroll a new authenticator app under Security settings."
    ),
    "invite": "Owners invite team members from Settings › Team › Invite by entering an email address and a role.",
    "remove": "To remove a team member, open Settings › Team, select the person and click Remove; access ends at once.",
    "download": "Invoices are listed under Billing › Invoices; click an invoice to download it as a PDF file.",
    "billemail": (
        "Invoices are emailed to the billing contact; change the billing email address under Billing › Contacts."
    ),
    "billemail_dup": (
        "To change who receives the invoice emails, update the billing contact email address under Billing › "
        "Contacts."
    ),
    "currency": (
        "Invoices are issued in the currency of your billing country; to get invoices in EUR, USD or GBP, change "
        "the invoice currency under Billing › Preferences before the next billing cycle."
    ),
    "overview": "Orbit Hosting issues one invoice per organization on the first day of every month.",
    "refund": "Refunds are available within 14 days of a charge for unused annual plans; ask from Billing › Refunds.",
    "restart": (
        "Restarting the application stops every running instance and starts fresh ones from the current release."
    ),
    "logs": "Deployment logs are under Deployments › Logs; build logs are kept for 30 days.",
    "build": (
        "A failed build usually means a dependency could not be installed; read the build log and pin the "
        "failing package version."
    ),
    "scale": "Scaling up moves the app to a larger instance size with more memory and CPU, without downtime.",
    "legacy": (
        "Legacy v1 instances could be migrated to the v2 instance family to get more memory; this flow was "
        "retired in 2024."
    ),
    "legacy_dns": (
        "Custom domains used to be verified by a TXT record checked by the legacy DNS verifier; that check "
        "was retired in 2025."
    ),
    "rollback": (
        "To roll back a deployment, open Deployments › History and click Redeploy on the previous release; "
        "the rollback takes about a minute."
    ),
    "domain": (
        "Add a custom domain under Settings › Domains and create the CNAME record shown there; TLS certificates "
        "are issued automatically."
    ),
}
FACT_KEY = {"billemail_dup": "billemail"}  # two wordings of one fact


@dataclass(frozen=True)
class Intent:
    key: str
    fact: str
    prompts: tuple[str, ...]
    weight: float = 1.0
    action: bool = False


INTENTS: tuple[Intent, ...] = (
    Intent(
        "reset",
        "reset",
        (
            "I forgot my password",
            "how do I reset my password",
            "the password reset link never arrived",
            "can't remember my password, what now",
            "reset my account password please",
            "where is the forgot password button",
            "my password reset email expired",
            "I need a new password for my account",
            "password reset is not working",
            "how long is the reset link valid",
            "send me a password reset link",
            "I typed the wrong password too many times and forgot it",
        ),
        weight=1.3,
    ),
    Intent(
        "2fa",
        "2fa",
        (
            "I lost my phone with the authenticator app",
            "my two-factor codes don't work anymore",
            "how do I use a backup recovery code",
            "lost my 2FA device, how do I get in",
            "new phone, authenticator app is empty",
            "where do I enroll a new authenticator",
            "two factor authentication locked me out",
            "I don't have my recovery codes for 2FA",
            "can I disable two-factor if I lost my device",
            "2fa code rejected after switching phones",
            "how do I set up two-factor on a new phone",
            "the authenticator app was deleted",
        ),
        weight=1.2,
    ),
    Intent(
        "invite",
        "invite",
        (
            "how do I invite a colleague",
            "add a new team member to our account",
            "invite someone to my team",
            "can I give a coworker access",
            "send an invitation to a new user",
            "how to add people to the organization",
            "our new developer needs an account",
            "invite a teammate with admin role",
        ),
    ),
    Intent(
        "remove",
        "remove",
        (
            "remove a user from our team",
            "how do I delete a team member",
            "someone left the company, revoke their access",
            "kick a member out of the organization",
            "take away access for a former employee",
            "remove a collaborator from the account",
            "how to offboard a team member",
            "delete an old user",
        ),
    ),
    Intent(
        "download",
        "download",
        (
            "where can I download my invoice",
            "get the invoice pdf for last month",
            "download an invoice",
            "I need a copy of my invoice",
            "how do I save my invoice as pdf",
            "where are my invoices",
            "print the invoice for March",
            "my accountant wants the invoice file",
        ),
    ),
    Intent(
        "billemail",
        "billemail",
        (
            "change the billing email address",
            "send invoices to a different email",
            "update who receives invoice emails",
            "our finance team should get the invoices",
            "invoices go to an old email address",
            "set a new billing contact email",
            "how do I change the invoice recipient",
            "billing emails should go to accounts@ our company",
        ),
        weight=1.3,
    ),
    Intent(
        "currency",
        "currency",
        (
            "can I get my invoices in euros",
            "change the currency of my invoices to GBP",
            "invoices should be in USD not EUR",
            "how do I switch invoice currency",
            "bill me in euros instead of dollars",
            "my invoice shows the wrong currency",
            "can invoices be issued in pounds",
            "set the billing currency to EUR",
            "why is my invoice in dollars",
            "invoice currency change for next month",
        ),
        weight=1.1,
    ),
    Intent(
        "refund",
        "refund",
        (
            "can I get a refund",
            "what is your refund policy",
            "refund for my annual plan",
            "I was charged and want my money back",
            "how long do I have to ask for a refund",
            "request a refund for an unused plan",
        ),
    ),
    Intent(
        "restart",
        "restart",
        (
            "restart my app",
            "how do I restart the application",
            "reboot my running app",
            "my app is stuck, restart it",
            "restart all instances of my service",
            "do a fresh restart of the app",
            "restart the app after changing config",
            "can you restart my application",
            "trigger an app restart",
            "restart the service please",
        ),
        weight=1.3,
        action=True,
    ),
    Intent(
        "logs",
        "logs",
        (
            "where are my deploy logs",
            "show the deployment logs",
            "how long are build logs kept",
            "find the logs of my last deploy",
            "view logs for a deployment",
            "download deployment logs",
        ),
    ),
    Intent(
        "build",
        "build",
        (
            "my build failed",
            "build fails installing dependencies",
            "deployment build error",
            "npm install fails during build",
            "why did my build break",
            "the build step keeps failing",
        ),
    ),
    Intent(
        "capacity",
        "scale",
        (
            "my app runs out of memory",
            "we need more capacity for our app",
            "out of memory errors, need more RAM",
            "the app needs more CPU",
            "add capacity to my application",
            "memory limit reached, how to get more",
            "my service is too slow, need more resources",
            "increase memory for my app",
            "app keeps hitting the memory ceiling",
            "get more compute for my app",
        ),
        weight=1.3,
        action=True,
    ),
    Intent(
        "upgrade",
        "scale",
        (
            "upgrade to a bigger instance",
            "scale up my instance size",
            "move my app to a larger instance",
            "switch to a more powerful instance type",
            "resize my instance",
            "bigger instance please",
        ),
        action=True,
    ),
    Intent(
        "domain",
        "domain",
        (
            "how do I add a custom domain",
            "use my own domain name",
            "set up a CNAME for my app",
            "connect my domain to the app",
            "custom domain TLS certificate",
            "point my domain at the app",
        ),
    ),
)
INTENT_BY_KEY = {i.key: i for i in INTENTS}


@dataclass(frozen=True)
class Defect:
    key: str
    kind: str
    details: dict[str, Any] = field(default_factory=dict)


DEFECTS: tuple[Defect, ...] = (
    Defect("split", "SPLIT", {"node": "N-signin"}),
    Defect("merge", "MERGE", {"nodes": ("N-billing-email", "N-invoice-recipient")}),
    Defect("child_label", "LABEL_ADD", {"parent": "L00003", "intent": "currency"}),
    Defect("detour", "EDGE_ADD", {"source": "N-deploy-troubleshoot", "target": "N-restart-app"}),
    Defect("stale_edge", "EDGE_INHIBIT", {"edge": ("N-capacity", "N-legacy-migrate", "LEADS_TO")}),
    Defect("obsolete", "OBSOLESCENCE", {"node": "N-domain-verify-legacy"}),
    Defect("reattach", "LABEL_REATTACH", {"label": "L00010", "cluster": "deploy"}),
    Defect("consolidation", "NODE_ADD", {"fact": "rollback", "label": "L00007"}),
)

# The ``consolidation`` defect: a fact of the true domain missing from the pack, which users write into
# their own (USER) memory; ``MEMORY_WRITERS`` users write it once a night each, under ``MEMORY_LABEL``.
MEMORY_FACT = FACTS["rollback"]
MEMORY_LABEL = "L00007"
MEMORY_WRITERS = 6


def _label(
    lid: str, name: str, cluster: str, parent: str | None, description: str, examples: list[str]
) -> dict:
    return {
        "id": lid,
        "name": name,
        "cluster": cluster,
        "parent": parent,
        "status": "ACTIVE",
        "description": description,
        "synonyms": [],
        "examples": examples,
    }


def _node(node_id: str, type: str, title: str, chunk: str, labels: list[str], cluster: str) -> dict:
    return {
        "id": node_id,
        "type": type,
        "title": title,
        "chunk": chunk,
        "risk": "low",
        "status": "ACTIVE",
        "labels": labels,
        "clusters": [cluster] if cluster else [],
        "preconditions": [],
        "parameters": [],
        "handler": HANDLER if type in ("Action", "DirectAction") else "",
    }


def _edge(source: str, target: str, type: str, weight: float, semantics: str = "") -> dict:
    return {"source": source, "target": target, "type": type, "weight": weight, "semantics": semantics}


def pack(slug: str = SLUG) -> dict[str, Any]:
    """The starting knowledge pack (arg-pack/1) with the planted defects (module doc)."""
    f = FACTS
    labels = [
        _label(
            "L00001",
            "Sign-in help",
            "account",
            None,
            "Signing in, passwords and two-factor authentication.",
            ["I forgot my password", "my two-factor code does not work", "I can't log in to my account"],
        ),
        _label(
            "L00002",
            "Team members",
            "account",
            None,
            "Inviting and removing the people of an organization.",
            ["invite a colleague", "remove a user from our team", "manage team members"],
        ),
        _label(
            "L00003",
            "Invoices",
            "billing",
            None,
            "Questions about Orbit Hosting invoices.",
            ["question about an invoice", "invoice help", "something about my bill"],
        ),
        _label(
            "L00004",
            "Invoice download",
            "billing",
            "L00003",
            "Finding and downloading invoice PDFs.",
            ["download my invoice", "get the invoice pdf", "where are my invoices"],
        ),
        _label(
            "L00005",
            "Invoice email",
            "billing",
            "L00003",
            "Who receives invoice emails and at which address.",
            ["change the billing email", "send invoices to another address", "update the invoice recipient"],
        ),
        _label(
            "L00006",
            "Refunds",
            "billing",
            None,
            "Refund policy and refund requests.",
            ["can I get a refund", "refund policy", "money back for my plan"],
        ),
        _label(
            "L00007",
            "Deployment troubleshooting",
            "deploy",
            None,
            "When a deployed app misbehaves: it crashes, hangs, needs a restart or a build breaks.",
            ["my app is broken", "restart my app", "the app keeps crashing", "my deployment is not working"],
        ),
        _label(
            "L00008",
            "Runtime state",
            "deploy",
            None,
            "Process metrics and runtime state of instances.",
            ["show runtime metrics", "process state of my instances"],
        ),
        _label(
            "L00009",
            "Deployment logs",
            "deploy",
            None,
            "Finding deployment and build logs.",
            ["where are my deploy logs", "view build logs"],
        ),
        _label(
            "L00010",
            "Build failures",
            "billing",  # planted (reattach): failed builds are deployment questions
            None,
            "Builds that fail.",
            ["my build failed", "build error during deploy"],
        ),
        _label(
            "L00011",
            "Capacity",
            "deploy",
            None,
            "When an app needs more memory or CPU.",
            ["my app runs out of memory", "need more cpu for my app"],
        ),
        _label(
            "L00012",
            "Instance types",
            "deploy",
            None,
            "Instance sizes and moving between them.",
            ["upgrade to a bigger instance", "scale up my instance", "instance sizes"],
        ),
        _label(
            "L00013",
            "Custom domains",
            "deploy",
            None,
            "Custom domains and their certificates.",
            ["add a custom domain", "use my own domain name"],
        ),
        _label(
            "L00014",
            "Legacy instances",
            "deploy",
            None,
            "The retired v1 instance family.",
            ["v1 instance family", "legacy v1 instances"],
        ),
    ]
    nodes = [
        _node("N-signin", "Info", "Sign-in problems", f"{f['reset']} {f['2fa']}", ["L00001"], "account"),
        _node("N-team-invite", "Info", "Invite team members", f["invite"], ["L00002"], "account"),
        _node("N-team-remove", "Info", "Remove a team member", f["remove"], ["L00002"], "account"),
        _node("N-invoice-download", "Info", "Download an invoice", f["download"], ["L00004"], "billing"),
        _node("N-billing-email", "Info", "Change the billing email", f["billemail"], ["L00005"], "billing"),
        _node(
            "N-invoice-recipient",
            "Info",
            "Change who receives invoices",
            f["billemail_dup"],
            ["L00005"],
            "billing",
        ),
        _node("N-invoices-overview", "Info", "About your invoices", f["overview"], ["L00003"], "billing"),
        # the expert forgot the currency node's label: nothing routes to it but a cluster-wide search
        _node("N-invoice-currency", "Info", "Invoice currency", f["currency"], [], "billing"),
        _node("N-refund-policy", "InfoStable", "Refund policy", f["refund"], ["L00006"], "billing"),
        _node(
            "N-deploy-troubleshoot",
            "Decision",
            "Troubleshoot a deployment",
            "Start here when a deployment misbehaves: crashes, failed builds, missing logs.",
            ["L00007"],
            "deploy",
        ),
        _node(
            "N-runtime-issues",
            "Decision",
            "Runtime issues: crashes, hangs, restarts",
            "Problems while the app is running: crashes, hangs, restarts and memory.",
            ["L00008"],
            "deploy",
        ),
        _node("N-restart-app", "Action", "Restart the application", f["restart"], ["L00008"], "deploy"),
        _node("N-deploy-logs", "Info", "Deployment logs", f["logs"], ["L00009"], "deploy"),
        _node("N-build-failed", "Info", "Fix a failed build", f["build"], ["L00010"], "billing"),
        _node(
            "N-capacity",
            "Decision",
            "Capacity problems",
            "When the app runs out of memory or CPU, choose how to add capacity.",
            ["L00011"],
            "deploy",
        ),
        _node(
            "N-legacy-migrate",
            "Action",
            "Add capacity by migrating a legacy instance",
            f["legacy"],
            ["L00014"],
            "deploy",
        ),
        _node("N-scale-up", "Action", "Scale up the instance", f["scale"], ["L00012"], "deploy"),
        _node("N-custom-domain", "Info", "Add a custom domain", f["domain"], ["L00013"], "deploy"),
        _node(  # planted (obsolete): a retired feature still reachable from the custom-domain label
            "N-domain-verify-legacy",
            "Action",
            "Verify a custom domain with the legacy DNS check",
            f["legacy_dns"],
            ["L00013"],
            "deploy",
        ),
        _node(
            "N-oos",
            "OutOfScope",
            "Out of scope",
            "Orbit Hosting support handles accounts, billing and deployments only.",
            [],
            "",
        ),
    ]
    edges = [
        _edge(
            "N-deploy-troubleshoot", "N-runtime-issues", "LEADS_TO", 0.8, "the app misbehaves while running"
        ),
        _edge("N-runtime-issues", "N-restart-app", "LEADS_TO", 0.8, "a restart clears it"),
        _edge("N-runtime-issues", "N-deploy-logs", "LEADS_TO", 0.5, "read the logs first"),
        _edge("N-capacity", "N-legacy-migrate", "LEADS_TO", 0.9, "migrate to get more memory"),
        _edge("N-capacity", "N-scale-up", "LEADS_TO", 0.3, "scale up"),
        _edge("N-team-invite", "N-team-remove", "RELATED_TO", 0.4),
        _edge("N-invoice-download", "N-billing-email", "RELATED_TO", 0.4),
        _edge("N-invoice-download", "N-invoice-currency", "RELATED_TO", 0.4),
        _edge("N-refund-policy", "N-invoice-download", "RELATED_TO", 0.3),
        _edge("N-deploy-logs", "N-build-failed", "RELATED_TO", 0.5),
    ]
    return {
        "format": "arg-pack/1",
        "project": {
            "slug": slug,
            "name": "Orbit Hosting (simulation)",
            "description": "Seeded hidden domain.",
        },
        "clusters": [
            {"key": "account", "name": "Account & access", "description": "Signing in and team members."},
            {"key": "billing", "name": "Billing", "description": "Invoices, billing contacts and refunds."},
            {
                "key": "deploy",
                "name": "Deployments",
                "description": "Running apps, builds, capacity, domains.",
            },
        ],
        "labels": labels,
        "incompatibilities": [],
        "typologies": [
            {
                "key": "support",
                "name": "Support",
                "description": "Default support profile.",
                "access_constraints": {},
                "preferred_node_types": ["Info", "InfoStable", "FAQ", "Action", "Decision"],
                "complexity_budget": 3,
                "max_depth": 3,
                "max_hops": 3,
                "beam_width": 3,
                "response_style": "concise",
                "fast_path_eligible": False,
                "is_default": True,
                "weights": {"alpha": 0.2, "beta": 0.4, "gamma": 0.2, "delta": 0.1, "epsilon": 0.1},
            }
        ],
        "policies": [
            {
                "key": "member",
                "name": "Member",
                "description": "",
                "allowed_labels": [],
                "forbidden_labels": [],
                "allowed_node_types": [],
                "forbidden_node_types": [],
                "max_hops": 3,
                "blocked_terms": [],
                "blocked_patterns": [],
                "sensitive_topics": [],
                "scope_statement": "Orbit Hosting accounts, billing and deployments.",
                "refusal_template": "I can't help with that.",
                "refocus_template": "I can help with accounts, billing and deployments.",
                "memory_scopes": ["USER", "ORG", "GLOBAL"],
            }
        ],
        "roles": [{"key": "member", "name": "Member", "policy": "member", "default_typology": "support"}],
        "nodes": nodes,
        "edges": edges,
        "aliases": [],
    }


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?;])\s+", text) if s.strip()]


def facts_of(chunk: str) -> set[str]:
    """The hidden facts a node's chunk carries (a fact counts when one of its sentences is there)."""
    out = set()
    for key, text in FACTS.items():
        if any(part[:40] in chunk for part in _sentences(text)):
            out.add(FACT_KEY.get(key, key))
    return out


def serves(chunk: str, intent: Intent) -> bool:
    """The oracle: the node carries the intent's fact and no other intent's fact."""
    return facts_of(chunk) == {intent.fact}


def partially_serves(chunk: str, intent: Intent) -> bool:
    return intent.fact in facts_of(chunk)
