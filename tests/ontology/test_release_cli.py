"""Operators publish and roll back releases from the command line."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from ontology.models import Release
from taxonomy.models import Label
from taxonomy.packs import pack_import, pack_read
from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db


def test_publish_and_activate_from_the_cli():
    tiny = pack_import(pack_read(SMALL)).project
    out = StringIO()
    call_command("publish_release", "tiny", "--notes", "first", stdout=out)
    assert "release v1 active — 3 nodes, 1 edges" in out.getvalue()
    again = StringIO()
    call_command("publish_release", "tiny", stdout=again)
    assert "identical to the active release v1: nothing to publish" in again.getvalue()
    assert Release.objects.filter(project=tiny).count() == 1
    Label.objects.filter(project=tiny, label_id="L00002").update(name="Get an invoice PDF")
    call_command("publish_release", "tiny", stdout=StringIO())
    call_command("activate_release", "tiny", "1", "--reason", "rollback", stdout=out)
    assert Release.objects.get(project=tiny, is_active=True).version == 1
    with pytest.raises(CommandError, match="release v9 not found"):
        call_command("activate_release", "tiny", "9")


def test_cli_refuses_an_invalid_draft_and_names_the_rule():
    tiny = pack_import(pack_read(SMALL)).project
    Label.objects.filter(project=tiny, label_id="L00002").update(status="DEPRECATED")
    with pytest.raises(CommandError, match="graph.attach_label_deprecated"):
        call_command("publish_release", "tiny")
    assert not Release.objects.filter(project=tiny).exists()
