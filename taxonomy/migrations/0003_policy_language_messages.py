from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("taxonomy", "0002_typology_templates"),
    ]

    operations = [
        migrations.AddField(
            model_name="policy",
            name="language_messages",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
