"""`campusid keys`: the signing keys."""

from __future__ import annotations

import time

import typer

from campusid.cli.common import JsonOpt, Services, emit, loaded_keys, out

app = typer.Typer(no_args_is_help=True, help="Signing keys.")


@app.command("rotate")
def keys_rotate(as_json: JsonOpt = False):
    """Publish the next signing keys now; they sign after the JWKS cache lifetime."""

    async def action(svc: Services) -> dict:
        from campusid.idp import events as ev

        keys = await loaded_keys(svc)
        added = await keys.rotate()
        await ev.Events(svc.store).record(ev.KEY_ROTATED, detail="by hand: " + ", ".join(k["kid"] for k in added))
        return {"added": added, "keys": keys.describe()}

    emit(
        Services(as_json=as_json).run(action),
        as_json,
        lambda d: [
            out.print(
                f"published {k['kid']} ({k['alg']}), signing from "
                f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(k['signs_from']))}Z",
                markup=False,
            )
            for k in d["added"]
        ],
    )


@app.command("list")
def keys_list(as_json: JsonOpt = False):
    """List signing keys (public information only)."""

    async def action(svc: Services) -> dict:
        return {"keys": (await loaded_keys(svc)).describe()}

    emit(Services(as_json=as_json).run(action), as_json)
