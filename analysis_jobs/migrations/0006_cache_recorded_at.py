# The rows already cached are taken as recorded now: the first prune after this migration keeps them for the
# full age it is given.

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('analysis_jobs', '0005_stat_digest'),
    ]

    operations = [
        migrations.AddField(
            model_name='blobdigest',
            name='recorded_at',
            field=models.DateTimeField(default=django.utils.timezone.now, help_text='When an analysis recorded the row (pruning goes by it).'),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name='filefacts',
            name='recorded_at',
            field=models.DateTimeField(default=django.utils.timezone.now, help_text='When an analysis recorded the row (pruning goes by it).'),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name='statdigest',
            name='recorded_at',
            field=models.DateTimeField(default=django.utils.timezone.now, help_text='When an analysis recorded the row (pruning goes by it).'),
            preserve_default=False,
        ),
    ]
