"""The client's ``context.user_id`` as an indexed column of the log: erasure by user id finds a user's
rows without reading every log of the project. Rows written before it get the id from their context."""

from django.db import migrations, models

BATCH = 1000


def fill_user_id(apps, schema_editor):
    InferenceLog = apps.get_model("inference", "InferenceLog")
    rows = []
    for row in InferenceLog.objects.only("pk", "context").iterator(chunk_size=BATCH):
        user_id = (row.context or {}).get("user_id")
        if isinstance(user_id, str) and user_id:
            row.user_id = user_id[:128]
            rows.append(row)
        if len(rows) >= BATCH:
            InferenceLog.objects.bulk_update(rows, ["user_id"])
            rows = []
    if rows:
        InferenceLog.objects.bulk_update(rows, ["user_id"])


class Migration(migrations.Migration):
    dependencies = [
        ("inference", "0006_inferencelog_pii"),
        ("ontology", "0004_release_job"),
        ("projects", "0004_project_webhook_secret"),
    ]

    operations = [
        migrations.AddField(
            model_name="inferencelog",
            name="user_id",
            field=models.CharField(
                blank=True,
                help_text="the client's context.user_id: what erasure by user id finds",
                max_length=128,
            ),
        ),
        migrations.AddIndex(
            model_name="inferencelog",
            index=models.Index(fields=["project", "user_id"], name="inferencelog_project_user"),
        ),
        migrations.RunPython(fill_user_id, migrations.RunPython.noop),
    ]
