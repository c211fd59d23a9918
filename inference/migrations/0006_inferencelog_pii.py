"""Logs hold no raw PII: a ``pii`` column, and every row written before it scrubbed in place."""

from django.db import migrations, models

BATCH = 500
CONTEXT_KEPT = frozenset({"role", "typology", "session_id", "user_id", "timestamp", "language"})


def _scrub_rows(model, fields, scrub_row):
    rows = []
    for row in model.objects.only("pk", *fields).iterator(chunk_size=BATCH):
        if scrub_row(row):
            rows.append(row)
        if len(rows) >= BATCH:
            model.objects.bulk_update(rows, fields)
            rows = []
    if rows:
        model.objects.bulk_update(rows, fields)


def scrub_existing(apps, schema_editor):
    # late, as migrations do: the guard is loaded only when this migration runs, not when it is listed
    from memory.pii import redact

    def log_row(row):
        kinds = set()

        def scrubbed(value):
            redacted = redact(value)
            kinds.update(redacted.kinds)
            return redacted.value

        row.prompt = scrubbed(row.prompt)
        row.context = {k: v if k in CONTEXT_KEPT else scrubbed(v) for k, v in (row.context or {}).items()}
        row.action = scrubbed(row.action or {})
        row.answer = scrubbed(row.answer)
        row.error = scrubbed(row.error)[:500]
        row.pii = sorted(kinds)
        return bool(kinds)

    def feedback_row(row):
        redacted = redact(row.comment)
        row.comment = redacted.value
        return bool(redacted.kinds)

    def action_row(row):
        parameters, result = redact(row.parameters or {}), redact(row.result or {})
        row.parameters, row.result = parameters.value, result.value
        return bool(parameters.kinds or result.kinds)

    _scrub_rows(
        apps.get_model("inference", "InferenceLog"),
        ["prompt", "context", "action", "answer", "error", "pii"],
        log_row,
    )
    _scrub_rows(apps.get_model("inference", "Feedback"), ["comment"], feedback_row)
    _scrub_rows(apps.get_model("inference", "ActionExecution"), ["parameters", "result"], action_row)


class Migration(migrations.Migration):
    dependencies = [
        ("inference", "0005_action_idempotency_per_caller"),
    ]

    operations = [
        migrations.AddField(
            model_name="inferencelog",
            name="pii",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="kinds of PII replaced in what this row stores (never the values)",
            ),
        ),
        migrations.AlterField(
            model_name="inferencelog",
            name="prompt",
            field=models.TextField(help_text="as sent, with PII replaced by the Memory Guard's placeholders"),
        ),
        migrations.RunPython(scrub_existing, migrations.RunPython.noop),
    ]
