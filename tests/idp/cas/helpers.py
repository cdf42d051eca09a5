"""Helpers for the CAS face's tests: CAS apps taken through review, a browser's way through
/cas/login (the real login form), and the validation answers read as a CAS client reads them."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from urllib.parse import parse_qs, urlencode, urlsplit

from campusid.idp.faces import app_service
from tests.idp.helpers import PASSWORD, form_fields, run

NS = {"cas": "http://www.yale.edu/tp/cas"}
SERVICE = "https://portal.example.edu/portal/"
SERVICE_ROOT = "https://portal.example.edu/portal"


def cas_app(
    idp,
    client_id: str = "portal",
    services: tuple[str, ...] = (SERVICE_ROOT,),
    scopes: tuple[str, ...] = ("profile", "email"),
    grant_types: tuple[str, ...] = (),
    require_mfa: bool = False,
) -> dict:
    """A CAS app through review to active (its review grants what it asks)."""
    apps = app_service(idp.store)

    async def go():
        data, _ = await apps.create(
            name=f"{client_id} app",
            app_type="cas",
            services=list(services),
            scopes=list(scopes),
            owner="dev",
            client_id=client_id,
            grant_types=list(grant_types),
        )
        await apps.submit(client_id)
        await apps.approve(client_id, by="admin", grant_types=list(grant_types), require_mfa=require_mfa)
        return await apps.activate(client_id)

    return run(idp.store, go())


def login_url(service: str | None = SERVICE, **extra) -> str:
    params = {"service": service, **extra} if service is not None else dict(extra)
    return "/cas/login" + ("?" + urlencode(params) if params else "")


def ticket_of(location: str) -> str:
    [ticket] = parse_qs(urlsplit(location).query)["ticket"]
    return ticket


def sign_in(client, service: str = SERVICE, username: str = "alice", password: str = PASSWORD, **extra):
    """/cas/login → the login form → its POST; the POST's answer (a 303 to the service with a ticket)."""
    r = client.get(login_url(service, **extra))
    assert r.status_code == 200 and 'id="login-form"' in r.text, (r.status_code, r.text[:300])
    action, fields = form_fields(r.text, "login-form")
    return client.post(action, data={**fields, "username": username, "password": password})


def service_ticket(client, service: str = SERVICE, **extra) -> str:
    """A service ticket for `service`, signing in when the browser has no session."""
    r = client.get(login_url(service, **extra))
    if r.status_code == 200:
        action, fields = form_fields(r.text, "login-form")
        r = client.post(action, data={**fields, "username": "alice", "password": PASSWORD})
    assert r.status_code in (302, 303), (r.status_code, r.text[:300])
    return ticket_of(r.headers["location"])


def validate(client, ticket: str, service: str = SERVICE, endpoint: str = "/cas/p3/serviceValidate", **extra):
    return client.get(endpoint + "?" + urlencode({"service": service, "ticket": ticket, **extra}))


def parse(xml_text: str) -> ET.Element:
    root = ET.fromstring(xml_text)
    assert root.tag == "{http://www.yale.edu/tp/cas}serviceResponse"
    return root


def success(xml_text: str) -> tuple[str, dict[str, list[str]]]:
    """(user, {attribute: [values]}) of an authenticationSuccess, as a CAS client reads it."""
    node = parse(xml_text).find("cas:authenticationSuccess", NS)
    assert node is not None, xml_text
    user = node.find("cas:user", NS).text
    attrs: dict[str, list[str]] = {}
    for element in node.find("cas:attributes", NS) or []:
        attrs.setdefault(element.tag.split("}")[1], []).append(element.text)
    return user, attrs


def failure_code(xml_text: str) -> str:
    node = parse(xml_text).find("cas:authenticationFailure", NS)
    assert node is not None, xml_text
    return node.get("code")
