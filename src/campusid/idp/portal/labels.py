"""What the developer portal and the review console call the review workflow's states, actions and
roles, marked for translation: the templates look a name up here (`labels.state[app.state]`) and
print it in the page's language. A name missing here is shown as the identifier itself."""

from __future__ import annotations

from campusid.i18n import N_

state = {
    "draft": N_("Draft"),
    "under_review": N_("Under review"),
    "approved": N_("Approved"),
    "active": N_("Active"),
    "rejected": N_("Rejected"),
    "suspended": N_("Suspended"),
}

revision = {
    "under_review": N_("Change under review"),
    "rejected": N_("Change rejected"),
}

# What the developer is to do next, by the app's state.
next_step = {
    "draft": N_("Submit the application when it is ready; an administrator will review it."),
    "under_review": N_("An administrator is reviewing the application."),
    "approved": N_("Approved. Activate the application to let it sign users in."),
    "rejected": N_("Rejected. Read the feedback, edit the application and submit it again."),
    "active": N_("Active: the application may sign users in."),
    "suspended": N_("Suspended by an administrator: sign-ins are refused."),
}

# The review history's actions (apps/service.py, apps/revisions.py).
action = {
    "create": N_("Created"),
    "edit": N_("Edited"),
    "submit": N_("Submitted for review"),
    "approve": N_("Approved"),
    "reject": N_("Rejected"),
    "activate": N_("Activated"),
    "suspend": N_("Suspended"),
    "reinstate": N_("Reinstated"),
    "rotate_secret": N_("Secret rotated"),
    "revision_submit": N_("Change submitted for review"),
    "revision_approve": N_("Change approved"),
    "revision_reject": N_("Change rejected"),
}

# What a grant type beyond the code flow lets an app do (oidc/registration.py's grant_types).
grant_type = {
    "device_code": N_(
        "Bots, SSH sessions and lab machines sign in with a short code the person enters on their phone "
        "or computer (device authorization, RFC 8628). A reviewer must grant it."
    ),
    "cas_proxy": N_("Proxy tickets for back-end services (CAS apps). A reviewer must grant it."),
}

queue_kind = {"app": N_("New application"), "revision": N_("Change to an active app")}

source = {"local": N_("Local account"), "directory": N_("University directory")}

role = {"student": N_("Student"), "developer": N_("Developer"), "admin": N_("Administrator")}

app_type = {"web": N_("Web application"), "native": N_("Native application"), "cas": N_("CAS application")}
