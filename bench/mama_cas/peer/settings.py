"""django-mama-cas as a benchmark peer: the smallest Django project that serves CAS 1-3 at /cas/,
with sessions and tickets in SQLite (its data directory: MAMA_DATA_DIR), one service pattern for
the bench's service, and the username and name released as attributes."""

import os
from pathlib import Path

DATA = Path(os.environ.get("MAMA_DATA_DIR", "."))
SECRET_KEY = os.environ.get("MAMA_SECRET_KEY", "bench-only-not-secret-" + "x" * 30)
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "mama_cas",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "peer.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
# SQLite as campusid's embedded default uses it: WAL, synchronous=NORMAL (set per connection in
# serve.py), and writers wait for the lock rather than fail at once (Django's default waits 5 s).
DATABASES = {
    "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(DATA / "mama.sqlite3"), "OPTIONS": {"timeout": 30}}
}
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
MAMA_CAS_SERVICES = [
    {
        "SERVICE": r"^https://rp\.example/cas/.*",
        "CALLBACKS": ["mama_cas.callbacks.user_name_attributes"],
        "LOGOUT_ALLOW": True,
    }
]
