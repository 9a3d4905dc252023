"""File trees a program controls, touched by the host without following it anywhere.

The rule for every host-side operation on a workspace, an episode's folder, a container tree or the
output of model-written code: a path is walked component by component from an open directory file
descriptor, each component opened with O_NOFOLLOW (a symbolic link anywhere on the path is an
error, never a detour), files with O_NONBLOCK (a FIFO does not park the thread) and then checked
with fstat on the descriptor itself (only a regular file is read; pipes, sockets and devices are
refused). The check and the use are the same open descriptor, so a program that swaps a folder
for a link between them (renameat2 RENAME_EXCHANGE from a thread, in a loop) gains nothing.

Walks are iterative (no recursion limit), hold one descriptor per level and stop at `max_depth`
and `max_entries`; `remove_tree` holds one descriptor whatever the depth (it climbs back through
".." and checks it arrived where it came from), so a 10,000-deep chain is removed like any other.
Sizes count allocated blocks where disk is the question (`disk_usage`) and the logical size where
bytes are read (`read_file`, `write_tar`): a sparse file is refused before it is read.

Standard library only: the sandboxed tool host and task child import this module too.
"""

from __future__ import annotations

import errno
import os
import posixpath
import secrets
import stat
import tarfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
O_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
#: a file whose logical size exceeds its allocated blocks by more than this is sparse (small files
#: may live inline in their inode with no blocks at all)
SPARSE_SLACK = 64 * 1024
DEFAULT_MAX_DEPTH = 64
DEFAULT_MAX_ENTRIES = 100_000


class PathRefused(OSError):
    """A path that leaves its root, passes through a link, or names something that is not a regular
    file (or folder). `str()` is a sentence a model can act on."""


def parts(relpath: str) -> list[str]:
    """The components of `relpath` below a root ("" and "." are the root itself). An absolute path,
    "..", or a NUL is refused: nothing here ever resolves a path against anything but its root."""
    if not isinstance(relpath, str):
        raise PathRefused(f"a path must be a string, not {type(relpath).__name__}")
    if "\x00" in relpath:
        raise PathRefused("a path cannot contain a NUL character")
    if relpath.startswith("/"):
        raise PathRefused(f"path {relpath!r} is outside the workspace (paths are relative to it)")
    out = [p for p in relpath.split("/") if p not in ("", ".")]
    if ".." in out:
        raise PathRefused(f"path {relpath!r} is outside the workspace ('..' is not allowed)")
    return out


#: a root: a host path (its own components are the host's), or the descriptor of a folder the host
#: holds open (envs/runtime/sandbox.HeldFolders: the folder that was checked, wherever its path points now)
Root = str | Path | int


def open_root(root: Root) -> int:
    """A descriptor of the root folder itself, of its own (a held descriptor is reopened: walks in two
    threads must not share one directory offset)."""
    if isinstance(root, int):
        return os.open(".", O_DIR, dir_fd=root)
    try:
        return os.open(root, O_DIR)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a link, or not a folder: said as such
            raise _refused(exc, str(root)) from None
        raise


def _lmode(dir_fd: int, name: str) -> int | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        return None


def _refused(exc: OSError, shown: str, mode: int | None = None) -> PathRefused:
    if mode is not None and stat.S_ISLNK(mode) or exc.errno in (errno.ELOOP, errno.EMLINK):
        return PathRefused(f"{shown!r} is a symbolic link: links are never followed")
    if exc.errno == errno.ENOTDIR:
        return PathRefused(f"{shown!r} is not a folder")
    if exc.errno == errno.ENOENT:
        return PathRefused(f"{shown!r} does not exist")
    if exc.errno == errno.ENXIO:
        return PathRefused(f"{shown!r} is not a regular file")
    return PathRefused(f"{shown!r}: {exc.strerror or exc}")


