"""Languages through the API door: a release records the languages its examples cover; a prompt in
another language gets the caller's policy's language message (REFOCUS, flag ``language:<code>``) and
never reaches routing; English prompts are routed as before; the offline loop counts the flag."""

from __future__ import annotations

import pytest
import yaml

from inference.models import InferenceLog
from inference.steps.language import DEFAULT_LANGUAGE_MESSAGE, example_languages
from ontology.models import Release
from ontology.releases import release_publish
from taxonomy.models import Policy, Role
from taxonomy.packs import pack_import, pack_read
from taxonomy.services import policy_save
from tests.inference.conftest import DEMO_PACK
from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db
BASE = "/api/v1/projects/tiny/"
FRENCH = "Où puis-je télécharger ma facture du mois dernier ?"
GERMAN = "Wo kann ich meine Rechnung herunterladen?"
MESSAGES = {
    "fr": "Désolé, je ne peux vous aider qu'en anglais pour le moment.",
    "default": "Only {languages} here, sorry.",
}


@pytest.fixture
def tiny():
    project = pack_import(pack_read(SMALL)).project
    policy_save(
        project=project,
        actor=None,
        data={"language_messages": MESSAGES},
        policy=Policy.objects.get(project=project, key="customer"),
    )
    release_publish(project=project, actor=None)
    return project


@pytest.fixture
def client_app(tiny, token_client):
    return token_client(tiny, role=Role.objects.get(project=tiny, key="customer"))


def _infer(client, prompt, **context):
    resp = client.post("/api/v1/infer", {"prompt": prompt, "context": context}, format="json")
    assert resp.status_code == 200, resp.content
    return resp.json()


def test_publication_records_the_languages_of_the_examples(tiny, token_client):
    release = Release.objects.get(project=tiny, is_active=True)
    assert release.languages == ["en"]
    body = token_client(tiny).get(BASE + f"releases/{release.version}/").json()
    assert body["languages"] == ["en"]


def test_a_language_needs_several_examples_to_be_covered():
    english = ["where is my invoice", "I cannot log in to my account", "how do I reset my password"]
    french = ["où est ma facture", "je n'arrive pas à me connecter", "comment changer mon mot de passe"]
    labels = [{"status": "ACTIVE", "examples": [*english, "je veux ma facture du mois dernier"]}]
    assert example_languages(labels) == ["en"]  # one French example covers nothing
    labels.append({"status": "ACTIVE", "examples": french})
    assert example_languages(labels) == ["en", "fr"]
    assert example_languages([{"status": "DEPRECATED", "examples": french}]) == []


def test_short_english_examples_misread_as_another_language_do_not_make_it_covered():
    """The demo pack's labels hold two-word examples ("invoice question", "dns question") that the
    detector reads as French; the demo covers English only."""
    pack = yaml.safe_load(DEMO_PACK.read_text(encoding="utf-8"))
    assert example_languages(pack["labels"]) == ["en"]
    # a few misread sentences among many are not a language either (below the share floor)
    english = [f"how do I change setting number {n} of my account" for n in range(300)]
    stray = ["la facture de mon compte", "une question de facture", "le mot de passe du compte"]
    labels = [{"status": "ACTIVE", "examples": english}, {"status": "ACTIVE", "examples": stray}]
    assert example_languages(labels) == ["en"]


def test_a_french_prompt_gets_the_policys_french_message_and_a_logged_flag(client_app):
    body = _infer(client_app, FRENCH)

    assert body["outcome"]["kind"] == "REFOCUS"
    assert body["outcome"]["answer"] == MESSAGES["fr"]
    assert "language:fr" in body["flags"]
    log = InferenceLog.objects.get(request_id=body["request_id"])
    assert log.flags == ["language:fr"] and log.language == "fr"
    assert log.outcome_kind == "REFOCUS" and log.target_node in (None, "")
    assert "lexical" not in log.timings_ms  # never routed: no OutOfScope node can answer it


def test_a_german_prompt_without_its_own_message_gets_the_default_filled_in(client_app):
    body = _infer(client_app, GERMAN)

    assert body["outcome"]["kind"] == "REFOCUS"
    assert body["outcome"]["answer"] == "Only English here, sorry."
    assert body["flags"] == ["language:de"]


def test_english_prompts_are_routed_as_before(client_app):
    body = _infer(client_app, "where can I download my invoice pdf")
    assert body["outcome"]["kind"] == "INFO"
    assert not [f for f in body["flags"] if f.startswith("language:")]
    # a stated French locale does not gate a prompt clearly written in a covered language
    body = _infer(client_app, "where can I download my invoice pdf", language="fr-CA")
    assert body["outcome"]["kind"] == "INFO"


def test_a_short_ambiguous_prompt_is_routed_not_gated(client_app):
    body = _infer(client_app, "facture")
    assert not [f for f in body["flags"] if f.startswith("language:")]


def test_the_platform_default_message_when_the_policy_has_none(tiny, token_client):
    policy_save(
        project=tiny,
        actor=None,
        data={"language_messages": {}},
        policy=Policy.objects.get(project=tiny, key="customer"),
    )
    release_publish(project=tiny, actor=None)
    client = token_client(tiny, role=Role.objects.get(project=tiny, key="customer"), name="app-2")
    body = _infer(client, FRENCH)
    assert body["outcome"]["answer"] == DEFAULT_LANGUAGE_MESSAGE.replace("{languages}", "English")


def test_bad_language_messages_are_a_400_naming_the_field(tiny, make_user, api_as):
    expert = make_user("expert-1", "expert", tiny)
    resp = api_as(expert).patch(
        BASE + "policies/customer/",
        {"language_messages": {"French": "Bonjour", "de": "Hallo"}},
        format="json",
    )
    assert resp.status_code == 400, resp.content
    assert resp.json()["rules"] == ["policy.language_messages"]
    assert "'French' is not a lower-case ISO 639-1 code" in resp.content.decode()
    resp = api_as(expert).patch(
        BASE + "policies/customer/", {"language_messages": {"de": "   "}}, format="json"
    )
    assert resp.status_code == 400 and "language_messages" in resp.content.decode(), resp.content
    assert Policy.objects.get(project=tiny, key="customer").language_messages == MESSAGES  # nothing lost


def test_the_offline_loop_counts_prompts_by_uncovered_language(tiny, client_app):
    from review.loop.collection import collect

    _infer(client_app, FRENCH)
    _infer(client_app, "Je n'arrive pas à me connecter à mon compte")
    _infer(client_app, GERMAN)
    _infer(client_app, "where can I download my invoice pdf")

    summary = collect(project=tiny, window_days=1).summary()
    assert summary["interactions"] == 4
    assert summary["languages"] == {"de": 1, "fr": 2}
