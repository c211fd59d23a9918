"""The memory step of the online pipeline: MemoryWrite writes guarded, label-gated memory from a routed
request (and nothing on a dry run, a question or without a user); MemoryRead reads it back, alias-safe
across a real split and release publication."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from inference.contracts import RequestContext
from inference.logbook import log_result
from inference.pipeline import InferenceRequest, run_inference
from memory.models import EpisodicMemory, InfoUnit, RegistryAttempt

pytestmark = pytest.mark.django_db

REMEMBER = "Remember that I prefer to be contacted by email, not chat."


def infer(
    project: Any, prompt: str, *, user_id: str | None = "u-1", role: str = "customer", dry_run: bool = False
) -> Any:
    return run_inference(
        InferenceRequest(
            request_id=uuid.uuid4().hex,
            project=project,
            prompt=prompt,
            context=RequestContext(role=role, user_id=user_id, session_id="s-1", channel="web"),
            default_role=role,
            dry_run=dry_run,
        )
    )


def test_a_memorywrite_request_writes_label_gated_deduplicated_memory(mem_released):
    result = infer(mem_released, REMEMBER)
    log = log_result(result)

    assert result.error is None, result.error
    assert result.route.target == "N-remember-preferences"
    assert result.outcome.kind == "MEMORY"
    memory = result.outcome.details["memory"]
    assert (memory["written"], memory["decision"], memory["scope"]) == (True, "NEW", "USER")
    assert memory["info_key"].startswith("L00003|") and memory["info_key"].endswith("|USER:u-1")
    assert memory["label_path_current"] == "Account › Communication preferences"
    episode = EpisodicMemory.objects.get(pk=memory["episode_id"])
    assert (episode.request_id, episode.node_id, episode.source) == (
        result.request.request_id,
        "N-remember-preferences",
        "pipeline",
    )
    assert episode.label_ids == ["L00003"] and episode.provenance["role"] == "customer"
    assert log.outcome_details["memory"]["episode_id"] == episode.pk
    # the answer tells the user what was saved, then the node's client text — never its internal texts
    assert (
        result.outcome.answer
        == f"I saved this: “{REMEMBER}”. Noted — I'll use these preferences from now on."
    )

    again = infer(mem_released, "Please remember that I prefer to be contacted by email rather than chat.")
    assert again.outcome.details["memory"]["decision"] == "MATCH"
    assert InfoUnit.objects.count() == 1


@pytest.mark.parametrize(
    ("prompt", "user_id", "dry_run", "reason"),
    [
        (REMEMBER, "u-1", True, "dry_run"),
        (REMEMBER, None, False, "no_user"),
    ],
)
def test_nothing_is_written_when_the_step_must_not_write(mem_released, prompt, user_id, dry_run, reason):
    result = infer(mem_released, prompt, user_id=user_id, dry_run=dry_run)

    assert result.route.target == "N-remember-preferences"
    assert result.outcome.details["memory"]["written"] is False
    assert result.outcome.details["memory"]["reason"] == reason
    assert EpisodicMemory.objects.count() == 0


def test_a_question_routed_to_a_memorywrite_reads_back_what_was_remembered(mem_released):
    """Nothing to remember in a question: the step writes nothing and reads back the user's relevant
    memories instead (before, it answered "There is nothing to remember in a question.")."""
    infer(mem_released, REMEMBER)
    before = EpisodicMemory.objects.count()

    result = infer(mem_released, "Which contact channel did I say I prefer?")

    assert result.route.target == "N-remember-preferences", result.explanation
    memory = result.outcome.details["memory"]
    assert memory["written"] is False and memory["reason"] == "question"
    assert [item["text"] for item in memory["read"]["items"]] == [REMEMBER]
    assert result.outcome.answer == f"Here is what I have on record (1 item):\n- {REMEMBER}"
    assert EpisodicMemory.objects.count() == before


def test_a_write_only_policy_does_not_read_back_through_a_memorywrite(mem):
    """A policy that forbids MemoryRead nodes may still write: a question at the write node then reads
    nothing back (the read-back must not bypass the policy)."""
    from ontology.releases import release_publish
    from taxonomy.models import Policy

    Policy.objects.filter(project=mem, key="customer").update(forbidden_node_types=["MemoryRead"])
    release_publish(project=mem, actor=None)
    infer(mem, REMEMBER)
    assert EpisodicMemory.objects.count() == 1  # writing is still allowed

    result = infer(mem, "Which contact channel did I say I prefer?")

    assert result.route.target == "N-remember-preferences", result.explanation
    memory = result.outcome.details["memory"]
    assert memory["reason"] == "question" and "read" not in memory
    assert result.outcome.answer == "There is nothing to remember in a question."


def test_a_role_without_memory_scopes_writes_nothing(mem_released):
    result = infer(mem_released, REMEMBER, role="anonymous")

    assert result.outcome.kind in ("REFUSE", "OUT_OF_SCOPE", "INFO", "CLARIFY")  # MemoryWrite is forbidden
    assert EpisodicMemory.objects.count() == 0


def test_memoryread_returns_the_users_memories(mem_released):
    infer(mem_released, REMEMBER)

    result = infer(mem_released, "What do you remember about how I like to be contacted?")

    assert result.route.target == "N-read-preferences"
    memory = result.outcome.details["memory"]
    assert memory["mode"] == "read"
    assert [item["text"] for item in memory["items"]][:1] == [REMEMBER]
    # what was found, after the node's client text; not its internal description ("Loads …")
    assert result.outcome.answer.startswith(f"Here is what I remember about your preferences.\n- {REMEMBER}")
    assert "Loads" not in result.outcome.answer


def test_memoryread_shows_only_memories_relevant_to_the_request(mem_released):
    """The read returns the k nearest items however far; the step shows those at READ_MIN_SIMILARITY or
    more, so a deployment note is not offered as how the user likes to be contacted."""
    from inference.steps.memory import READ_MIN_SIMILARITY
    from memory import services

    infer(mem_released, REMEMBER)
    services.memory_write(
        project=mem_released, text="We deploy to eu-west from the main branch.", scope="USER", user_id="u-1"
    )

    result = infer(mem_released, "What do you remember about how I like to be contacted?")

    memory = result.outcome.details["memory"]
    assert [item["text"] for item in memory["items"]] == [REMEMBER]
    assert memory["min_similarity"] == READ_MIN_SIMILARITY
    assert "eu-west" not in result.outcome.answer

    unrelated = infer(mem_released, "What do you remember about my favourite football team?")
    assert unrelated.route is not None and unrelated.route.target == "N-read-preferences", (
        unrelated.explanation
    )
    assert unrelated.outcome.details["memory"]["items"] == []
    assert unrelated.outcome.answer == "I have nothing saved about this yet."


def test_a_memory_on_a_split_node_is_redirected_not_orphaned(mem_released, expert):
    from memory import services
    from memory.selectors import memory_read
    from ontology.releases import release_publish
    from ontology.services import alias_add, node_create, node_set_status
    from ontology.snapshot_registry import pin_snapshot
    from ontology.store.port import AliasData, NodeData

    written = services.memory_write(
        project=mem_released,
        text="Our invoices must be in euros and go to ap@acme.example.",
        scope="USER",
        user_id="u-1",
        label_ids=["L00002"],
        node_id="N-billing-settings",
    ).episode
    for node_id, title in (
        ("N-billing-currency", "Billing currency"),
        ("N-invoice-recipients", "Invoice recipients"),
    ):
        node_create(
            project=mem_released,
            actor=expert,
            node=NodeData(
                node_id, "Info", title, f"{title} of the account.", labels=("L00002",), clusters=("billing",)
            ),
        )
    node_set_status(
        project=mem_released, actor=expert, node_id="N-billing-settings", status="DEPRECATED", reason="split"
    )
    alias_add(
        project=mem_released,
        actor=expert,
        alias=AliasData("N-billing-settings", ("N-billing-currency", "N-invoice-recipients"), "split"),
    )
    release = release_publish(project=mem_released, actor=expert)
    snapshot = pin_snapshot(mem_released.pk, force_check=True)
    assert snapshot.version == release.version == 2

    result = infer(mem_released, "What do you remember about how I like to be contacted?")
    read = memory_read(
        project=mem_released, query=None, user_id="u-1", k=5, max_hops=0, resolve_alias=snapshot.resolve_alias
    )

    (item,) = [i for i in read.items if i.episode.pk == written.pk]
    assert item.redirected is True
    assert item.node_ids_current == ("N-billing-currency", "N-invoice-recipients")
    stored = EpisodicMemory.objects.get(pk=written.pk)
    assert stored.node_id == "N-billing-settings"  # the original never changes
    # the read step of the routed request soft-updated the user's context
    assert result.route.target == "N-read-preferences"
    assert written.pk in result.outcome.details["memory"]["redirected"]
    assert stored.node_ids_current == ["N-billing-currency", "N-invoice-recipients"]
    assert stored.redirect_release_version == 2
    assert read.redirects == {}  # already up to date: nothing left to redirect
    assert stored.text == "Our invoices must be in euros and go to <EMAIL>."
    assert RegistryAttempt.objects.filter(episode=written).count() == 1