def open_dir(root_fd: int, names: list[str], *, create: bool = False) -> int:
    """The folder `names` below `root_fd`, each step O_NOFOLLOW (created when `create`)."""
    fd = os.dup(root_fd)
    try:
        for i, name in enumerate(names):
            if create:
                try:
                    os.mkdir(name, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                nxt = os.open(name, O_DIR, dir_fd=fd)
            except OSError as exc:
                raise _refused(exc, "/".join(names[: i + 1]), _lmode(fd, name)) from None
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_file(root_fd: int, relpath: str) -> tuple[int, os.stat_result]:
    """A regular file below `root_fd`, opened for reading without following links or blocking."""
    names = parts(relpath)
    if not names:
        raise PathRefused(f"{relpath!r} is a folder, not a file")
    parent = open_dir(root_fd, names[:-1])
    try:
        try:
            fd = os.open(names[-1], O_READ, dir_fd=parent)
        except OSError as exc:
            raise _refused(exc, relpath) from None
    finally:
        os.close(parent)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise PathRefused(f"{relpath!r} is {describe_mode(st.st_mode)}, not a regular file")
    return fd, st


def _open_leaf(path: Path) -> tuple[int, os.stat_result]:
    """The regular file at the host path `path`, its last component not followed (its folders are the host's)."""
    parent = open_root(path.parent)
    try:
        return open_file(parent, path.name)
    finally:
        os.close(parent)


def describe_mode(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a pipe (FIFO)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "a special file"


def is_sparse(st: os.stat_result) -> bool:
    return st.st_size > st.st_blocks * 512 + SPARSE_SLACK


def read_file(root: str | Path, relpath: str, max_bytes: int) -> bytes:
    """The bytes of a regular file below `root`; one larger than `max_bytes` is refused unread."""
    root_fd = open_root(root)
    try:
        fd, st = open_file(root_fd, relpath)
    finally:
        os.close(root_fd)
    with os.fdopen(fd, "rb") as f:
        if st.st_size > max_bytes:
            raise PathRefused(f"{relpath!r} is {st.st_size:,} bytes; files up to {max_bytes:,} bytes are read")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise PathRefused(f"{relpath!r} grew past {max_bytes:,} bytes while it was read")
    return data


def read_tail(path: str | Path, max_bytes: int) -> bytes:
    """The last `max_bytes` of the regular file at host path `path` (a log a sandboxed process wrote):
    its last component not followed, never a pipe or device, at most `max_bytes` read."""
    fd, st = _open_leaf(Path(path))
    with os.fdopen(fd, "rb") as f:
        f.seek(max(0, st.st_size - max_bytes))
        return f.read(max_bytes)


def server_name_problem(name: Any) -> str | None:
    """Why `name` cannot name a tool server, or None. A name becomes a file name (the server's log,
    `upstream-NAME.log`, in a host folder), and a Harbor task or a benchmark's config chooses it: so it
    is one path component, printable, not hidden and short."""
    if not isinstance(name, str) or not name:
        return "a server needs a non-empty name"
    if "/" in name or "\\" in name or name.startswith(".") or not name.isprintable() or len(name) > 128:
        return (f"{name[:200]!r} is not a server name (one path component: no '/' or '\\', not starting with "
                "'.', printable, at most 128 characters)")
    return None


def open_log(path: str | Path, *, append: bool = True) -> BinaryIO:
    """A log file the host writes at `path` (a sandboxed process's output), for writing: created 0600
    or appended to (else truncated), its last component never followed (a link planted there is
    refused, never written through) and only a regular file opened (never a FIFO or a device)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    flags |= os.O_APPEND if append else os.O_TRUNC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise _refused(exc, str(path)) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise PathRefused(f"{str(path)!r} is {describe_mode(st.st_mode)}, not a regular file: no log is written there")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "ab" if append else "wb")


def refuse_links(root: Root, what: str = "the folder", *, max_entries: int = DEFAULT_MAX_ENTRIES,
                 max_depth: int = DEFAULT_MAX_DEPTH) -> None:
    """PathRefused when `root` is, or holds, anything but folders and regular files (a link anywhere,
    a pipe, a device): a folder read as third-party input (a task's) is then never followed anywhere."""
    for entry in walk(root, max_entries=max_entries, max_depth=max_depth):
        if not (entry.is_dir or entry.is_file):
            raise PathRefused(f"{entry.path} in {what} is {describe_mode(entry.st.st_mode)}; only folders and "
                              "regular files are read")


def check_links_inside(root: str | Path, what: str = "the folder", *, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
    """PathRefused when a symbolic link under `root` leaves it (an absolute target, or a relative one
    that climbs above `root`), or when `root` holds anything but folders, files and links. Checked
    as text: nothing is resolved, so nothing outside `root` is touched."""
    for entry in walk(root, max_entries=max_entries):
        if not entry.is_link:
            if not (entry.is_dir or entry.is_file):
                raise PathRefused(f"{entry.path}: {describe_mode(entry.st.st_mode)} in {what}; only folders, "
                                  "files and links are copied")
            continue
        target = entry.readlink()
        inside = posixpath.normpath(posixpath.join(posixpath.dirname(entry.path), target))
        if target.startswith("/") or inside == ".." or inside.startswith("../"):
            raise PathRefused(f"{entry.path} in {what} links outside it: the symbolic link to {target!r} leaves {what}")


def write_file(root: str | Path, relpath: str, data: bytes, *, make_parents: bool = True, mode: int = 0o644) -> int:
    """Create or replace the regular file `relpath` below `root` with `data` (returns its size).

    The bytes go to a fresh name created with O_EXCL in the same folder, then take the target's
    name with rename(2), which replaces a link or file in place and never writes through one;
    a folder of that name is refused."""
    names = parts(relpath)
    if not names:
        raise PathRefused(f"{relpath!r} is a folder, not a file")
    root_fd = open_root(root)
    try:
        parent = open_dir(root_fd, names[:-1], create=make_parents)
    finally:
        os.close(root_fd)
    try:
        _write_in(parent, names[-1], data, mode, relpath)
    finally:
        os.close(parent)
    return len(data)


class Entry:
    """One entry met by `walk`: its path below the root, its lstat, and (for a regular file) how to
    open it from the walk's own descriptor."""

    __slots__ = ("path", "st", "_dir_fd", "_name")

    def __init__(self, path: str, st: os.stat_result, dir_fd: int, name: str):
        self.path, self.st, self._dir_fd, self._name = path, st, dir_fd, name

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.st.st_mode)

    @property
    def is_file(self) -> bool:
        return stat.S_ISREG(self.st.st_mode)

    @property
    def is_link(self) -> bool:
        return stat.S_ISLNK(self.st.st_mode)

    def open(self) -> BinaryIO:
        """The regular file this entry was, opened from the folder the walk holds (refused if it is no
        longer the same regular file)."""
        try:
            fd = os.open(self._name, O_READ, dir_fd=self._dir_fd)
        except OSError as exc:
            raise _refused(exc, self.path) from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (self.st.st_dev, self.st.st_ino):
            os.close(fd)
            raise PathRefused(f"{self.path!r} changed while it was read")
        return os.fdopen(fd, "rb")

    def readlink(self) -> str:
        return os.readlink(self._name, dir_fd=self._dir_fd)


class TreeTooLarge(PathRefused):
    """A walk met more entries, or deeper folders, than it may."""


def walk(root: Root, relpath: str = "", *, max_depth: int = DEFAULT_MAX_DEPTH,
         max_entries: int = DEFAULT_MAX_ENTRIES, skip_changed: bool = False) -> Iterator[Entry]:
    """Every entry below `root/relpath` (not the folder itself), folders before their contents,
    names in sorted order, never following a link. Raises TreeTooLarge past the limits. A sub-folder
    that is no longer a folder when it is opened (a running program swapped it for a link) is a
    PathRefused, or with `skip_changed` not entered (a measurement of a live tree goes on)."""
    root_fd = open_root(root)
    try:
        top = open_dir(root_fd, parts(relpath))
    finally:
        os.close(root_fd)
    prefix = "/".join(parts(relpath))
    # each level: (its fd, its path, the sub-folders still to visit, in reverse order)
    stack: list[tuple[int, str, list[str]]] = [(top, prefix, [])]
    seen = 0
    try:
        pending = _scan(stack[0])
        stack[0] = (top, prefix, pending)
        while stack:
            fd, path, subdirs = stack[-1]
            if not subdirs:
                os.close(fd)
                stack.pop()
                continue
            name = subdirs.pop()
            if name is None:
                continue
            child_path = f"{path}/{name}" if path else name
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            seen += 1
            if seen > max_entries:
                raise TreeTooLarge(f"more than {max_entries:,} entries under {relpath or 'the root'!r}")
            entry = Entry(child_path, st, fd, name)
            yield entry
            if entry.is_dir:
                if len(stack) >= max_depth:
                    raise TreeTooLarge(f"folders nested deeper than {max_depth} levels ({child_path[:200]!r}...)")
                try:
                    sub = os.open(name, O_DIR, dir_fd=fd)
                except OSError as exc:
                    if skip_changed and exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                        continue
                    raise _refused(exc, child_path) from None
                stack.append((sub, child_path, _scan((sub, child_path, []))))
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def _scan(level: tuple[int, str, list[str]]) -> list[str]:
    """The names of one folder, sorted, reversed (the walk pops from the end)."""
    fd = level[0]
    with os.scandir(fd) as it:
        names = sorted(e.name for e in it)
    return names[::-1]


def list_files(root: str | Path, relpath: str = "", *, max_entries: int = 20_000,
               max_depth: int = DEFAULT_MAX_DEPTH) -> list[tuple[str, int]]:
    """(path below `relpath`'s root, size) of every regular file under `root/relpath`, in the order
    `sorted(Path.rglob("*"))` gives (component by component). Links and special files are not listed."""
    rows = [(e.path, e.st.st_size) for e in walk(root, relpath, max_depth=max_depth, max_entries=max_entries)
            if e.is_file]
    rows.sort(key=lambda r: r[0].split("/"))
    return rows


class Usage:
    """What a tree costs on disk: allocated bytes and entries (and the deepest level seen)."""

    def __init__(self) -> None:
        self.bytes = self.entries = self.depth = 0
        self.over: str | None = None  # why a limit was passed, when one was


def disk_usage(roots: list[Root], *, max_bytes: int, max_entries: int, max_depth: int) -> Usage:
    """Allocated bytes (st_blocks) and entries under `roots`, stopping at the first limit passed
    (`Usage.over` says which). A missing root counts nothing."""
    usage = Usage()
    for root in roots:
        try:
            for entry in walk(root, max_depth=max_depth, max_entries=max_entries + 1, skip_changed=True):
                usage.entries += 1
                usage.bytes += entry.st.st_blocks * 512
                usage.depth = max(usage.depth, entry.path.count("/") + 1)
                if usage.bytes > max_bytes:
                    usage.over = f"more than {max_bytes / 2**20:,.0f} MiB"
                elif usage.entries > max_entries:
                    usage.over = f"more than {max_entries:,} files and folders"
                if usage.over:
                    return usage
        except TreeTooLarge as exc:
            usage.over = f"folders nested deeper than {max_depth} levels" if "deeper" in str(exc) else str(exc)
            return usage
        except FileNotFoundError:
            continue
    return usage


def remove_tree(path: str | Path) -> None:
    """Remove `path` and everything under it without following links, whatever the depth.

    One descriptor is open at a time: the walk goes down by name and back up through "..", checking
    that ".." is the folder it came from (device and inode); a tree moved under it stops the removal
    with an error instead of deleting elsewhere. Folders without permissions are opened up first
    (their owner, or root, may). A missing path is not an error."""
    path = Path(path)
    try:
        parent = os.open(path.parent, O_DIR)
    except FileNotFoundError:
        return
    try:
        _remove_entry(parent, path.name)
    finally:
        os.close(parent)


def clear_folder(path: Root) -> None:
    """Remove everything inside the folder `path`, keeping the folder (its inode may be bound)."""
    fd = open_root(path)
    try:
        for name in os.listdir(fd):
            _remove_entry(fd, name)
    finally:
        os.close(fd)


def _remove_entry(parent_fd: int, name: str) -> None:
    try:
        st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=parent_fd)
        return
    fd = _open_for_removal(parent_fd, name)
    # each level: (its name in its parent, its (dev, ino), its sub-folders still to remove)
    stack: list[tuple[str, tuple[int, int], list[str]]] = []
    try:
        while True:
            ident = os.fstat(fd)
            ident_t = (ident.st_dev, ident.st_ino)
            if not stack or stack[-1][1] != ident_t:
                stack.append((name, ident_t, _clear_files(fd)))
            level = stack[-1]
            if level[2]:
                name = level[2].pop()
                try:
                    child = _open_for_removal(fd, name)
                except FileNotFoundError:
                    continue
                os.close(fd)
                fd = child
                continue
            # this folder is empty: climb to its parent and remove it there
            done = stack.pop()
            if not stack:
                os.close(fd)
                fd = -1
                os.rmdir(done[0], dir_fd=parent_fd)
                return
            up = os.open("..", O_DIR, dir_fd=fd)
            st_up = os.fstat(up)
            os.close(fd)
            fd = up
            if (st_up.st_dev, st_up.st_ino) != stack[-1][1]:
                raise OSError(errno.ESTALE, "a folder was moved during its removal; stopped")
            os.rmdir(done[0], dir_fd=fd)
    finally:
        if fd >= 0:
            os.close(fd)


def _open_for_removal(parent_fd: int, name: str) -> int:
    try:
        return os.open(name, O_DIR, dir_fd=parent_fd)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=parent_fd)
        return os.open(name, O_DIR, dir_fd=parent_fd)


def _clear_files(fd: int) -> list[str]:
    """Unlink every non-folder in the folder `fd`; its sub-folders' names (to remove next)."""
    subdirs = []
    try:
        names = os.listdir(fd)
    except PermissionError:
        os.fchmod(fd, 0o700)
        names = os.listdir(fd)
    for name in names:
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(st.st_mode):
            subdirs.append(name)
            continue
        try:
            os.unlink(name, dir_fd=fd)
        except PermissionError:
            os.fchmod(fd, 0o700)
            os.unlink(name, dir_fd=fd)
    return subdirs


def copy_tree(src: str | Path, dst_root: str | Path, dst_rel: str = "", *, links: bool = False, max_bytes: int,
              max_entries: int = DEFAULT_MAX_ENTRIES, max_depth: int = DEFAULT_MAX_DEPTH) -> int:
    """Copy the folders and regular files of `src` into `dst_root/dst_rel` (created, merged), never
    following a link on either side: a link on the way into `dst_root` is refused like one in
    `src`. Links in `src` are refused, or with `links` re-created as links (their text copied, never
    resolved); sparse and special files are refused; `max_bytes` caps the total. Returns the bytes."""
    total = 0
    base = parts(dst_rel)
    root_fd = open_root(dst_root)
    try:
        dst_fd = open_dir(root_fd, base, create=True)
    finally:
        os.close(root_fd)
    try:
        for entry in walk(src, max_depth=max_depth, max_entries=max_entries):
            names = entry.path.split("/")
            if entry.is_dir:
                os.close(open_dir(dst_fd, names, create=True))
            elif entry.is_file:
                total += _check_size(entry.path, entry.st, total, max_bytes)
                with entry.open() as f:
                    data = f.read(entry.st.st_size + 1)
                if len(data) != entry.st.st_size:
                    raise PathRefused(f"{entry.path!r} changed size while it was copied")
                parent = open_dir(dst_fd, names[:-1])
                try:
                    _write_in(parent, names[-1], data, entry.st.st_mode & 0o777, entry.path)
                finally:
                    os.close(parent)
            elif entry.is_link and links:
                parent = open_dir(dst_fd, names[:-1])
                try:
                    try:
                        os.unlink(names[-1], dir_fd=parent)
                    except FileNotFoundError:
                        pass
                    os.symlink(entry.readlink(), names[-1], dir_fd=parent)
                finally:
                    os.close(parent)
            else:
                raise PathRefused(f"{entry.path!r} is {describe_mode(entry.st.st_mode)}; only folders and "
                                  f"regular files are copied")
    finally:
        os.close(dst_fd)
    return total


def copy_file(src: str | Path, dst_root: str | Path, dst_rel: str, *, max_bytes: int) -> int:
    """Copy the regular file `src` (its last component not followed) to `dst_root/dst_rel`, parent
    folders created, nothing followed on the way in (see `copy_tree`). Returns its size."""
    src = Path(src)
    fd, st = _open_leaf(src)
    with os.fdopen(fd, "rb") as f:
        _check_size(src.name, st, 0, max_bytes)
        data = f.read(st.st_size + 1)
    return write_file(dst_root, dst_rel, data, mode=st.st_mode & 0o777)


def make_dirs(root: str | Path, relpath: str) -> None:
    """`root/relpath` and the folders on the way, nothing followed (a link on the way is refused)."""
    root_fd = open_root(root)
    try:
        os.close(open_dir(root_fd, parts(relpath), create=True))
    finally:
        os.close(root_fd)


def _check_size(name: str, st: os.stat_result, total: int, max_bytes: int) -> int:
    if is_sparse(st):
        raise PathRefused(f"{name!r} is a sparse file ({st.st_size:,} bytes, {st.st_blocks * 512:,} allocated)")
    if total + st.st_size > max_bytes:
        raise PathRefused(f"more than {max_bytes:,} bytes of files")
    return st.st_size


def _write_in(parent: int, name: str, data: bytes, mode: int, shown: str) -> None:
    """`data` as the regular file `name` in the folder `parent`: a fresh O_EXCL name, then rename(2)."""
    tmp = f".{name[:200]}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode | 0o600, dir_fd=parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        try:
            os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except OSError as exc:
            raise PathRefused(f"{shown!r} cannot be written: a folder has that name"
                              if exc.errno in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST)
                              else f"{shown!r} cannot be written: {exc.strerror}") from None
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=parent)
        except OSError:
            pass
        raise


