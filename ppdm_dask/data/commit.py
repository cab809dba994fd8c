"""Crash- and race-safe commits of files and folders, on the local file system and on any fsspec URL.

Every output of ppdm (a dataset folder, a release, a single file) is written under a **hidden
temporary sibling** ``.NAME.__ppdm_tmp-<host>-<pid>-<random>``: the leading dot makes every
reader (ppdm's, dask's, pyarrow's, Spark's) ignore it, and the name tells which writer owns it.
The finished temporary is then committed in **one atomic step** (docs/data.md#commits):

* a new output: a rename that **fails if the destination exists** (Linux ``renameat2`` with
  ``RENAME_NOREPLACE``; elsewhere under an exclusive lock file), so of two jobs racing for one
  path exactly one commits and the other stops with "already exists";
* ``--overwrite``: the new folder and the old one **swap places** atomically (``renameat2`` with
  ``RENAME_EXCHANGE``), and the old one, now under the temporary name, is removed only after the
  swap; where the exchange is missing, the old one is renamed aside first and a reader or writer
  that finds the destination missing puts it back. At every instant the destination holds the
  old output or the new one, complete;
* ``--overwrite`` never replaces a folder that is not a ppdm dataset (a file in it that its
  manifest does not list), nor a folder by a file;
* temporaries of writers that died (same host, process gone) are removed by the next writer of
  the same destination.

Object stores have no rename: a commit copies the parts, then the manifest last, under a lock
object created by a conditional put, so two writers never commit to one prefix at once; an
``--overwrite`` killed during the copy is not protected there (see docs/data.md#commits).

:func:`_step` is the fault-injection point between the steps: a no-op that tests replace with a
function that kills the process.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import json
import os
import posixpath
import secrets
import socket
import time
from collections.abc import Iterator
from typing import Any

from ..errors import DataFormatError, DatasetExistsError, OutputNotWritableError

__all__ = [
    "temp_sibling",
    "is_local",
    "commit_path",
    "check_replaceable",
    "clean_stale",
    "restore_interrupted",
    "TMP_MARK",
    "OLD_MARK",
    "exclusive",
]

TMP_MARK = ".__ppdm_tmp-"
OLD_MARK = ".__ppdm_old-"
#: files a ppdm folder may hold besides those its manifest lists (earlier versions added the report
#: into the folder after the commit; it is now written beside the folder)
_PPDM_EXTRAS = frozenset({"_SUCCESS", "_report.html", "_report.json", "_report-external.html", "_report-external.json"})
_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_LOCK_WAIT = 60.0


def _step(name: str) -> None:
    """Fault-injection point between two commit steps (a no-op; tests kill the process here)."""


def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def is_local(fs: Any) -> bool:
    """Whether ``fs`` is the local file system (renames are atomic there)."""
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
    return bool({"file", "local"} & set(protocols))


def temp_sibling(path: str, kind: str = "tmp") -> str:
    """A hidden sibling name of ``path`` owned by this process: ``.NAME.__ppdm_<kind>-<host>-<pid>-<random>``."""
    parent, name = posixpath.split(path.rstrip("/"))
    return posixpath.join(parent, f".{name}.__ppdm_{kind}-{_host_tag()}-{os.getpid()}-{secrets.token_hex(4)}")


def _owner_dead(basename: str) -> bool:
    """Whether the writer named in a temporary's name is a dead process of this host (a writer on
    another host is never presumed dead: its job may still run)."""
    try:
        host, pid, _ = basename.rsplit("-", 3)[-3:]
        pid_i = int(pid)
    except ValueError:
        return False
    if host != _host_tag():
        return False
    if pid_i == os.getpid():
        return False
    try:
        os.kill(pid_i, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, owned by someone else
        return False
    return False


# ---------------------------------------------------------------------- local renames
def _renameat2(src: str, dst: str, flags: int) -> bool:
    """``renameat2(src, dst, flags)``; False when the call or the flag is not available here."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    rc = fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), ctypes.c_uint(flags))
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), dst)


@contextlib.contextmanager
def _local_lock(path: str) -> Iterator[None]:
    """An exclusive lock file beside ``path`` (for systems without ``renameat2``); a lock left by
    a dead process is taken over."""
    parent, name = posixpath.split(path.rstrip("/"))
    lock = posixpath.join(parent, f".{name}.__ppdm_lock")
    deadline = time.monotonic() + _LOCK_WAIT
    while True:
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            break
        except FileExistsError:
            try:
                with open(lock) as fh:
                    owner = fh.read().strip()
            except OSError:
                owner = ""
            if owner and _owner_dead(f"x-{owner}-0"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(lock)
                continue
            if time.monotonic() > deadline:
                raise DatasetExistsError(f"{path} is being committed by another job (lock {lock})") from None
            time.sleep(0.05)
    try:
        os.write(fd, f"{_host_tag()}-{os.getpid()}".encode())
        os.close(fd)
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)


