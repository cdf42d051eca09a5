from tests.desktop.harness import bridge, browser, core, idp, no_os_keyring  # noqa: F401
from tests.desktop.real_idp import device_bridge, served_idp  # noqa: F401
