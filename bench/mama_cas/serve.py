"""Start django-mama-cas for bench/run.py: migrate its SQLite database, add the bench user, serve it
with uvicorn (one process, like campusid), and print one JSON line: its base URL and CAS endpoints.

    bench/mama_cas/.venv/bin/python bench/mama_cas/serve.py --port P --data DIR --password PW
"""

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--password", required=True)
    args = ap.parse_args()
    os.environ["MAMA_DATA_DIR"] = args.data
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "peer.settings")
    import django
    from django.core.management import call_command

    django.setup()
    from django.db.backends.signals import connection_created

    def wal(sender, connection, **kwargs):
        if connection.vendor == "sqlite":
            with connection.cursor() as cursor:
                cursor.execute("PRAGMA journal_mode=WAL")
                cursor.execute("PRAGMA synchronous=NORMAL")

    connection_created.connect(wal)
    call_command("migrate", verbosity=0, interactive=False)
    from django.contrib.auth.models import User

    if not User.objects.filter(username="bench").exists():
        User.objects.create_user("bench", password=args.password, first_name="Bench", last_name="User")
    base = f"http://{args.host}:{args.port}"
    cas = {"login": f"{base}/cas/login", "validate": f"{base}/cas/p3/serviceValidate"}
    print(json.dumps({"issuer": base, "cas": cas}))
    sys.stdout.flush()
    import uvicorn
    from django.core.asgi import get_asgi_application

    uvicorn.run(get_asgi_application(), host=args.host, port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
