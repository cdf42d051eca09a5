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
TYPES = ("web", "native")
# Grant types an app may ask for and a review may grant, beyond the authorization code flow and
# refresh that every active app has: `device_code` is the device authorization grant (RFC 8628).
GRANT_TYPES = ("device_code",)
