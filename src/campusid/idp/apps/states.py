"""The review states of an app (README: developer portal and review console)."""

DRAFT, UNDER_REVIEW, APPROVED, ACTIVE, REJECTED, SUSPENDED = (
    "draft",
    "under_review",
    "approved",
    "active",
    "rejected",
    "suspended",
)
STATES = (DRAFT, UNDER_REVIEW, APPROVED, ACTIVE, REJECTED, SUSPENDED)
EDITABLE = (DRAFT, REJECTED)
# An app's type is its registration's: which face serves it (apps/registrations.py; OIDC's web and
# native apps: oidc/registration.py).
