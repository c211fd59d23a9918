"""Hostile import files through the doors an attacker uses — the browser upload, the API and the import
commands: a YAML alias bomb, an XML entity bomb, a document nested 10,000 deep, an oversized file and a
JSON-LD document with a remote ``@context`` are each refused with a 4xx naming what is wrong (a
``CommandError`` for the commands), and the project is left as it was."""

from __future__ import annotations

import json
import socket
from io import StringIO
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.http import multipartparser
from django.test import override_settings

from arg_platform.models import AuditEvent
from taxonomy.file_guards import MULTIPART_OVERHEAD
from taxonomy.models import Cluster, Label
from taxonomy.packs import pack_import, pack_read
from taxonomy.skos import skos_export
from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db

DEEP = 10_000


# --- hostile documents ------------------------------------------------------------------------------


def yaml_alias_bomb() -> bytes:
    """A pack of a few hundred bytes whose aliases expand to 9⁹ (387 million) strings."""
    lines = ["format: arg-pack/1", "a: &a [" + ", ".join(["lol"] * 9) + "]"]
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
    lines.append("labels: [*i]")
    return ("\n".join(lines) + "\n").encode()


def xml_entity_bomb() -> bytes:
    """RDF/XML whose one literal expands to 10⁹ "lol"s through nested entities ("billion laughs")."""
    entities = ['<!ENTITY lol0 "lol">'] + [f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)]
    return (
        '<?xml version="1.0"?>\n<!DOCTYPE rdf:RDF [\n' + "\n".join(entities) + "\n]>\n"
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
        'xmlns:skos="http://www.w3.org/2004/02/skos/core#">\n'
        '  <skos:Concept rdf:about="urn:x:a"><skos:prefLabel>&lol9;</skos:prefLabel></skos:Concept>\n'
        "</rdf:RDF>\n"
    ).encode()


def xml_external_entity() -> bytes:
    """RDF/XML that asks the parser to fetch a URL (an external entity)."""
    return (
        b'<?xml version="1.0"?>\n<!DOCTYPE rdf:RDF [<!ENTITY ext SYSTEM "http://203.0.113.7/secret">]>\n'
        b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
        b'xmlns:skos="http://www.w3.org/2004/02/skos/core#">\n'
        b'  <skos:Concept rdf:about="urn:x:a"><skos:prefLabel>&ext;</skos:prefLabel></skos:Concept>\n'
        b"</rdf:RDF>\n"
    )


def deep_yaml_pack() -> bytes:
    return ("format: arg-pack/1\nlabels: " + "[" * DEEP + "]" * DEEP + "\n").encode()


def deep_json_pack() -> bytes:
    return ('{"format": "arg-pack/1", "labels": ' + "[" * DEEP + "]" * DEEP + "}").encode()


