"""Pure parts of the window: the GPA, the language choice, the failure wording."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pytest

from campusid.desktop.core import LoginFailed, NotLoggedIn, RateLimited, UpstreamUnavailable
from campusid.desktop.core.errors import LoginCancelled, LoginTimeout
from campusid.desktop.core.gpa import credit_weighted_gpa, format_credits, format_gpa
from campusid.desktop.gui.language import interface_language
from campusid.desktop.gui.messages import describe_error
from campusid.i18n import translator

EN, ZH_CN = "en", "zh_CN"


def test_gpa_is_credit_weighted_per_term_and_overall() -> None:
    grades = [
        {"term": "2025-autumn", "credits": 4, "grade_point": 4.0},
        {"term": "2025-autumn", "credits": 5, "grade_point": 3.7},
        {"term": "2025-autumn", "credits": 3, "grade_point": 3.0},
        {"term": "2026-spring", "credits": 4, "grade_point": 3.7},
        {"term": "2026-spring", "credits": 2, "grade_point": 4.0},
    ]
    summary = credit_weighted_gpa(grades)
    assert [(t.term, t.gpa) for t in summary.terms] == [
        ("2025-autumn", Decimal("3.625")),
        ("2026-spring", Decimal("3.8")),
    ]
    assert summary.credits == 18
    assert format_gpa(summary.terms[0].gpa) == "3.63"  # half up, not to even
    assert format_gpa(summary.overall) == "3.68"  # 66.3 / 18


def test_gpa_leaves_out_courses_without_credits_or_grade_point() -> None:
    summary = credit_weighted_gpa(
        [
            {"term": "t", "credits": 0, "grade_point": 1.0},
            {"term": "t", "credits": "x", "grade_point": 1.0},
            {"term": "t", "credits": 3, "grade_point": None},
            {"term": "t", "credits": 2, "grade_point": "3.5"},
            {"term": "u", "credits": True, "grade_point": 2.0},
        ]
    )
    assert [(t.term, t.gpa) for t in summary.terms] == [("t", Decimal("3.5")), ("u", None)]
    assert summary.overall == Decimal("3.5")
    assert credit_weighted_gpa([]).overall is None
    assert format_gpa(None) == "\u2013"
    assert format_credits(Decimal("12")) == "12" and format_credits(Decimal("2.5")) == "2.5"


@pytest.mark.parametrize(
    ("env", "system", "language"),
    [
        ({}, "zh_CN", ZH_CN),
        ({}, "en_US", EN),
        ({}, "zh_TW", EN),  # Traditional Chinese is not offered; English it is
        ({"LANG": "zh_CN.UTF-8"}, "en_US", ZH_CN),
        ({"LANG": "zh_CN.UTF-8", "LC_ALL": "en_US.UTF-8"}, "zh_CN", EN),
        ({"LC_ALL": "C"}, "zh_CN", ZH_CN),
        ({"LC_MESSAGES": "zh_SG"}, "en_US", ZH_CN),
        ({"LANG": "zh_Hans"}, "en_US", ZH_CN),
        ({"LANG": "de_DE.UTF-8"}, "zh_CN", EN),  # a language we have no catalogue for: English
    ],
)
def test_language_choice(env: dict[str, str], system: str, language: str) -> None:
    assert interface_language(system, env) == language


def test_the_window_reads_the_idp_catalogues() -> None:
    """One catalogue system: the window's words come from the same gettext catalogue as the pages."""
    zh = translator(ZH_CN)
    assert zh._("Sign in") == "登录" and zh._("Sync now") == "立即同步"
    assert (
        zh.ngettext("Grades updated: %(count)s course.", "Grades updated: %(count)s courses.", 5) % {"count": 5}
        == "成绩已更新：共 5 门课程。"
    )
    assert (
        translator(EN).ngettext("Grades updated: %(count)s course.", "Grades updated: %(count)s courses.", 1)
        % {"count": 1}
        == "Grades updated: 1 course."
    )


def test_failures_in_plain_words() -> None:
    t = translator(EN)
    noon = datetime(2026, 5, 1, 12, 0).astimezone()
    assert describe_error(RateLimited("x", retry_after=90), t, now=noon) == (
        "Too many sign-in attempts. Please wait and try again after 12:01 (in about 2 minutes)."
    )
    assert describe_error(RateLimited("x"), t).startswith("Too many sign-in attempts. Please wait a few minutes")
    assert describe_error(UpstreamUnavailable("x"), t).startswith("CampusID cannot be reached right now.")
    assert describe_error(LoginCancelled("x"), t).startswith("Sign-in cancelled.")
    assert describe_error(LoginTimeout("x"), t).startswith("The sign-in was not finished in the browser in time.")
    assert describe_error(NotLoggedIn("x"), t).startswith("Your session has expired.")
    assert describe_error(LoginFailed("the code exchange failed (invalid_grant)"), t) == (
        "CampusID did not accept the sign-in. Select \u201cSign in\u201d to start again."
    )
    assert describe_error(ValueError("boom"), t).startswith("Something went wrong (ValueError).")
    assert describe_error(UpstreamUnavailable("x"), translator(ZH_CN)).startswith("暂时无法连接统一身份认证")
    assert describe_error(RateLimited("x", retry_after=60), translator(ZH_CN), now=noon) == (
        "登录尝试过于频繁。请在 12:01 之后重试（约 1 分钟后）。"
    )
