"""The exact review states of DESIGN 3.6."""

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
