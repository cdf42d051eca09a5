"""Errors of the review workflow; each carries the HTTP status the API and pages answer with."""

from __future__ import annotations


class AppError(Exception):
    status = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(AppError):
    status = 404


class Forbidden(AppError):
    status = 403


class InvalidTransition(AppError):
    status = 409


class ValidationFailed(AppError):
    status = 422
