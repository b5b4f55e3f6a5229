"""Worlds as Python packages: scaffold, pack and install (``envfactory init|pack|install``)."""

from envfactory.packaging.project import (
    PackagingError,
    build_wheel,
    install,
    pack,
    package_name,
    provided_worlds,
    write_project,
)

__all__ = [
    "PackagingError",
    "build_wheel",
    "install",
    "pack",
    "package_name",
    "provided_worlds",
    "write_project",
]
