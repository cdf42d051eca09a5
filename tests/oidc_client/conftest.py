"""Fixtures for the oidc_client tests.

- ``op`` / ``client`` / ``aclient``: an in-process fake OpenID Provider behind ``httpx.MockTransport``.
  The fake signs real tokens with a real RSA key (joserfc) and checks the real PKCE proof, so the
  client's crypto and protocol checks are exercised for real; only the network is fake.
- ``node_op``: panva/node-oidc-provider 9.13.3 as a real, third-party provider in a subprocess.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from joserfc.jwk import RSAKey

from campusid.oidc_client import AsyncOIDCClient, OIDCClient
from tests.conftest import stop_process

from .fake_op import CLIENT_ID, REDIRECT_URI, FakeOP


@pytest.fixture(scope="session")
def rsa_key() -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": "k1", "alg": "RS256", "use": "sig"})


@pytest.fixture(scope="session")
def rsa_key2() -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": "k2", "alg": "RS256", "use": "sig"})


@pytest.fixture
def op(rsa_key: RSAKey) -> FakeOP:
    return FakeOP(key=rsa_key)


@pytest.fixture
def make_client(op: FakeOP) -> Iterator[Callable[..., OIDCClient]]:
    made: list[OIDCClient] = []

    def make(**kwargs: Any) -> OIDCClient:
        kwargs.setdefault("issuer", op.issuer)
        kwargs.setdefault("client_id", CLIENT_ID)
        kwargs.setdefault("redirect_uri", REDIRECT_URI)
        kwargs.setdefault("http", httpx.Client(transport=httpx.MockTransport(op.handler)))
        client = OIDCClient(**kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        client._http.close()


@pytest.fixture
def client(make_client: Callable[..., OIDCClient]) -> OIDCClient:
    return make_client()


@pytest.fixture
async def aclient(op: FakeOP) -> Any:
    async with httpx.AsyncClient(transport=httpx.MockTransport(op.handler)) as http:
        yield AsyncOIDCClient(issuer=op.issuer, client_id=CLIENT_ID, redirect_uri=REDIRECT_URI, http=http)


# --- node-oidc-provider (interop) ----------------------------------------------------------

NODE_OP_DIR = Path(__file__).parent / "node_op"
# RFC 6749 Appendix A.2: a client_secret is VSCHAR (printable ASCII), so no non-ASCII here.
NODE_OP_WEB_SECRET = "web secret:+%/~&="


@dataclass
class NodeOP:
    issuer: str
    web_secret: str


@pytest.fixture(scope="session")
def node_op() -> Iterator[NodeOP]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH: the node-oidc-provider interop tests need Node.js 20+")
    if not (NODE_OP_DIR / "node_modules" / "oidc-provider").is_dir():
        npm = shutil.which("npm")
        assert npm is not None, "node is installed but npm is not: cannot install oidc-provider"
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=NODE_OP_DIR,
            check=True,
            capture_output=True,
            timeout=300,
        )
    env = {**os.environ, "OP_WEB_SECRET": NODE_OP_WEB_SECRET}
    proc = subprocess.Popen(
        [node, "server.mjs"],
        cwd=NODE_OP_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        try:
            first = lines.get(timeout=30)
        except queue.Empty:
            pytest.fail("node-oidc-provider did not start within 30 s")
        if not first:
            pytest.fail(f"node-oidc-provider exited: {proc.stderr.read()}")
        issuer = json.loads(first)["issuer"]
        # The server prints its issuer after listen(); confirm discovery answers before any test runs.
        response = httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=10)
        assert response.status_code == 200 and response.json()["issuer"] == issuer
        yield NodeOP(issuer=issuer, web_secret=NODE_OP_WEB_SECRET)
    finally:
        stop_process(proc)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
