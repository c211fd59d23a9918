"""A corrupted or partial knowledge pack changes nothing — cut short at any point, binary garbage, or an
import failing half-way (the graph write breaks after the taxonomy rows were written).

tests/taxonomy/test_packs.py covers packs that break a rule; these are the transport-level faults.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client

import ontology.store as store_module
from arg_platform.errors import RuleViolation
from arg_platform.models import AuditEvent
from ontology.models import OntologyNode
from projects.models import Project
from taxonomy.models import Cluster, Label, Policy
from taxonomy.packs import pack_export, pack_import, pack_read
from taxonomy.packs.reader import pack_parse

pytestmark = pytest.mark.django_db

SMALL_PACK = Path(__file__).resolve().parents[1] / "taxonomy" / "fixtures" / "small_pack.yaml"
TEXT = SMALL_PACK.read_text(encoding="utf-8")


def _state() -> tuple:
    return (
        Project.objects.count(),
        Cluster.objects.count(),
        Label.objects.count(),
        Policy.objects.count(),
        OntologyNode.objects.count(),
        AuditEvent.objects.count(),
    )


def test_a_pack_cut_short_anywhere_never_changes_the_project_it_reimports_into():
    # Found by this drill: a file cut after e.g. "nodes:" parsed as a valid, smaller pack and the
    # re-import emptied the graph. Absent sections are now refused on re-import (pack.section_missing).
    project = pack_import(pack_read(SMALL_PACK)).project
    exported = pack_export(project=project)
    before = _state()
    lines = TEXT.splitlines(keepends=True)
    cuts = [sum(len(line) for line in lines[:n]) for n in range(1, len(lines))]  # every line end
    cuts += [cut + 3 for cut in cuts[::7]]  # and some mid-line cuts
    refused = 0
    for cut in cuts:
        with pytest.raises(RuleViolation):
            pack_import(pack_parse(TEXT[:cut], source="partial.yaml"))
        refused += 1
    assert refused == len(cuts) > 100
    assert _state() == before
    assert pack_export(project=Project.objects.get(slug="tiny")) == exported


def test_a_missing_section_is_named():
    pack_import(pack_read(SMALL_PACK))
    with pytest.raises(RuleViolation) as refused:
        pack_import(pack_parse(TEXT[: TEXT.index("nodes:")], source="cut.yaml"))
    violation = refused.value.violations[0]
    assert violation.rule == "pack.section_missing"
    assert violation.message.startswith("cut.yaml: sections nodes, edges, aliases are missing")


def test_binary_garbage_is_refused():
    before = _state()
    with pytest.raises(RuleViolation) as refused:
        pack_import(pack_parse(bytes(range(256)).decode("latin-1"), source="garbage.bin"))
    assert refused.value.violations[0].rule.startswith("pack.")
    assert _state() == before


def test_a_failure_half_way_through_rolls_the_whole_import_back(monkeypatch):
    store = store_module.get_graph_store()

    def broken(project_id, graph):  # the taxonomy rows are written by now; the graph write fails
        assert Label.objects.filter(project_id=project_id).count() == 4
        raise OSError("disk full while writing the graph")

    monkeypatch.setattr(store, "replace_graph", broken)
    before = _state()
    with pytest.raises(OSError, match="disk full"):
        pack_import(pack_read(SMALL_PACK))
    assert _state() == before


def test_the_cli_and_the_upload_refuse_a_partial_file_and_change_nothing(tmp_path, make_user):
    project = pack_import(pack_read(SMALL_PACK)).project
    partial = tmp_path / "partial.yaml"
    partial.write_text(TEXT[: int(len(TEXT) * 0.6)], encoding="utf-8")
    before = _state()
    with pytest.raises(CommandError):
        call_command("import_pack", str(partial), "--no-progress")
    client = Client()
    client.force_login(make_user("ivy", "expert", project))
    upload = SimpleUploadedFile("partial.yaml", partial.read_bytes())
    response = client.post(f"/p/{project.slug}/packs/", {"file": upload})
    assert response.status_code == 422
    assert b"nothing was changed" in response.content
    assert _state() == before
