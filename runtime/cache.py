"""The on-disk kernel cache: where it lives, who may write it, atomic entries, checksums.

Layout (``root`` is ``$AOTX_CACHE_DIR``, else the platform's user cache dir)::

    root/                        0700, owned by the user
      aotx-cache.json            the marker: this directory is an aotx cache; holds the
                                 secret that keys the entries' checksums (0600)
      kernels/ab/abcdef.../      one directory per entry, named by its key (64 hex digits)
          meta.json              JSON: what the kernel is, its ABI, checksums
          object.o               the position-independent object code
      tmp/                       entries being written

**Trust.** The object code of an entry runs in the process, so the cache
trusts only what the user wrote. A root that is not owned by the user, is
writable by group or others and cannot be tightened, or holds other files and
no marker (``AOTX_CACHE_DIR=$HOME``) is refused with one :class:`CacheWarning`
per process: kernels are compiled and not cached. A root aotx created or marked
is tightened to 0700. An entry or a file not owned by the user or writable by
group/others is ignored (one warning). Every file is opened with
``O_NOFOLLOW | O_NONBLOCK`` and read only if ``fstat`` says it is a regular file,
and at most its recorded size is read (a FIFO or a link to ``/dev/zero`` is a
bad entry, not a hang). ``meta.json`` carries an HMAC-SHA256, keyed by the
marker's secret, of the entry's key and its content (the object's size and
SHA-256 included): an entry copied from another cache or moved under another
key does not verify.

**Atomicity.** An entry is written into ``tmp/`` and renamed into place in one
``os.rename`` of its directory, so a reader sees a whole entry or none, also
when the writer is interrupted (KeyboardInterrupt, a kill) at any point; an
interrupted write leaves at most a directory in ``tmp/``, removed later. When
several processes write the same key, the first rename wins and the others
discard their copy. A read-only or full cache directory gives one warning and
disables writing for the process. Something at an entry's path that is not an
entry directory (a regular file) disables that entry only.

**Clearing** removes only what aotx wrote: entry directories whose names have
the key format, the files it writes inside them, leftovers in ``tmp/`` named
as it names them, then the directories left empty. This module needs only
the standard library (the key is computed by ``compiler.cache``).
"""
from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import re
import stat
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

META = "meta.json"
OBJECT = "object.o"
MARKER = "aotx-cache.json"
MARKER_FORMAT = "aotx-kernel-cache"
ENTRY_FILES = (META, OBJECT)

META_MAX = 16 << 20              # bytes of meta.json read at most
OBJECT_MAX = 512 << 20           # an object.o larger than this is not an entry

KEY_RE = re.compile(r"[0-9a-f]{64}")
SHARD_RE = re.compile(r"[0-9a-f]{2}")
# entries being written (tmp/KEY.PID.HEX) and entries moved aside to be deleted (KEY.bad.PID.HEX)
TMP_RE = re.compile(r"(?P<key>[0-9a-f]{64})\.(?P<pid>\d+)\.[0-9a-f]{8}")
TRASH_RE = re.compile(r"[0-9a-f]{64}\.bad\.\d+\.[0-9a-f]{8}")
MARKER_TMP_RE = re.compile(r"\.aotx-cache\.json\.\d+\.[0-9a-f]{8}")

_O_READ = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
           | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
_O_WRITE = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
_O_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_DIR_FD = hasattr(os, "O_DIRECTORY") and os.open in os.supports_dir_fd


class CacheWarning(UserWarning):
    """The cache directory (or an entry) cannot be used; kernels are compiled but not cached."""


def default_dir() -> Path:
    """``$AOTX_CACHE_DIR``, else the platform's user cache directory + ``aotx``."""
    env = os.environ.get("AOTX_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "aotx"
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA")
        return (Path(base) if base else home / "AppData" / "Local") / "aotx" / "Cache"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg and os.path.isabs(xdg) else home / ".cache") / "aotx"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical(meta: dict[str, Any]) -> bytes:
    """The canonical JSON of `meta` without its "checksum" field (what the checksum covers)."""
    body = {k: v for k, v in meta.items() if k != "checksum"}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def untrusted(st: os.stat_result) -> str | None:
    """Why a file or directory with this status cannot be trusted, or None: it must be
    owned by the current user and not writable by group or others."""
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, not by you (uid {os.geteuid()})"
    if os.name != "nt" and st.st_mode & 0o022:
        return f"writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


