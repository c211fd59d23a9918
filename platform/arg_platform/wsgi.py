"""WSGI entry point (gunicorn ``arg_platform.wsgi:application``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arg_platform.settings")
application = get_wsgi_application()
