"""`campusid serve` and `campusid demo`: the commands that serve (how they run the server is
serving.py)."""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from campusid.cli import serving
from campusid.cli.common import JsonOpt, Services, err, loaded_keys, out, say


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(help="Worker processes (share the database; use Redis for limits).")] = 1,
):
    """Serve the OpenID Provider."""
    serving.early_logging()
    with serving.metrics_dir(workers):
        svc = Services(port)
        svc.run(loaded_keys)  # the keys exist and this CAMPUSID_SECRET_KEY opens them
        cfg = svc.settings
        banner = f"campusid serving {cfg.issuer.display} on http://{host}:{port} (database: {cfg.database_url.split('://')[0]})"
        if cfg.log_format == "json":
            serving.log.info(banner)
        else:
            err.print(banner, highlight=False, markup=False)
        serving.run_server(cfg, host, port, workers)


def demo(
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8000,
    as_json: JsonOpt = False,
):
    """Serve with demo users, grades and two active clients, printed at start."""
    serving.figures_in_memory()  # one worker
    from campusid.idp.demo import seed

    svc = Services(port)
    svc_cfg = svc.settings

    async def action(svc: Services) -> dict:
        await loaded_keys(svc)
        return await seed(svc.store, svc.passwords, svc_cfg.issuer.canonical, int(time.time()))

    info = svc.run(action)
    if as_json:
        print(json.dumps(info), flush=True)
    else:
        say(("campusid demo", "bold"), f" at {svc_cfg.issuer.display}  (data: {svc_cfg.data_dir})")
        users = Table("username", "password", "name", "role", "student number", title="Demo users")
        for u in info["users"]:
            users.add_row(*map(Text, (u["username"], u["password"], u["name"], u["role"], u["student_number"] or "")))
        out.print(users)
        clients = Table("client_id", "type", "redirect URIs", title="Active clients")
        for c in info["clients"]:
            clients.add_row(Text(c["client_id"]), Text(c["type"]), Text("\n".join(c["redirect_uris"]), overflow="fold"))
        out.print(clients)
        # A secret is printed whole on a line of its own: a table cell would cut or fold it to the
        # terminal's width, and a folded secret cannot be copied.
        for c in info["clients"]:
            if c.get("client_secret"):
                out.print(f"Secret of {c['client_id']} (new at each start):", style="bold", markup=False)
                out.print(c["client_secret"], soft_wrap=True, highlight=False, markup=False)
        discovery = f"{svc_cfg.issuer.canonical}/.well-known/openid-configuration"
        out.print(f"Discovery: {discovery}   (Ctrl+C stops)", markup=False)
    sys.stdout.flush()
    serving.run_server(svc_cfg, host, port, 1)