def _rename_no_replace(src: str, dst: str, url: str) -> None:
    exists = DatasetExistsError(
        f"{url} already exists (another job committed it while this one ran; nothing was replaced)",
        python="overwrite=True",
        parameter="overwrite",
    )
    try:
        if _renameat2(src, dst, _RENAME_NOREPLACE):
            return
    except FileExistsError:
        raise exists from None
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
            raise exists from None
        raise
    with _local_lock(dst):
        if os.path.lexists(dst):
            raise exists
        os.rename(src, dst)


def _replace_local(fs: Any, tmp: str, path: str, url: str, folder: bool) -> None:
    """Swap ``tmp`` in for the existing ``path``; the old output is removed after the swap."""
    if not folder:
        os.replace(tmp, path)  # atomic for files everywhere
        return
    try:
        swapped = _renameat2(tmp, path, _RENAME_EXCHANGE)
    except FileNotFoundError:  # the old one vanished meanwhile: a plain commit
        _rename_no_replace(tmp, path, url)
        return
    if swapped:
        _step("swapped")
        fs.rm(tmp, recursive=True)  # the old output, now under the temporary name
        return
    old = temp_sibling(path, "old")
    os.rename(path, old)
    _step("old-aside")
    _rename_no_replace(tmp, path, url)
    _step("committed")
    fs.rm(old, recursive=True)


# ---------------------------------------------------------------------- checks
def check_replaceable(fs: Any, path: str, url: str, *, folder: bool) -> None:
    """Refuse to replace ``path`` with ``--overwrite`` unless nothing but ppdm output is lost.

    A folder may be replaced when it is empty or a ppdm dataset holding only the files its
    ``_SUCCESS`` manifest lists (plus its report); a file only by a file.

    Raises
    ------
    DatasetExistsError
        Naming the foreign file, or saying why the folder is not a ppdm dataset.
    """
    if not fs.exists(path):
        return
    hint = {"cli": "remove it yourself or choose another output path"}
    if not fs.isdir(path):
        if folder:
            raise DatasetExistsError(
                f"{url} is a file, not a ppdm dataset folder; --overwrite replaces only ppdm datasets", **hint
            )
        return
    if not folder:
        raise DatasetExistsError(f"{url} is a folder; --overwrite never replaces a folder by a file", **hint)
    files = [posixpath.relpath(f, path) for f in fs.find(path)]
    if not files:
        return
    try:
        with fs.open(posixpath.join(path, "_SUCCESS"), "r") as fh:
            manifest = json.load(fh)
        if not (isinstance(manifest, dict) and str(manifest.get("format", "")).startswith("ppdm")):
            raise ValueError
    except (OSError, ValueError, UnicodeDecodeError):
        raise DatasetExistsError(
            f"{url} is not a ppdm dataset (no valid _SUCCESS manifest; it holds {sorted(files)[0]}); "
            "--overwrite replaces only ppdm datasets",
            **hint,
        ) from None
    listed = {str(e.get("file")) for key in ("partitions", "files") for e in manifest.get(key) or [] if isinstance(e, dict)}
    if manifest.get("vocabulary"):
        listed.add(str(manifest["vocabulary"]))
    foreign = sorted(f for f in files if f not in listed and f not in _PPDM_EXTRAS and "__ppdm_" not in f)
    if foreign:
        raise DatasetExistsError(
            f"{url} holds {foreign[0]}, which is not part of its ppdm dataset; --overwrite refuses to delete it", **hint
        )


# ---------------------------------------------------------------------- stale temporaries
def _siblings(fs: Any, path: str) -> list[str]:
    parent, name = posixpath.split(path.rstrip("/"))
    prefix = f".{name}.__ppdm_"
    try:
        entries = fs.ls(parent or ".", detail=False)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [e.rstrip("/") for e in entries if posixpath.basename(e.rstrip("/")).startswith(prefix)]


def restore_interrupted(fs: Any, path: str) -> bool:
    """Put back an old output that an interrupted ``--overwrite`` had renamed aside (systems
    without an atomic exchange) when the destination is missing; True if one was restored."""
    if not is_local(fs) or os.path.lexists(path):
        return False
    for sib in sorted(_siblings(fs, path)):
        base = posixpath.basename(sib)
        if OLD_MARK in base and _owner_dead(base):
            with contextlib.suppress(OSError, DatasetExistsError):
                _rename_no_replace(sib, path, path)
                return True
    return False


