"""phi's memory over HTTP (FastAPI) and the `/memory` page that draws it.

`create_app(open_memory, token=...)` is served by `phi web` (and mounted by `phi run`).
"""

from phi.hosts import LOOPBACK_HOSTS, is_loopback
from phi.web.app import STATIC, create_app

__all__ = ["LOOPBACK_HOSTS", "STATIC", "create_app", "is_loopback"]