REMOTE = "http://203.0.113.7/context.jsonld"
CONCEPT = {"@id": "urn:x:a", "@type": "http://www.w3.org/2004/02/skos/core#Concept"}
REMOTE_CONTEXTS = {
    "string": {"@context": REMOTE, **CONCEPT},
    "list": {"@context": [{"skos": "http://www.w3.org/2004/02/skos/core#"}, REMOTE], **CONCEPT},
    "scoped": {
        "@context": {"broader": {"@id": "http://www.w3.org/2004/02/skos/core#broader", "@context": REMOTE}},
        **CONCEPT,
        "broader": {"@id": "urn:x:b"},
    },
    "import": {"@context": {"@version": 1.1, "@import": REMOTE}, **CONCEPT},
    "nested node": {"@graph": [{"@context": REMOTE, **CONCEPT}]},
}


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every outgoing connection attempt is recorded and fails."""
    attempts: list[Any] = []

    def connect(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError("network access is not allowed in this test")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect)
    return attempts


# --- fixtures and helpers --------------------------------------------------------------------------


@pytest.fixture
def tiny() -> Any:
    return pack_import(pack_read(SMALL)).project


def state(project: Any) -> tuple[Any, ...]:
    """What a refused import must leave as it was."""
    return (
        sorted(Cluster.objects.filter(project=project).values_list("key", "name", "description")),
        sorted(
            Label.objects.filter(project=project).values_list(
                "label_id", "name", "parent__label_id", "status"
            )
        ),
        AuditEvent.objects.count(),
    )


def pack_api(client: Any, project: Any, name: str, content: bytes) -> Any:
    return client.post(
        f"/api/v1/projects/{project.slug}/pack/",
        {"file": SimpleUploadedFile(name, content)},
        format="multipart",
    )


def skos_api(client: Any, project: Any, content: bytes, media_type: str) -> Any:
    return client.post(f"/api/v1/projects/{project.slug}/skos/", data=content, content_type=media_type)


def file_errors(response: Any) -> str:
    return " ".join(response.json()["errors"]["file"])


# --- YAML aliases -----------------------------------------------------------------------------------


def test_a_yaml_alias_bomb_is_refused_through_the_api(tiny, make_user, api_as):
    client, before = api_as(make_user("pat", "expert", tiny)), state(tiny)

    resp = pack_api(client, tiny, "bomb.yaml", yaml_alias_bomb())

    assert resp.status_code == 400
    assert resp.json()["rules"] == ["file.yaml_aliases"]
    assert "anchors and aliases" in file_errors(resp)
    assert state(tiny) == before


def test_a_yaml_alias_bomb_is_refused_in_the_browser(tiny, make_user, client):
    client.force_login(make_user("pat", "expert", tiny))
    before = state(tiny)

    resp = client.post("/p/tiny/packs/", {"file": SimpleUploadedFile("bomb.yaml", yaml_alias_bomb())})

    assert resp.status_code == 422
    html = resp.content.decode()
    assert "file.yaml_aliases" in html and "anchors and aliases" in html
    assert state(tiny) == before


def test_a_yaml_alias_bomb_is_refused_by_import_pack(tiny, tmp_path):
    path, before = tmp_path / "bomb.yaml", state(tiny)
    path.write_bytes(yaml_alias_bomb())

    with pytest.raises(CommandError, match=r"\[file\.yaml_aliases\].*anchors and aliases"):
        call_command("import_pack", str(path), "--no-progress", stdout=StringIO(), stderr=StringIO())
    assert state(tiny) == before


def test_an_alias_inside_its_own_anchor_is_refused(tiny, make_user, api_as):
    client = api_as(make_user("pat", "expert", tiny))

    resp = pack_api(client, tiny, "loop.yaml", b"format: arg-pack/1\nlabels: &loop [*loop]\n")

    assert resp.status_code == 400
    assert resp.json()["rules"] == ["file.yaml_aliases"]


def test_a_few_plain_aliases_are_still_accepted(tiny, make_user, api_as):
    # The demo pack shares its policies' term lists through anchors; that stays possible.
    text = (
        SMALL.read_text()
        .replace("Money matters.", "&shared Money matters.")
        .replace("Logging in.", "*shared")
    )
    client = api_as(make_user("pat", "expert", tiny))

    resp = pack_api(client, tiny, "tiny.yaml", text.encode())

    assert resp.status_code == 200, resp.content
    assert Cluster.objects.get(project=tiny, key="access").description == "Money matters."


# --- XML entities -----------------------------------------------------------------------------------


@pytest.mark.parametrize("document", [xml_entity_bomb, xml_external_entity], ids=["bomb", "external"])
def test_rdf_xml_with_a_doctype_is_refused_through_the_api(document, project, expert, api_as, no_network):
    before = state(project)

    resp = skos_api(api_as(expert), project, document(), "application/rdf+xml")

    assert resp.status_code == 400
    assert resp.json()["rules"] == ["file.xml_doctype"]
    assert "DOCTYPE" in file_errors(resp) and "entit" in file_errors(resp)
    assert no_network == []
    assert state(project) == before


def test_a_utf16_doctype_is_refused_too(project, expert, api_as):
    content = (
        xml_entity_bomb().decode().replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
    )

    resp = skos_api(api_as(expert), project, content.encode("utf-16"), "application/rdf+xml")

    assert resp.status_code == 400
    assert resp.json()["rules"] == ["file.xml_doctype"]


@pytest.mark.parametrize("fmt", ["xml", "trix"])
def test_skos_import_refuses_a_doctype_in_any_xml_syntax(fmt, project, tmp_path):
    path = tmp_path / f"bomb.{'rdf' if fmt == 'xml' else 'trix'}"
    path.write_bytes(xml_entity_bomb())
    stderr = StringIO()

    with pytest.raises(CommandError, match=r"bomb\.\w+: import refused"):
        call_command("skos_import", "--project", project.slug, str(path), stdout=StringIO(), stderr=stderr)
    assert "[file.xml_doctype]" in stderr.getvalue()
    assert Label.objects.filter(project=project).count() == 0


# --- nesting depth ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "document"), [("deep.yaml", deep_yaml_pack), ("deep.json", deep_json_pack)])
def test_a_pack_nested_10000_deep_is_refused_through_the_api(name, document, tiny, make_user, api_as):
    client, before = api_as(make_user("pat", "expert", tiny)), state(tiny)

    resp = pack_api(client, tiny, name, document())

    assert resp.status_code == 400
    assert resp.json()["rules"] == ["file.too_deep"]
    assert "nested more than 64 deep" in file_errors(resp)
    assert state(tiny) == before


def test_a_deep_pack_is_refused_in_the_browser(tiny, make_user, client):
    client.force_login(make_user("pat", "expert", tiny))

    resp = client.post("/p/tiny/packs/", {"file": SimpleUploadedFile("deep.json", deep_json_pack())})

    assert resp.status_code == 422
    assert "file.too_deep" in resp.content.decode()


def test_a_deep_pack_is_refused_by_import_pack(tiny, tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_bytes(deep_yaml_pack())

    with pytest.raises(CommandError, match=r"\[file\.too_deep\]"):
        call_command("import_pack", str(path), "--no-progress", stdout=StringIO(), stderr=StringIO())


def test_deep_json_ld_is_refused_by_skos_import(project, tmp_path):
    path = tmp_path / "deep.jsonld"
    path.write_text('{"@id": "urn:x:a", "urn:x:p": ' + "[" * DEEP + "]" * DEEP + "}")
    stderr = StringIO()

    with pytest.raises(CommandError, match="import refused"):
        call_command("skos_import", "--project", project.slug, str(path), stdout=StringIO(), stderr=stderr)
    assert "[file.too_deep]" in stderr.getvalue()


def test_deep_turtle_is_refused_through_the_api(project, expert, api_as):
    turtle = "<urn:x:a> <urn:x:p> " + "[ <urn:x:p> " * DEEP + "]" * DEEP + " ."

    resp = skos_api(api_as(expert), project, turtle.encode(), "text/turtle")

    assert resp.status_code == 400
    assert resp.json()["rules"] == ["file.too_deep"]


# --- size -------------------------------------------------------------------------------------------


@override_settings(IMPORT_MAX_BYTES=1000)
def test_an_oversized_pack_is_refused_through_the_api(tiny, make_user, api_as):
    client, before = api_as(make_user("pat", "expert", tiny)), state(tiny)

    resp = pack_api(client, tiny, "big.yaml", SMALL.read_bytes())

    assert resp.status_code == 413
    assert resp.json()["rules"] == ["file.too_large"]
    assert "1000 bytes" in file_errors(resp) and "ARG_IMPORT_MAX_BYTES" in file_errors(resp)
    assert state(tiny) == before


@override_settings(IMPORT_MAX_BYTES=1000)
def test_an_oversized_multipart_body_is_refused_before_it_is_parsed(tiny, make_user, api_as, monkeypatch):
    def parse(self: Any) -> None:
        raise AssertionError("the multipart body was read")

    monkeypatch.setattr(multipartparser.MultiPartParser, "parse", parse)
    client = api_as(make_user("pat", "expert", tiny))

    resp = pack_api(client, tiny, "big.yaml", b"#" * (MULTIPART_OVERHEAD + 2000))

    assert resp.status_code == 413
    assert resp.json()["rules"] == ["file.too_large"]


@override_settings(IMPORT_MAX_BYTES=1000)
def test_an_oversized_raw_pack_body_is_refused_before_it_is_read(tiny, make_user, api_as):
    client = api_as(make_user("pat", "expert", tiny))

    resp = client.post(
        "/api/v1/projects/tiny/pack/",
        data=SMALL.read_bytes(),
        content_type="application/yaml",
        HTTP_CONTENT_DISPOSITION="attachment; filename=big.yaml",
    )

    assert resp.status_code == 413
    assert resp.json()["rules"] == ["file.too_large"]


@override_settings(IMPORT_MAX_BYTES=1000)
def test_an_oversized_pack_is_refused_in_the_browser(tiny, make_user, client):
    client.force_login(make_user("pat", "expert", tiny))
    before = state(tiny)

    resp = client.post("/p/tiny/packs/", {"file": SimpleUploadedFile("big.yaml", SMALL.read_bytes())})

    assert resp.status_code == 422
    assert "larger than 1000 bytes" in resp.content.decode()
    assert state(tiny) == before


@override_settings(IMPORT_MAX_BYTES=1000)
def test_an_oversized_pack_is_refused_by_import_pack(tiny, tmp_path):
    path = tmp_path / "big.yaml"
    path.write_bytes(SMALL.read_bytes())

    with pytest.raises(CommandError, match=r"\[file\.too_large\].*larger than 1000 bytes"):
        call_command("import_pack", str(path), "--no-progress", stdout=StringIO(), stderr=StringIO())


@override_settings(IMPORT_MAX_BYTES=1000)
def test_an_oversized_skos_body_is_refused_through_the_api(project, expert, api_as):
    turtle = "\n".join(f"<urn:x:c{i}> a <http://www.w3.org/2004/02/skos/core#Concept> ." for i in range(40))

    resp = skos_api(api_as(expert), project, turtle.encode(), "text/turtle")

    assert resp.status_code == 413
    assert resp.json()["rules"] == ["file.too_large"]
    assert "1000 bytes" in file_errors(resp)
    assert Label.objects.filter(project=project).count() == 0


@override_settings(IMPORT_MAX_BYTES=1000)
def test_an_oversized_skos_file_is_refused_by_skos_import(project, tmp_path):
    path = tmp_path / "big.ttl"
    path.write_text("# padding\n" * 200)

    with pytest.raises(CommandError, match=r"big\.ttl: .*larger than 1000 bytes"):
        call_command(
            "skos_import", "--project", project.slug, str(path), stdout=StringIO(), stderr=StringIO()
        )


def test_files_within_the_limit_still_import(tiny, project, expert, make_user, api_as):
    with override_settings(IMPORT_MAX_BYTES=len(SMALL.read_bytes())):
        resp = pack_api(api_as(make_user("pat", "expert", tiny)), tiny, "tiny.yaml", SMALL.read_bytes())
        assert resp.status_code == 200, resp.content
    turtle = skos_export(project=tiny).encode()
    with override_settings(IMPORT_MAX_BYTES=len(turtle)):
        resp = skos_api(api_as(expert), project, turtle, "text/turtle")
        assert resp.status_code == 200, resp.content


# --- JSON-LD remote contexts ------------------------------------------------------------------------


@pytest.mark.parametrize("document", REMOTE_CONTEXTS.values(), ids=REMOTE_CONTEXTS.keys())
def test_json_ld_with_a_remote_context_is_refused_without_a_fetch(document, project, tmp_path, no_network):
    path = tmp_path / "remote.jsonld"
    path.write_text(json.dumps(document))
    stderr = StringIO()

    with pytest.raises(CommandError, match="import refused"):
        call_command("skos_import", "--project", project.slug, str(path), stdout=StringIO(), stderr=stderr)
    assert "[file.remote_context]" in stderr.getvalue() and REMOTE in stderr.getvalue()
    assert no_network == []


def test_json_ld_with_an_inline_context_still_imports(project, tmp_path, no_network):
    path = tmp_path / "inline.jsonld"
    path.write_text(
        json.dumps(
            {
                "@context": {"skos": "http://www.w3.org/2004/02/skos/core#"},
                "@graph": [{"@id": "urn:x:a", "@type": "skos:Concept", "skos:prefLabel": "Billing"}],
            }
        )
    )

    call_command("skos_import", "--project", project.slug, str(path), stdout=StringIO(), stderr=StringIO())

    assert Cluster.objects.filter(project=project, name="Billing").exists()
    assert no_network == []
