from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0010_note_cursor_any_note_name"),
    ]

    operations = [
        migrations.AddField(
            model_name="workspacebinding",
            name="time_zone",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
    ]
