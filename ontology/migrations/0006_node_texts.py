"""A node's three texts: ``chunk`` (the client text), ``staff_notes`` and ``description``.

Existing rows keep their chunk as the client text, except MemoryRead and MemoryWrite nodes: their chunk
described the operation ("Loads the signed-in user's organizations …") and was shown as the answer, so
it moves to ``description`` and the chunk is left empty (the memory step writes the answer from what
it found or saved). Reversing moves such a description back into an empty chunk.
"""

from django.db import migrations, models

MEMORY_TYPES = ("MemoryRead", "MemoryWrite")


def chunk_to_description(apps, schema_editor):
    OntologyNode = apps.get_model("ontology", "OntologyNode")
    rows = OntologyNode.objects.filter(type__in=MEMORY_TYPES, description="").exclude(chunk="")
    for row in rows.iterator(chunk_size=500):
        row.description, row.chunk = row.chunk[:2000], ""
        row.save(update_fields=["description", "chunk"])


def description_to_chunk(apps, schema_editor):
    OntologyNode = apps.get_model("ontology", "OntologyNode")
    rows = OntologyNode.objects.filter(type__in=MEMORY_TYPES, chunk="").exclude(description="")
    for row in rows.iterator(chunk_size=500):
        row.chunk, row.description = row.description, ""
        row.save(update_fields=["description", "chunk"])


class Migration(migrations.Migration):
    dependencies = [
        ("ontology", "0005_release_languages"),
    ]

    operations = [
        migrations.AlterField(
            model_name="ontologynode",
            name="chunk",
            field=models.TextField(
                blank=True,
                help_text="client text: the only text an answer may show the asker",
                max_length=10000,
            ),
        ),
        migrations.AddField(
            model_name="ontologynode",
            name="staff_notes",
            field=models.TextField(
                blank=True,
                default="",
                help_text="instructions for staff; never shown to a client",
                max_length=10000,
            ),
        ),
        migrations.AddField(
            model_name="ontologynode",
            name="description",
            field=models.TextField(
                blank=True, default="", help_text="what the node is or does, for curators", max_length=2000
            ),
        ),
        migrations.RunPython(chunk_to_description, description_to_chunk),
    ]
