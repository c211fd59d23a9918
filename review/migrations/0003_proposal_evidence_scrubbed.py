"""Proposals hold no raw PII: the logged prompts quoted in their evidence and replay scrubbed in place."""

from django.db import migrations

BATCH = 200


def scrub_existing(apps, schema_editor):
    # late, as migrations do: the guard is loaded only when this migration runs, not when it is listed
    from memory.pii import redact

    Proposal = apps.get_model("review", "Proposal")
    rows = []
    for row in Proposal.objects.only("pk", "evidence", "replay").iterator(chunk_size=BATCH):
        evidence, replay = redact(row.evidence or {}), redact(row.replay or {})
        if evidence.kinds or replay.kinds:
            row.evidence, row.replay = evidence.value, replay.value
            rows.append(row)
        if len(rows) >= BATCH:
            Proposal.objects.bulk_update(rows, ["evidence", "replay"])
            rows = []
    if rows:
        Proposal.objects.bulk_update(rows, ["evidence", "replay"])


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0002_applied_proposals"),
    ]

    operations = [migrations.RunPython(scrub_existing, migrations.RunPython.noop)]