@dataclass
class Stats:
    hits: int = 0
    misses: int = 0
    writes: int = 0
    rejected: int = 0         # entries found but invalid (corrupt, truncated, foreign)
    write_errors: int = 0


@dataclass
class EntryInfo:
    key: str
    path: Path
    size: int
    mtime: float
    meta: dict[str, Any] | None        # None when the entry is unreadable
    problem: str | None = None


_UNWRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.ENOTDIR)


@dataclass
class DiskCache:
    """One cache directory. ``get``/``put`` never raise for I/O or content problems."""

    root: Path
    stats: Stats = field(default_factory=Stats)
    writable: bool = True
    last_problem: str | None = None
    refused: str | None = None           # why the root cannot be used (then nothing is read or written)
    _secret: bytes | None = None
    _warned: set[str] = field(default_factory=set)
    _swept: bool = False

    @property
    def kernels(self) -> Path:
        return self.root / "kernels"

    def entry_dir(self, key: str) -> Path:
        return self.kernels / key[:2] / key

    # ---- the root: ownership, the marker and its secret ------------------------------------
    def ready(self, create: bool) -> bool:
        """Whether the root can be used; with `create`, make it (0700) if it does not exist.
        A root that cannot be trusted gives one warning and disables the cache."""
        if self._secret is not None:
            return True
        if self.refused is not None:
            return False
        try:
            st = os.stat(self.root)
        except FileNotFoundError:
            if not create:
                return False
            try:
                self._make_root()
                st = os.stat(self.root)
            except OSError as e:
                self._disable(e)
                return False
        except OSError as e:
            return self._refuse(e.strerror or str(e))
        if not stat.S_ISDIR(st.st_mode):
            return self._refuse("not a directory")
        if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
            return self._refuse(untrusted(st) or "not yours")
        try:
            secret = self._read_marker()
            if secret is None:
                other = sorted(n for n in os.listdir(self.root)
                               if n not in ("kernels", "tmp") and not MARKER_TMP_RE.fullmatch(n))
                if other:
                    return self._refuse(f"it holds files aotx did not write ({', '.join(other[:3])}"
                                        f"{', ...' if len(other) > 3 else ''}) and no {MARKER}; "
                                        f"point AOTX_CACHE_DIR at a new or empty directory")
                self._tighten(st)
                secret = self._write_marker()
            else:
                self._tighten(st)
        except _Invalid as e:
            return self._refuse(str(e))
        except OSError as e:
            self._disable(e)
            return False
        self._secret = secret
        return True

    def _make_root(self) -> None:
        self.root.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.root.mkdir(mode=0o700)
        except FileExistsError:
            return
        os.chmod(self.root, 0o700)              # mkdir's mode is filtered by the umask

    def _tighten(self, st: os.stat_result) -> None:
        """A root the user owns and aotx marks is private to the user (permissions for
        group and others removed; the user's own are left as they are)."""
        if os.name != "nt" and st.st_mode & 0o077:
            try:
                os.chmod(self.root, stat.S_IMODE(st.st_mode) & 0o700)
            except OSError:
                pass
            if os.stat(self.root).st_mode & 0o022:
                raise _Invalid(untrusted(os.stat(self.root)) or "writable by others")

    def _read_marker(self) -> bytes | None:
        try:
            data = read_regular(self.root / MARKER, 4096)
        except FileNotFoundError:
            return None
        except _Invalid as e:
            raise _Invalid(f"{MARKER}: {e}") from None
        try:
            marker = json.loads(data)
            secret = bytes.fromhex(marker["secret"])
            ok = marker.get("format") == MARKER_FORMAT and len(secret) == 32
        except (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError):
            ok = False
        if not ok:
            raise _Invalid(f"{MARKER} is not an aotx cache marker")
        return secret

    def _write_marker(self) -> bytes:
        """Create the marker (first writer wins: link(2) does not replace)."""
        secret = os.urandom(32)
        text = json.dumps({"format": MARKER_FORMAT, "version": 1, "secret": secret.hex(),
                           "note": "aotx kernel cache: `aotx cache clear` empties it"}, indent=1)
        tmp = self.root / f".{MARKER}.{os.getpid()}.{os.urandom(4).hex()}"
        write_new(tmp, text.encode())
        try:
            os.link(tmp, self.root / MARKER)
        except FileExistsError:
            found = self._read_marker()
            assert found is not None
            secret = found
        except OSError:                         # no hard links here: rename (may replace a racer's)
            os.replace(tmp, self.root / MARKER)
            return secret
        finally:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return secret

    def sign(self, key: str, meta: dict[str, Any]) -> str:
        """The checksum of an entry: HMAC-SHA256 keyed by this cache's secret over the key and
        the canonical meta (which records the object's size and SHA-256)."""
        if self._secret is None and not self.ready(create=False):
            raise _Invalid("the cache directory is not usable")
        assert self._secret is not None
        return hmac.new(self._secret, key.encode() + b"\0" + canonical(meta), hashlib.sha256).hexdigest()

    def _refuse(self, why: str) -> bool:
        self.refused = why
        self.writable = False
        self._warn_once("root", f"aotx: the kernel cache directory {self.root} is not usable ({why}); "
                                f"compiled kernels will not be cached in this process (set AOTX_CACHE_DIR "
                                f"to a directory of your own, or AOTX_DISABLE_CACHE=1)")
        return False

    def _warn_once(self, kind: str, message: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            warnings.warn(message, CacheWarning, stacklevel=4)

    # ---- reading -------------------------------------------------------------------------
    def get(self, key: str) -> tuple[dict[str, Any], bytes] | None:
        """(meta, object bytes) of a valid entry for `key`, else None (a miss)."""
        self.last_problem = None
        if not self.ready(create=False):
            self.stats.misses += 1
            return None
        try:
            meta, obj = self.read(key)
        except FileNotFoundError:
            self.stats.misses += 1
            return None
        except _Foreign as e:
            self._warn_once("entry", f"aotx: ignoring kernel cache entries that are not yours alone "
                                     f"({self.entry_dir(key)}: {e})")
            self.stats.rejected += 1
            self.stats.misses += 1
            self.last_problem = str(e)
            return None
        except _Invalid as e:
            self.stats.rejected += 1
            self.stats.misses += 1
            self.last_problem = str(e)
            return None
        self.stats.hits += 1
        return meta, obj

    def read(self, key: str) -> tuple[dict[str, Any], bytes]:
        """The verified (meta, object) of the entry for `key`. Raises FileNotFoundError when
        there is none, _Invalid (or its subclass _Foreign) when it cannot be used."""
        if not KEY_RE.fullmatch(key):
            raise _Invalid(f"{key!r} is not a cache key")
        with _EntryDir(self.entry_dir(key)) as entry:
            meta_bytes = entry.read(META, META_MAX)
            try:
                meta = json.loads(meta_bytes)
            except (ValueError, UnicodeDecodeError) as e:
                raise _Invalid(f"{META} is not valid JSON ({e})") from None
            if not isinstance(meta, dict) or not isinstance(meta.get("checksum"), str) \
                    or not hmac.compare_digest(meta["checksum"], self.sign(key, meta)):
                raise _Invalid(f"{META} checksum mismatch (corrupt, or written by another cache)")
            info = meta.get("object")
            if not isinstance(info, dict):
                raise _Invalid(f"{META} has no object record")
            size = info.get("size")
            if not isinstance(size, int) or not 0 <= size <= OBJECT_MAX:
                raise _Invalid(f"{META} has no object record")
            obj = entry.read(OBJECT, size)
            if len(obj) != size or sha256(obj) != info.get("sha256"):
                raise _Invalid(f"{OBJECT} is truncated or corrupt (checksum mismatch)")
        return meta, obj

    def discard(self, key: str) -> None:
        """Remove an entry that is unusable here (corrupt, foreign version or CPU, content
        that does not load), so that the next compile replaces it."""
        if KEY_RE.fullmatch(key):
            self._move_aside(self.entry_dir(key))

    def _move_aside(self, entry: Path) -> None:
        try:
            if not stat.S_ISDIR(os.lstat(entry).st_mode):
                return                          # not something aotx wrote: leave it alone
        except OSError:
            return
        trash = entry.with_name(f"{entry.name}.bad.{os.getpid()}.{os.urandom(4).hex()}")
        try:
            os.rename(entry, trash)
        except OSError:
            return
        remove_entry_dir(trash)

    # ---- writing -------------------------------------------------------------------------
    def put(self, key: str, meta: dict[str, Any], obj: bytes) -> bool:
        """Store an entry atomically; False (after one warning per process) if the
        directory cannot be written. An exception (KeyboardInterrupt included) at any
        point leaves no partial entry."""
        if not self.writable or not KEY_RE.fullmatch(key) or not self.ready(create=True):
            return False
        meta = dict(meta, key=key, object={"size": len(obj), "sha256": sha256(obj)})
        meta["checksum"] = self.sign(key, meta)
        tmp_root = self.root / "tmp"
        tmp = tmp_root / f"{key}.{os.getpid()}.{os.urandom(4).hex()}"
        try:
            _mkdir_private(tmp_root)
            self._sweep_tmp(tmp_root)
            tmp.mkdir(mode=0o700)
            write_new(tmp / OBJECT, obj)
            write_new(tmp / META, json.dumps(meta, sort_keys=True, indent=1).encode())
            final = self.entry_dir(key)
            _mkdir_private(self.kernels)
            _mkdir_private(final.parent)
            installed = self._install(tmp, final, key)
        except OSError as e:
            if e.errno in _UNWRITABLE or not self.root.exists():
                self._disable(e)
            else:
                self.stats.write_errors += 1
            return False
        finally:
            remove_entry_dir(tmp)               # still there unless renamed into place
        if installed:
            self.stats.writes += 1
        else:
            self.stats.write_errors += 1
        return installed

    def _install(self, tmp: Path, final: Path, key: str) -> bool:
        for _ in range(3):
            try:
                os.rename(tmp, final)        # atomic; fails if `final` exists and is not empty
                return True
            except OSError as e:
                if e.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                    raise
            try:
                if not stat.S_ISDIR(os.lstat(final).st_mode):
                    return False             # a file at the entry's path: this entry is not cached
            except FileNotFoundError:
                continue                     # removed meanwhile: try again
            except OSError:
                return False                 # its shard is a file: this entry is not cached
            try:                             # someone else wrote it: keep theirs if it is valid
                self.read(key)
                return True
            except (_Invalid, OSError):
                pass
            self._move_aside(final)          # move the broken entry aside, then retry
        return False

    def _sweep_tmp(self, tmp_root: Path) -> None:
        """Remove what interrupted writers left in tmp/ (their process is gone)."""
        if self._swept:
            return
        self._swept = True
        try:
            names = os.listdir(tmp_root)
        except OSError:
            return
        for name in names:
            m = TMP_RE.fullmatch(name)
            if m and not _alive(int(m["pid"])):
                remove_entry_dir(tmp_root / name)

    def _disable(self, e: OSError) -> None:
        self.writable = False
        self.stats.write_errors += 1
        self._warn_once("root", f"aotx: the kernel cache directory {self.root} is not usable "
                                f"({e.strerror or e}); compiled kernels will not be cached in this process "
                                f"(set AOTX_CACHE_DIR to a writable directory, or AOTX_DISABLE_CACHE=1)")

    # ---- management (aotx cache info|list|clear) -----------------------------------------
    def _entry_paths(self) -> Iterator[Path]:
        """Entry directories aotx recognises as its own: kernels/XX/KEY with KEY[:2] == XX."""
        for shard in _listdir(self.kernels):
            if not SHARD_RE.fullmatch(shard) or not _is_dir(self.kernels / shard):
                continue
            for name in _listdir(self.kernels / shard):
                if KEY_RE.fullmatch(name) and name[:2] == shard and _is_dir(self.kernels / shard / name):
                    yield self.kernels / shard / name

    def entries(self) -> Iterator[EntryInfo]:
        if not self.ready(create=False):
            return
        for entry in self._entry_paths():
            size, mtime = 0, 0.0
            for name in ENTRY_FILES:
                try:
                    st = os.lstat(entry / name)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    size, mtime = size + st.st_size, max(mtime, st.st_mtime)
            try:
                meta, _ = self.read(entry.name)
                yield EntryInfo(entry.name, entry, size, mtime, meta)
            except (_Invalid, OSError) as e:
                yield EntryInfo(entry.name, entry, size, mtime, None, str(e))

    def clear(self) -> int:
        """Remove every entry and the leftovers of interrupted writes: only what aotx wrote
        (see the module docstring). The number of entries removed."""
        if not self.ready(create=False):
            return 0
        n = 0
        for entry in list(self._entry_paths()):
            n += remove_entry_dir(entry)
        for shard in _listdir(self.kernels):
            if SHARD_RE.fullmatch(shard):
                for name in _listdir(self.kernels / shard):
                    if TRASH_RE.fullmatch(name):
                        remove_entry_dir(self.kernels / shard / name)
                _rmdir(self.kernels / shard)
        _rmdir(self.kernels)
        for name in _listdir(self.root / "tmp"):
            if TMP_RE.fullmatch(name):
                remove_entry_dir(self.root / "tmp" / name)
        _rmdir(self.root / "tmp")
        for name in _listdir(self.root):
            if MARKER_TMP_RE.fullmatch(name) and not _is_dir(self.root / name):
                try:
                    os.unlink(self.root / name)     # a marker whose writer was interrupted
                except OSError:
                    pass
        return n

    def size(self) -> int:
        return sum(e.size for e in self.entries())


class _Invalid(Exception):
    """An entry (or the marker) that cannot be used; the message says why."""


class _Foreign(_Invalid):
    """An entry, or a file in it, that someone else owns or can write."""


def _open(path: Path | str, flags: int, dir_fd: int | None, refused: tuple[int, ...], why: str) -> int:
    """os.open; FileNotFoundError passes through, an errno in `refused` is _Invalid("path
    `why`"), any other OSError _Invalid with its message."""
    try:
        return os.open(path, flags, dir_fd=dir_fd) if dir_fd is not None else os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as e:
        if e.errno in refused:
            raise _Invalid(f"{os.fspath(path)} {why}") from None
        raise _Invalid(f"{os.fspath(path)}: {e.strerror}") from None


def read_regular(path: Path | str, limit: int, dir_fd: int | None = None) -> bytes:
    """At most `limit` bytes of the regular file at `path`, opened without following a
    symbolic link and without blocking (a FIFO or a device is refused, not read). Raises
    FileNotFoundError, or _Invalid when it is not a regular file of the user's or is larger."""
    fd = _open(path, _O_READ, dir_fd, (errno.ELOOP, errno.EMLINK), "is a symbolic link")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _Invalid(f"{os.fspath(path)} is not a regular file")
        why = untrusted(st)
        if why:
            raise _Foreign(f"{os.fspath(path)} is {why}")
        if st.st_size > limit:
            raise _Invalid(f"{os.fspath(path)} is larger than expected ({st.st_size} > {limit} bytes)")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise _Invalid(f"{os.fspath(path)} is larger than expected")
        return data
    finally:
        os.close(fd)


def write_new(path: Path, data: bytes) -> None:
    """Create `path` (it must not exist), private to the user, holding `data`."""
    fd = os.open(path, _O_WRITE, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


class _EntryDir:
    """An entry directory opened once (no symlink, owned by the user, not writable by
    others); its files are read relative to it, so nothing can be swapped in between."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def __enter__(self) -> "_EntryDir":
        if not _DIR_FD:
            st = os.lstat(self.path)
            if not stat.S_ISDIR(st.st_mode):
                raise _Invalid(f"{self.path} is not a directory")
            why = untrusted(st)
            if why:
                raise _Foreign(f"the entry is {why}")
            return self
        self.fd = _open(self.path, _O_DIR, None, (errno.ENOTDIR, errno.ELOOP), "is not a directory")
        why = untrusted(os.fstat(self.fd))
        if why:
            os.close(self.fd)
            self.fd = None
            raise _Foreign(f"the entry is {why}")
        return self

    def read(self, name: str, limit: int) -> bytes:
        try:
            if self.fd is None:
                return read_regular(self.path / name, limit)
            return read_regular(name, limit, dir_fd=self.fd)
        except FileNotFoundError:
            raise _Invalid(f"{name} is missing") from None

    def __exit__(self, *exc: Any) -> None:
        if self.fd is not None:
            os.close(self.fd)


def remove_entry_dir(path: Path) -> int:
    """Remove an entry directory aotx wrote: the files aotx writes in it, then the directory
    (left in place if it holds anything else). 1 if it was removed, else 0."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return 0
    except OSError:
        return 0
    for name in ENTRY_FILES:
        try:
            os.unlink(path / name)
        except OSError:
            pass
    return 1 if _rmdir(path) else 0


def _mkdir_private(path: Path) -> None:
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass


def _rmdir(path: Path) -> bool:
    try:
        os.rmdir(path)
        return True
    except OSError:
        return False


def _listdir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _alive(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":     # (os.kill(pid, 0) terminates on Windows)
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True
    return True


def age(mtime: float) -> str:
    seconds = max(time.time() - mtime, 0)
    for unit, n in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= n:
            return f"{seconds / n:.0f} {unit}"
    return f"{seconds:.0f} s"