def clean_stale(fs: Any, path: str) -> list[str]:
    """Remove the temporaries of dead writers of ``path`` (restoring an old output first when
    the destination is missing); returns what was removed."""
    if not is_local(fs):
        return []
    restore_interrupted(fs, path)
    removed = []
    for sib in _siblings(fs, path):
        base = posixpath.basename(sib)
        if (TMP_MARK in base or OLD_MARK in base) and _owner_dead(base):
            with contextlib.suppress(FileNotFoundError):
                fs.rm(sib, recursive=True)
                removed.append(sib)
    return removed


# ---------------------------------------------------------------------- commit
def commit_path(fs: Any, tmp: str, path: str, url: str, *, overwrite: bool, folder: bool) -> None:
    """Commit the finished temporary ``tmp`` (a folder with its manifest inside, or a file) to
    ``path`` in one step (see the module docstring).

    Raises
    ------
    DatasetExistsError
        ``path`` appeared meanwhile and ``overwrite`` is false, or ``path`` is not replaceable.
    """
    _step("written")
    if overwrite:
        check_replaceable(fs, path, url, folder=folder)
    if is_local(fs):
        if overwrite and os.path.lexists(path):
            _replace_local(fs, tmp, path, url, folder)
        else:
            _rename_no_replace(tmp, path, url)
        _step("done")
        return
    _commit_remote(fs, tmp, path, url, overwrite=overwrite, folder=folder)


@contextlib.contextmanager
def _remote_lock(fs: Any, path: str, url: str) -> Iterator[None]:
    """A lock object beside ``path`` created by a conditional put (``If-None-Match: *``), so
    that one writer at a time commits to a prefix; stores without conditional puts get no lock
    (best effort, see docs/data.md#commits)."""
    parent, name = posixpath.split(path.rstrip("/"))
    lock = posixpath.join(parent, f".{name}.__ppdm_lock")
    owner = json.dumps({"host": _host_tag(), "pid": os.getpid(), "time": time.time()}).encode()
    deadline = time.monotonic() + _LOCK_WAIT
    held = False
    while not held:
        try:
            fs.pipe_file(lock, owner, mode="create")
            held = True
        except FileExistsError:
            if time.monotonic() > deadline:
                raise DatasetExistsError(
                    f"{url} is being committed by another job (lock object {lock}; remove it if no job is running)"
                ) from None
            time.sleep(0.2)
        except (TypeError, NotImplementedError, ValueError):  # no conditional put on this store
            break
    try:
        yield
    finally:
        if held:
            with contextlib.suppress(Exception):
                fs.rm(lock)


@contextlib.contextmanager
def exclusive(fs: Any, path: str, url: str) -> Iterator[None]:
    """Hold the lock of ``path`` (the one commits take): a lock file beside it on the local file
    system, a lock object created by a conditional put on object stores. Used by whatever must
    read, decide and write without another job between (the ledger's records of one input)."""
    if is_local(fs):
        with _local_lock(path):
            yield
    else:
        with _remote_lock(fs, path, url):
            yield


def _commit_remote(fs: Any, tmp: str, path: str, url: str, *, overwrite: bool, folder: bool) -> None:
    """Object stores: under a lock object, check the destination, copy the objects to their
    final keys, the manifest last, then drop the temporary prefix."""
    with _remote_lock(fs, path, url):
        if not overwrite and fs.exists(path):
            raise DatasetExistsError(
                f"{url} already exists (another job committed it while this one ran; nothing was replaced)",
                python="overwrite=True",
                parameter="overwrite",
            )
        if not folder:
            fs.mv(tmp, path)
            return
        files = sorted(f for f in fs.find(tmp) if not f.endswith("/"))
        manifest = [f for f in files if posixpath.basename(f) == "_SUCCESS"]
        if overwrite and fs.exists(path):
            with contextlib.suppress(FileNotFoundError):
                fs.rm(posixpath.join(path, "_SUCCESS"))  # the old dataset stops being readable first
            fs.rm(path, recursive=True)
        for f in [f for f in files if f not in manifest] + manifest:
            fs.copy(f, posixpath.join(path, posixpath.relpath(f, tmp)))
        fs.rm(tmp, recursive=True)


def make_temp_folder(fs: Any, tmp: str, url: str) -> None:
    """Create the temporary folder of an output; a location that cannot be written is one error
    naming the output, before any work."""
    try:
        fs.makedirs(tmp, exist_ok=True)
    except OSError as exc:
        raise OutputNotWritableError(
            f"cannot write {url}: {exc.strerror or exc}", cli="choose an output path in a writable folder"
        ) from None


def refuse_bad_destination(fs: Any, path: str, url: str) -> None:
    """The output's parent must be a folder (or creatable): a file in the way is named at once."""
    parent = posixpath.dirname(path)
    if parent and fs.exists(parent) and not fs.isdir(parent):
        raise DataFormatError(f"cannot write {url}: {parent} is a file, not a folder", cli="choose another output path")
