from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ontology", "0004_release_job"),
    ]

    operations = [
        migrations.AddField(
            model_name="release",
            name="languages",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="ISO 639-1 codes of the languages its label examples are written in",
            ),
        ),
    ]
