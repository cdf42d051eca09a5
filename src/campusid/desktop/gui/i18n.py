"""Interface text in English and Simplified Chinese, chosen from the system locale.

``LC_ALL``, ``LC_MESSAGES`` and ``LANG`` (in POSIX order of precedence) override the system locale,
so a test or a user can pick the language. Pure Python: no Qt needed to test it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

EN = "en"
ZH_CN = "zh_CN"

_TEXT: dict[str, dict[str, str]] = {
    EN: {
        "app.title": "CampusID Desktop",
        "user.signed_out": "Not signed in",
        "session.revoked": "You were signed out: campusid ended this sign-in (you signed out there or in "
        "another app, or your account or this app was disabled). Select \u201cSign in\u201d to sign in again.",
        "user.signed_in": "Signed in as {name}",
        "user.unnamed": "Signed in",
        "user.waiting": "Waiting for the browser sign-in\u2026",
        "action.sign_in": "Sign in",
        "action.sign_out": "Sign out",
        "action.cancel": "Cancel sign-in",
        "action.sync": "Sync now",
        "action.show": "Show window",
        "action.quit": "Quit",
        "action.dismiss": "Dismiss",
        "waiting.text": "Finish signing in in the browser window that just opened. "
        "This window keeps working while you do.",
        "waiting.no_browser": "No browser could be opened. Check your default browser, then try again.",
        "grades.title": "Grades",
        "grades.never_synced": "Not synced yet",
        "grades.last_sync": "Last synced {when}",
        "grades.syncing": "Syncing grades\u2026",
        "grades.empty_signed_out": "Sign in to see your grades.",
        "grades.empty_signed_in": "No grades on this computer yet. Select \u201cSync now\u201d to fetch them.",
        "grades.synced": "Grades updated: {count} courses.",
        "col.course_code": "Course code",
        "col.course_name": "Course name",
        "col.term": "Term",
        "col.credits": "Credits",
        "col.score": "Score",
        "col.grade_point": "Grade point",
        "gpa.title": "Grade point average",
        "gpa.note": "Credit-weighted",
        "gpa.overall": "Overall",
        "gpa.credits": "{credits} credits",
        "bridge.title": "Automation bridge",
        "bridge.running": "Running at {address}",
        "bridge.stopped": "Stopped",
        "bridge.not_running": "Not running: {reason}",
        "bridge.calls": "Recent calls",
        "bridge.no_calls": "No calls yet. Scripts and chat bots reach this app at {address}.",
        "bridge.col.time": "Time",
        "bridge.col.method": "Method",
        "bridge.col.path": "Path",
        "bridge.col.outcome": "Outcome",
        "outcome.ok": "{status} OK",
        "outcome.failed": "{status} refused",
        "outcome.error": "{status} error",
        "status.tokens": "Sign-in tokens are kept in the {detail}",
        "tray.tooltip": "CampusID Desktop \u2013 bridge running",
        "tray.hidden": "CampusID Desktop keeps running in the tray so scripts can reach the bridge. "
        "Choose Quit from the tray menu to stop it.",
        "instance.handed_over": "CampusID Desktop is already running; its window has been brought to the front.",
        "error.upstream_unavailable": "CampusID cannot be reached right now. "
        "Check your internet connection and try again in a few minutes.",
        "error.login_cancelled": "Sign-in cancelled. Select \u201cSign in\u201d when you are ready.",
        "error.login_timeout": "The sign-in was not finished in the browser in time. "
        "Select \u201cSign in\u201d to try again.",
        "error.rate_limited": "Too many sign-in attempts. Please wait and try again after {when} "
        "(in about {minutes} min).",
        "error.rate_limited_unknown": "Too many sign-in attempts. Please wait a few minutes and try again.",
        "error.session_expired": "Your session has expired. Select \u201cSign in\u201d to sign in again; "
        "your grades stay on this computer until you sign out.",
        "error.login_failed": "CampusID did not accept the sign-in. Select \u201cSign in\u201d to start again.",
        "error.login_in_progress": "A sign-in is already waiting in your browser. "
        "Finish it there, or cancel it here first.",
        "error.insufficient_scope": "This sign-in does not allow reading your grades. "
        "Sign out, then sign in again and allow access to grades.",
        "error.upstream_error": "CampusID answered with an error. Try again later; "
        "if it keeps happening, contact the IT service desk.",
        "error.unexpected": "Something went wrong ({code}). Try again; "
        "if it keeps happening, contact the IT service desk.",
    },
    ZH_CN: {
        "app.title": "CampusID \u684c\u9762\u7248",
        "user.signed_out": "\u672a\u767b\u5f55",
        "session.revoked": "您已退出：campusid 结束了此次登录（您在 campusid 或其他应用中退出了登录，"
        "或您的账户或本应用已被停用）。请选择\u201c登录\u201d重新登录。",
        "user.signed_in": "\u5df2\u767b\u5f55\uff1a{name}",
        "user.unnamed": "\u5df2\u767b\u5f55",
        "user.waiting": "\u6b63\u5728\u7b49\u5f85\u6d4f\u89c8\u5668\u767b\u5f55\u2026",
        "action.sign_in": "\u767b\u5f55",
        "action.sign_out": "\u9000\u51fa\u767b\u5f55",
        "action.cancel": "\u53d6\u6d88\u767b\u5f55",
        "action.sync": "\u7acb\u5373\u540c\u6b65",
        "action.show": "\u663e\u793a\u7a97\u53e3",
        "action.quit": "\u9000\u51fa",
        "action.dismiss": "\u5173\u95ed",
        "waiting.text": "\u8bf7\u5728\u521a\u521a\u6253\u5f00\u7684\u6d4f\u89c8\u5668\u7a97\u53e3\u4e2d"
        "\u5b8c\u6210\u767b\u5f55\u3002\u671f\u95f4\u672c\u7a97\u53e3\u53ef\u7167\u5e38\u4f7f\u7528\u3002",
        "waiting.no_browser": "\u65e0\u6cd5\u6253\u5f00\u6d4f\u89c8\u5668\u3002\u8bf7\u68c0\u67e5"
        "\u9ed8\u8ba4\u6d4f\u89c8\u5668\u540e\u91cd\u8bd5\u3002",
        "grades.title": "\u6210\u7ee9",
        "grades.never_synced": "\u5c1a\u672a\u540c\u6b65",
        "grades.last_sync": "\u4e0a\u6b21\u540c\u6b65\uff1a{when}",
        "grades.syncing": "\u6b63\u5728\u540c\u6b65\u6210\u7ee9\u2026",
        "grades.empty_signed_out": "\u767b\u5f55\u540e\u5373\u53ef\u67e5\u770b\u6210\u7ee9\u3002",
        "grades.empty_signed_in": "\u672c\u673a\u6682\u65e0\u6210\u7ee9\u3002\u8bf7\u70b9\u51fb"
        "\u201c\u7acb\u5373\u540c\u6b65\u201d\u83b7\u53d6\u3002",
        "grades.synced": "\u6210\u7ee9\u5df2\u66f4\u65b0\uff1a\u5171 {count} \u95e8\u8bfe\u7a0b\u3002",
        "col.course_code": "\u8bfe\u7a0b\u4ee3\u7801",
        "col.course_name": "\u8bfe\u7a0b\u540d\u79f0",
        "col.term": "\u5b66\u671f",
        "col.credits": "\u5b66\u5206",
        "col.score": "\u6210\u7ee9",
        "col.grade_point": "\u7ee9\u70b9",
        "gpa.title": "\u5e73\u5747\u5b66\u5206\u7ee9\u70b9",
        "gpa.note": "\u6309\u5b66\u5206\u52a0\u6743",
        "gpa.overall": "\u603b\u8ba1",
        "gpa.credits": "{credits} \u5b66\u5206",
        "bridge.title": "\u81ea\u52a8\u5316\u6865\u63a5",
        "bridge.running": "\u8fd0\u884c\u4e2d\uff1a{address}",
        "bridge.stopped": "\u5df2\u505c\u6b62",
        "bridge.not_running": "\u672a\u8fd0\u884c\uff1a{reason}",
        "bridge.calls": "\u6700\u8fd1\u8c03\u7528",
        "bridge.no_calls": "\u6682\u65e0\u8c03\u7528\u3002\u811a\u672c\u548c\u804a\u5929\u673a\u5668\u4eba"
        "\u53ef\u901a\u8fc7 {address} \u8bbf\u95ee\u672c\u5e94\u7528\u3002",
        "bridge.col.time": "\u65f6\u95f4",
        "bridge.col.method": "\u65b9\u6cd5",
        "bridge.col.path": "\u8def\u5f84",
        "bridge.col.outcome": "\u7ed3\u679c",
        "outcome.ok": "{status} \u6210\u529f",
        "outcome.failed": "{status} \u88ab\u62d2\u7edd",
        "outcome.error": "{status} \u51fa\u9519",
        "status.tokens": "\u767b\u5f55\u4ee4\u724c\u4fdd\u5b58\u5728\uff1a{detail}",
        "tray.tooltip": "CampusID \u684c\u9762\u7248 \u2013 \u6865\u63a5\u8fd0\u884c\u4e2d",
        "tray.hidden": "CampusID \u684c\u9762\u7248\u5728\u7cfb\u7edf\u6258\u76d8\u4e2d\u7ee7\u7eed"
        "\u8fd0\u884c\uff0c\u811a\u672c\u4ecd\u53ef\u8bbf\u95ee\u6865\u63a5\u3002\u5982\u9700\u505c\u6b62\uff0c"
        "\u8bf7\u5728\u6258\u76d8\u83dc\u5355\u4e2d\u9009\u62e9\u201c\u9000\u51fa\u201d\u3002",
        "instance.handed_over": "CampusID \u684c\u9762\u7248\u5df2\u5728\u8fd0\u884c\uff0c"
        "\u5df2\u5c06\u5176\u7a97\u53e3\u5207\u6362\u5230\u524d\u53f0\u3002",
        "error.upstream_unavailable": "\u6682\u65f6\u65e0\u6cd5\u8fde\u63a5 CampusID\u3002"
        "\u8bf7\u68c0\u67e5\u7f51\u7edc\u8fde\u63a5\uff0c\u51e0\u5206\u949f\u540e\u518d\u8bd5\u3002",
        "error.login_cancelled": "\u5df2\u53d6\u6d88\u767b\u5f55\u3002\u51c6\u5907\u597d\u540e"
        "\u8bf7\u70b9\u51fb\u201c\u767b\u5f55\u201d\u3002",
        "error.login_timeout": "\u672a\u5728\u9650\u5b9a\u65f6\u95f4\u5185\u5b8c\u6210\u6d4f\u89c8\u5668"
        "\u767b\u5f55\u3002\u8bf7\u70b9\u51fb\u201c\u767b\u5f55\u201d\u91cd\u8bd5\u3002",
        "error.rate_limited": "\u767b\u5f55\u5c1d\u8bd5\u8fc7\u4e8e\u9891\u7e41\u3002\u8bf7\u5728 {when} "
        "\u4e4b\u540e\u91cd\u8bd5\uff08\u7ea6 {minutes} \u5206\u949f\u540e\uff09\u3002",
        "error.rate_limited_unknown": "\u767b\u5f55\u5c1d\u8bd5\u8fc7\u4e8e\u9891\u7e41\u3002"
        "\u8bf7\u7b49\u5f85\u51e0\u5206\u949f\u540e\u91cd\u8bd5\u3002",
        "error.session_expired": "\u767b\u5f55\u5df2\u8fc7\u671f\u3002\u8bf7\u70b9\u51fb\u201c\u767b\u5f55"
        "\u201d\u91cd\u65b0\u767b\u5f55\uff1b\u9000\u51fa\u767b\u5f55\u524d\uff0c\u6210\u7ee9\u4f1a\u4fdd\u7559"
        "\u5728\u672c\u673a\u3002",
        "error.login_failed": "CampusID \u672a\u63a5\u53d7\u6b64\u6b21\u767b\u5f55\u3002\u8bf7\u70b9\u51fb"
        "\u201c\u767b\u5f55\u201d\u91cd\u65b0\u5f00\u59cb\u3002",
        "error.login_in_progress": "\u5df2\u6709\u4e00\u4e2a\u767b\u5f55\u6b63\u5728\u6d4f\u89c8\u5668\u4e2d"
        "\u7b49\u5f85\u3002\u8bf7\u5728\u6d4f\u89c8\u5668\u4e2d\u5b8c\u6210\uff0c\u6216\u5148\u5728\u6b64"
        "\u53d6\u6d88\u3002",
        "error.insufficient_scope": "\u6b64\u6b21\u767b\u5f55\u672a\u6388\u6743\u8bfb\u53d6\u6210\u7ee9\u3002"
        "\u8bf7\u9000\u51fa\u767b\u5f55\uff0c\u91cd\u65b0\u767b\u5f55\u5e76\u5141\u8bb8\u8bbf\u95ee\u6210\u7ee9\u3002",
        "error.upstream_error": "CampusID \u8fd4\u56de\u4e86\u9519\u8bef\u3002\u8bf7\u7a0d\u540e\u91cd\u8bd5\uff1b"
        "\u5982\u679c\u95ee\u9898\u6301\u7eed\uff0c\u8bf7\u8054\u7cfb IT \u670d\u52a1\u53f0\u3002",
        "error.unexpected": "\u51fa\u73b0\u95ee\u9898\uff08{code}\uff09\u3002\u8bf7\u91cd\u8bd5\uff1b"
        "\u5982\u679c\u95ee\u9898\u6301\u7eed\uff0c\u8bf7\u8054\u7cfb IT \u670d\u52a1\u53f0\u3002",
    },
}

LANGUAGES = tuple(_TEXT)


def language_for(locale_name: str) -> str:
    """``zh_CN`` for Simplified Chinese locales (zh_CN, zh-Hans, zh_SG, plain zh), else ``en``."""
    name = locale_name.split(".", 1)[0].split("@", 1)[0].replace("-", "_").lower()
    if not name.startswith("zh"):
        return EN
    traditional = ("zh_tw", "zh_hk", "zh_mo", "zh_hant")
    return EN if name.startswith(traditional) else ZH_CN


def choose_language(system_locale: str, environ: Mapping[str, str] | None = None) -> str:
    """LC_ALL, then LC_MESSAGES, then LANG override ``system_locale`` (e.g. ``QLocale.system().name()``)."""
    env = os.environ if environ is None else environ
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(var, "")
        if value and value not in ("C", "POSIX") and not value.startswith(("C.", "POSIX.")):
            return language_for(value)
    return language_for(system_locale)


class Texts:
    """``texts("grades.last_sync", when=...)``: the text for one key in the chosen language."""

    def __init__(self, language: str = EN) -> None:
        self.language = language if language in _TEXT else EN
        self._table = _TEXT[self.language]

    def __call__(self, key: str, /, **values: object) -> str:
        text = self._table.get(key) or _TEXT[EN][key]
        return text.format(**values) if values else text


def catalogue(language: str) -> Mapping[str, str]:
    return _TEXT[language]
