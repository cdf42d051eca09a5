"""schemathesis against the desktop bridge's own /openapi.json, over real HTTP with the bridge
token: every operation with generated valid and invalid input (bodies, the /static/{name}
parameter, missing or wrong tokens). No answer is a 5xx of the bridge's own (500 `internal_error`);
the only 5xx are its declared 502/503 about the identity provider (here a fake one without, for
instance, device authorization), and every status, content type and body is one the document
declares. `make fuzz` runs it with many more examples."""

from __future__ import annotations

import os

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks

from tests.desktop.harness import BRIDGE_TOKEN

UPSTREAM = {"upstream_error", "upstream_unavailable"}
EXAMPLES = int(os.environ.get("CAMPUSID_FUZZ_EXAMPLES", "8"))
CHECKS = [
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.negative_data_rejection,
]


def test_bridge_conforms_to_its_openapi_document(bridge):
    schema = schemathesis.openapi.from_url(f"{bridge.url}/openapi.json")
    static = schema["/static/{name}"]["GET"]
    assert [p["name"] for p in static.definition.raw["parameters"]] == ["name"]
    seen: dict[str, int] = {}
    headers = {"Authorization": f"Bearer {BRIDGE_TOKEN}", "Host": f"127.0.0.1:{bridge.port}"}
    for result in schema.get_all_operations():
        op = result.ok()

        @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(case=op.as_strategy())
        def check(case):
            if case.operation.path == "/login" and isinstance(case.body, dict):
                case.body["timeout"] = min(case.body.get("timeout", 5) or 5, 5)  # a person never comes
            response = case.call(base_url=bridge.url, headers=headers)
            seen[str(response.status_code)] = seen.get(str(response.status_code), 0) + 1
            if response.status_code >= 500:
                assert response.status_code in (502, 503), response.text[:300]
                assert response.json()["error"]["code"] in UPSTREAM, response.text[:300]
            case.validate_response(response, checks=CHECKS)

        check()
    print(f"bridge: answers per status {seen}")
    assert "500" not in seen
