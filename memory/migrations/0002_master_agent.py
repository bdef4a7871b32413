from django.db import migrations


def create_master(apps, schema_editor):
    Agent = apps.get_model("memory", "Agent")
    if not Agent.objects.filter(is_default=True).exists():
        Agent.objects.get_or_create(id="master", defaults={"name": "Master", "is_default": True})


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]
    operations = [migrations.RunPython(create_master, migrations.RunPython.noop)]
