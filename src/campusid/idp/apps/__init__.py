"""Client applications and their review workflow: one implementation of
each transition, used by the CLI, the JSON API and the pages alike."""

from campusid.idp.apps.service import (
    AppError,
    AppService,
    Forbidden,
    InvalidTransition,
    NotFound,
    ValidationFailed,
)

__all__ = ["AppError", "AppService", "Forbidden", "InvalidTransition", "NotFound", "ValidationFailed"]
