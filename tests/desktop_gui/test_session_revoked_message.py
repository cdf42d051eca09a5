"""The window's words when campusid ended the app's sign-in (its refresh token refused): in
English and Simplified Chinese, distinct from an expired session."""

from campusid.desktop.core.errors import RefreshRejected, SessionRevoked
from campusid.desktop.gui.messages import describe_error
from campusid.i18n import translator


def test_a_revoked_session_is_explained_in_both_languages():
    en, zh = translator("en"), translator("zh_CN")
    assert describe_error(SessionRevoked("x"), en).startswith("You were signed out: campusid ended this sign-in")
    assert describe_error(SessionRevoked("x"), zh).startswith("您已退出登录：统一身份认证结束了此次登录")
    assert describe_error(RefreshRejected("x"), en) != describe_error(SessionRevoked("x"), en)
