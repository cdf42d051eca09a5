"""The desktop app when campusid ends its sign-in (OpenID Connect Back-Channel Logout 1.0 revokes
the session's tokens): the person who approved the app's sign-in signs out of campusid in their
browser; the app's next call finds its access and refresh tokens refused, signs out, and says why
on the bridge (/status) and in its errors. Against campusid's own IdP over real HTTP."""

from __future__ import annotations

import pytest

from campusid.bridge_client import BridgeClient, NotLoggedIn
from tests.desktop.harness import BRIDGE_TOKEN, Bridge
from tests.desktop.real_idp import ServedIdP
from tests.idp.helpers import form_fields

pytestmark = pytest.mark.slow


def test_signing_out_at_campusid_signs_the_desktop_app_out_and_it_says_why(
    device_bridge: Bridge, served_idp: ServedIdP
):
    with BridgeClient(device_bridge.url, BRIDGE_TOKEN) as sdk:
        started = sdk.device_login()
        served_idp.decide(started.device.user_code)
        assert sdk.wait_for_login(timeout=30, poll_every=0.1).user_name == "Alice Zhang"
        assert sdk.sync_grades().grades == []
        assert sdk.status()["signed_out_reason"] is None

        # The person signs out of campusid in the browser they approved the app's sign-in in.
        person = served_idp.person
        action, fields = form_fields(person.get(served_idp.issuer + "/logout").text, "logout-form")
        assert person.post(served_idp.issuer + action, data=fields).status_code == 200

        with pytest.raises(NotLoggedIn) as refused:
            sdk.sync_grades()
        assert "campusid ended this sign-in" in str(refused.value)
        status = sdk.status()
        assert status["state"] == "signed_out" and status["user"] is None
        assert status["signed_out_reason"]["code"] == "session_revoked"
        assert "signed out there or in another app" in status["signed_out_reason"]["message"]
    events = [e for e in device_bridge.core.events.recent if e.kind == "state_changed"]
    assert events[-1].data["state"] == "signed_out" and events[-1].data["reason"] == "session_revoked"
