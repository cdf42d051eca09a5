"""schemathesis against the management API's OpenAPI document (/api/v1/openapi.json): every
operation, with generated valid and invalid input, as a signed-in developer and administrator with
the CSRF header. No answer is a 5xx, every status and body is one the document declares, and a
body the schema forbids is refused with a 4xx. (A body the schema allows may still be refused
with the declared 422: a redirect URI's rules depend on the app's type, which JSON Schema cannot
say; what the schema can say — names, feedback, at least one redirect URI — it says.) `make fuzz` runs the same with
many more examples (CAMPUSID_FUZZ_EXAMPLES)."""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks

from tests.portal.helpers import api_token, sign_in

EXAMPLES = int(os.environ.get("CAMPUSID_FUZZ_EXAMPLES", "8"))
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.negative_data_rejection,
]


def operations(app, path: str):
    schema = schemathesis.openapi.from_asgi(path, app)
    return schema, [result.ok() for result in schema.get_all_operations()]


def fuzz(app, path: str, base_url: str, client) -> dict[str, int]:
    """Each operation for EXAMPLES generated cases; the count of answers per status."""
    _schema, ops = operations(app, path)
    headers = {"X-CSRF-Token": client.headers["X-CSRF-Token"]}
    cookies = dict(client.cookies)
    seen: dict[str, int] = {}
    for op in ops:

        @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(case=op.as_strategy())
        def check(case):
            response = case.call(base_url=base_url, headers=headers, cookies=cookies)
            seen[str(response.status_code)] = seen.get(str(response.status_code), 0) + 1
            case.validate_response(response, checks=CHECKS)

        check()
    return seen


@pytest.mark.parametrize("username", ["dev", "admin"])
def test_management_api_conforms_to_its_openapi_document(console, username):
    client = sign_in(console, username)
    client.headers["X-CSRF-Token"] = api_token(client)
    seen = fuzz(console.app, "/api/v1/openapi.json", f"{console.issuer}/api/v1", client)
    print(f"management API as {username}: answers per status {seen}")
    assert not any(status.startswith("5") for status in seen)


def test_the_document_states_what_the_workflow_refuses(console):
    """What the review workflow refuses whatever the app (an empty or blank name or feedback) is in
    the schema, so a client generated from it cannot send it; an app's redirect URIs or CAS services
    are each at most 20 (which of them an app needs depends on its type: the workflow says)."""
    schemas = console.client().get("/api/v1/openapi.json").json()["components"]["schemas"]
    for model in ("AppCreate", "Revision"):
        name = schemas[model]["properties"]["name"]
        assert name["minLength"] == 1 and name["pattern"] == r"\S"
        assert schemas[model]["properties"]["redirect_uris"]["maxItems"] == 20
        assert schemas[model]["properties"]["services"]["maxItems"] == 20
    feedback = schemas["Reject"]["properties"]["feedback"]
    assert feedback["minLength"] == 1 and feedback["pattern"] == r"\S"
    client = sign_in(console, "dev")
    client.headers["X-CSRF-Token"] = api_token(client)
    for body in ({"name": "", "type": "native", "redirect_uris": ["http://127.0.0.1/cb"]},
                 {"name": " \t", "type": "native", "redirect_uris": ["http://127.0.0.1/cb"]},
                 {"name": "x", "type": "native", "redirect_uris": []}):  # fmt: skip
        r = client.post("/api/v1/apps", json=body)
        assert r.status_code == 422 and r.json()["error"] == "validation_failed", r.text
