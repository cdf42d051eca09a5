"""The window's words when campusid ended the app's sign-in (its refresh token refused): in
English and Simplified Chinese, distinct from an expired session."""

from campusid.desktop.core.errors import RefreshRejected, SessionRevoked
from campusid.desktop.gui.i18n import EN, ZH_CN, Texts
from campusid.desktop.gui.messages import describe_error


def test_a_revoked_session_is_explained_in_both_languages():
    en, zh = Texts(EN), Texts(ZH_CN)
    assert describe_error(SessionRevoked("x"), en).startswith("You were signed out: campusid ended this sign-in")
    assert describe_error(SessionRevoked("x"), zh).startswith("您已退出：campusid 结束了此次登录")
    assert describe_error(RefreshRejected("x"), en) != describe_error(SessionRevoked("x"), en)
