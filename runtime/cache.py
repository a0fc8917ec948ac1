"""The on-disk kernel cache: where it lives, atomic entries, checksums.

Layout (``root`` is ``$AOTX_CACHE_DIR``, else the platform's user cache dir)::

    root/                        created 0700 (private to the user)
      kernels/ab/abcdef.../      one directory per entry, named by its key
          meta.json              JSON: what the kernel is, its ABI, checksums
          object.o               the position-independent object code
      tmp/                       entries being written

An entry is written into ``tmp/`` and renamed into place in one
``os.rename`` of its directory, so a reader sees a whole entry or none;
``meta.json`` carries its own SHA-256 and the object's, so a corrupt or
truncated file is detected, ignored and replaced. When several processes
write the same key, the first rename wins and the others discard their copy.
A read-only or full cache directory gives one warning and disables writing
for the process. This module needs only the standard library (the key is
computed by ``compiler.cache``).
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

META = "meta.json"
OBJECT = "object.o"


class CacheWarning(UserWarning):
    """The cache directory cannot be used; kernels are compiled but not cached."""


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


def meta_checksum(meta: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of `meta` without its "checksum" field."""
    body = {k: v for k, v in meta.items() if k != "checksum"}
    return sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


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

    @property
    def kernels(self) -> Path:
        return self.root / "kernels"

    def entry_dir(self, key: str) -> Path:
        return self.kernels / key[:2] / key

    # ---- reading -------------------------------------------------------------------------
    def get(self, key: str) -> tuple[dict[str, Any], bytes] | None:
        """(meta, object bytes) of a valid entry for `key`, else None (a miss)."""
        entry = self.entry_dir(key)
        try:
            meta_bytes = (entry / META).read_bytes()
        except OSError:
            self.stats.misses += 1
            self.last_problem = None
            return None
        try:
            meta, obj = self._validate(key, entry, meta_bytes)
        except _Invalid as e:
            self.stats.rejected += 1
            self.stats.misses += 1
            self.last_problem = str(e)
            return None
        self.stats.hits += 1
        self.last_problem = None
        return meta, obj

    def _validate(self, key: str, entry: Path, meta_bytes: bytes) -> tuple[dict[str, Any], bytes]:
        try:
            meta = json.loads(meta_bytes)
        except (ValueError, UnicodeDecodeError) as e:
            raise _Invalid(f"{META} is not valid JSON ({e})") from None
        if not isinstance(meta, dict) or meta.get("checksum") != meta_checksum(meta):
            raise _Invalid(f"{META} checksum mismatch")
        if meta.get("key") != key:
            raise _Invalid(f"{META} belongs to another key")
        info = meta.get("object")
        if not isinstance(info, dict):
            raise _Invalid(f"{META} has no object record")
        try:
            obj = (entry / OBJECT).read_bytes()
        except OSError as e:
            raise _Invalid(f"{OBJECT} unreadable ({e.strerror})") from None
        if len(obj) != info.get("size") or sha256(obj) != info.get("sha256"):
            raise _Invalid(f"{OBJECT} is truncated or corrupt (checksum mismatch)")
        return meta, obj

    def discard(self, key: str) -> None:
        """Remove an entry that is well-formed but unusable here (foreign version or CPU)."""
        entry = self.entry_dir(key)
        trash = entry.with_name(f"{entry.name}.bad.{os.getpid()}.{os.urandom(4).hex()}")
        try:
            os.rename(entry, trash)
        except OSError:
            return
        shutil.rmtree(trash, ignore_errors=True)

    # ---- writing -------------------------------------------------------------------------
    def put(self, key: str, meta: dict[str, Any], obj: bytes) -> bool:
        """Store an entry atomically; False (after one warning per process) if the
        directory cannot be written."""
        if not self.writable:
            return False
        meta = dict(meta, key=key, object={"size": len(obj), "sha256": sha256(obj)})
        meta["checksum"] = meta_checksum(meta)
        tmp = self.root / "tmp" / f"{key}.{os.getpid()}.{os.urandom(4).hex()}"
        try:
            self.ensure_root()
            tmp.mkdir(parents=True)
            (tmp / OBJECT).write_bytes(obj)
            (tmp / META).write_text(json.dumps(meta, sort_keys=True, indent=1))
            final = self.entry_dir(key)
            final.parent.mkdir(parents=True, exist_ok=True)
            self._install(tmp, final, key)
        except OSError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            if e.errno in _UNWRITABLE or not self.root.exists():
                self._disable(e)
            else:
                self.stats.write_errors += 1
            return False
        self.stats.writes += 1
        return True

    def _install(self, tmp: Path, final: Path, key: str) -> None:
        for _ in range(3):
            try:
                os.rename(tmp, final)        # atomic; fails if `final` exists and is not empty
                return
            except OSError as e:
                if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
            try:                             # someone else wrote it: keep theirs if it is valid
                self._validate(key, final, (final / META).read_bytes())
                shutil.rmtree(tmp, ignore_errors=True)
                return
            except (_Invalid, OSError):
                pass
            trash = final.with_name(f"{final.name}.bad.{os.getpid()}.{os.urandom(4).hex()}")
            try:
                os.rename(final, trash)      # move the broken entry aside, then retry
            except OSError:
                pass
            shutil.rmtree(trash, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)

    def ensure_root(self) -> None:
        """Create the cache directory, private to the user (0700), if it does not exist."""
        if self.root.is_dir():
            return
        self.root.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.root.mkdir(mode=0o700)
        except FileExistsError:
            return
        os.chmod(self.root, 0o700)             # mkdir's mode is filtered by the umask

    def _disable(self, e: OSError) -> None:
        self.writable = False
        self.stats.write_errors += 1
        warnings.warn(f"aotx: the kernel cache directory {self.root} is not usable "
                      f"({e.strerror or e}); compiled kernels will not be cached in this process "
                      f"(set AOTX_CACHE_DIR to a writable directory, or AOTX_DISABLE_CACHE=1)",
                      CacheWarning, stacklevel=4)

    # ---- management (aotx cache info|list|clear) -----------------------------------------
    def entries(self) -> Iterator[EntryInfo]:
        if not self.kernels.is_dir():
            return
        for shard in sorted(self.kernels.iterdir()):
            if not shard.is_dir():
                continue
            for entry in sorted(shard.iterdir()):
                if not entry.is_dir() or "." in entry.name:
                    continue
                files = [p for p in entry.iterdir() if p.is_file()]
                size = sum(p.stat().st_size for p in files)
                mtime = max((p.stat().st_mtime for p in files), default=0.0)
                try:
                    meta, _ = self._validate(entry.name, entry, (entry / META).read_bytes())
                    yield EntryInfo(entry.name, entry, size, mtime, meta)
                except (_Invalid, OSError) as e:
                    yield EntryInfo(entry.name, entry, size, mtime, None, str(e))

    def clear(self) -> int:
        """Remove every entry (and leftovers of interrupted writes); the number removed."""
        n = sum(1 for _ in self.entries())
        for sub in ("kernels", "tmp"):
            shutil.rmtree(self.root / sub, ignore_errors=True)
        return n

    def size(self) -> int:
        total = 0
        for dirpath, _, files in os.walk(self.root):
            for name in files:
                try:
                    total += os.stat(os.path.join(dirpath, name)).st_size
                except OSError:
                    pass
        return total


class _Invalid(Exception):
    pass


def age(mtime: float) -> str:
    seconds = max(time.time() - mtime, 0)
    for unit, n in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= n:
            return f"{seconds / n:.0f} {unit}"
    return f"{seconds:.0f} s"
