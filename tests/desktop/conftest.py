from .harness import bridge, browser, core, idp, no_os_keyring, shared_bridge  # noqa: F401
from .real_idp import device_bridge, served_idp  # noqa: F401