def write_tar(out: BinaryIO, members: Sequence[tuple[str | Path, str]], *, max_bytes: int, links: bool = False,
              max_entries: int = DEFAULT_MAX_ENTRIES, max_depth: int = DEFAULT_MAX_DEPTH) -> int:
    """Stream folders and regular files into an uncompressed tar on `out`: each (host path, name in
    the archive) is a regular file or a folder taken whole. Nothing is followed; sparse files,
    special files and (unless `links`, which stores them as links) symbolic links are refused;
    more than `max_bytes` of file content in all is refused. Returns the content bytes written."""
    total = 0
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for host, arcname in members:
            host = Path(host)
            st = os.stat(host, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                tar.addfile(_info(arcname, st))
                for entry in walk(host, max_depth=max_depth, max_entries=max_entries):
                    name = f"{arcname}/{entry.path}"
                    if entry.is_dir:
                        tar.addfile(_info(name, entry.st))
                    elif entry.is_file:
                        total = _add_file(tar, name, entry.st, entry.open, total, max_bytes)
                    elif entry.is_link and links:
                        info = _info(name, entry.st)
                        info.type, info.linkname = tarfile.SYMTYPE, entry.readlink()
                        tar.addfile(info)
                    else:
                        raise PathRefused(f"{entry.path!r} is {describe_mode(entry.st.st_mode)}; the final state "
                                          f"may hold only folders and regular files")
            else:
                fd, st = _open_leaf(host)
                with os.fdopen(fd, "rb") as f:
                    total = _add_file(tar, arcname, st, lambda f=f: _Borrowed(f), total, max_bytes)
    return total


class _Borrowed:
    """A file object for `with` that the caller closes."""

    def __init__(self, f: BinaryIO):
        self.f = f

    def __enter__(self) -> BinaryIO:
        return self.f

    def __exit__(self, *exc: object) -> None:
        pass


def _info(name: str, st: os.stat_result) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mode = st.st_mode & 0o777
    info.mtime = int(st.st_mtime)
    info.uid = info.gid = 0
    if stat.S_ISDIR(st.st_mode):
        info.type = tarfile.DIRTYPE
    return info


def _add_file(tar: tarfile.TarFile, name: str, st: os.stat_result, opener, total: int, max_bytes: int) -> int:
    total += _check_size(name, st, total, max_bytes)
    info = _info(name, st)
    info.size = st.st_size
    with opener() as f:
        tar.addfile(info, f)
    return total
