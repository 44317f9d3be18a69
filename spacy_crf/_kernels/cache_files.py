"""Files and directories of the kernels' cache that no other user could have
written (issue #48).

numba's cache files are pickles, and unpickling runs code: a file another
user wrote, or could have changed, in a cache directory would run as
whoever loads it next. So a directory of the cache is used only where it
is owned by the user running the process and neither its group nor others
may write to it, and a file is read only where the same holds of it. What
is made here is made so: directories with mode 0o755 and files without group
or other write permission, whatever the umask (a umask of 002, usual where
each user has a group of their own, would give group write permission).

A cache shared between users is therefore not supported: point each user
at a directory of their own. Where the system has no owners and modes to
check (Windows), nothing is refused.
"""

import os
import stat
from pathlib import Path
from typing import Iterator, Optional

#: the permission bits that let users other than the owner write
OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
#: the mode directories of the cache are made with (before the umask)
DIRECTORY_MODE = 0o755


class UnsafeCacheFile(OSError):
    """A file or directory of the cache that another user wrote or could change."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path} {why}")
        self.path = path
        self.why = why


def unsafe(status: os.stat_result) -> Optional[str]:
    """Why a file or directory with this ``os.stat`` result may hold what
    another user wrote (as words that follow its path), or None where it is
    this process's user's and writable by them alone (root, who can write
    anything, aside)."""
    if not hasattr(os, "getuid"):
        return None  # (Windows: no owners and modes to check)
    if status.st_uid != os.getuid():
        return f"is owned by another user (uid {status.st_uid})"
    if status.st_mode & OTHERS_WRITE:
        return f"can be written by other users (mode {stat.S_IMODE(status.st_mode):o})"
    return None


def _chain(top: Path, path: Path) -> Iterator[Path]:
    """``top`` and every directory below it down to ``path``."""
    yield top
    for part in path.relative_to(top).parts:
        top = top / part
        yield top


def make_private_directories(top: Path, path: Path) -> None:
    """Make ``path`` and the directories from ``top`` down to it that are
    missing (``top``'s parents as usual: they are the user's, e.g. ``~/.cache``),
    and check each of them.

    Raises
    ------
    UnsafeCacheFile
        For a directory of the chain owned by another user or writable by
        others (they could put files in it, or swap the files it holds).
    OSError
        Where a directory cannot be made (a read-only file system, a file in
        the way).
    """
    top.parent.mkdir(parents=True, exist_ok=True)
    for directory in _chain(top, path):
        try:
            directory.mkdir(mode=DIRECTORY_MODE)
        except FileExistsError:
            pass  # (made before, or by another process just now: checked below)
        status = directory.stat()  # (a symlink: the directory it names)
        if not stat.S_ISDIR(status.st_mode):
            raise NotADirectoryError(f"{directory} is not a directory")
        why = unsafe(status)
        if why:
            raise UnsafeCacheFile(directory, why)


def read_private(path: Path) -> bytes:
    """The bytes of a cache file, checked on the very file read (not on a
    path another user could swap between the check and the read).

    Raises
    ------
    UnsafeCacheFile
        For a file owned by another user or writable by others, or not a
        regular file.
    OSError
        As ``open`` raises it (FileNotFoundError where there is none; a
        symbolic link, where the system can refuse to follow one).
    """
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(descriptor, "rb") as file:
        status = os.fstat(file.fileno())
        why = unsafe(status) or (None if stat.S_ISREG(status.st_mode) else "is not a file")
        if why:
            raise UnsafeCacheFile(Path(path), why)
        return file.read()


def restrict(descriptor: int) -> None:
    """Take group and other write permission off an open file."""
    mode = stat.S_IMODE(os.fstat(descriptor).st_mode)
    if mode & OTHERS_WRITE and hasattr(os, "fchmod"):
        os.fchmod(descriptor, mode & ~OTHERS_WRITE)


def restrict_tree(root: Path) -> None:
    """Take group and other write permission off ``root`` and everything
    under it (files unpacked from an archive keep the archive's modes, and
    directories made on the way the umask's)."""
    for path in (root, *root.rglob("*")):
        if path.is_symlink():
            continue
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & OTHERS_WRITE:
            path.chmod(mode & ~OTHERS_WRITE)
