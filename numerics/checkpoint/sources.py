"""Where a checkpoint's tensors are: sources, and references to each tensor's bytes.

A *source* is a path naming tensors:

* a ``.safetensors`` file;
* a directory of ``*.safetensors`` shards, with or without the Hugging Face
  index ``model.safetensors.index.json`` (or any ``*.index.json``), or that
  index file itself;
* a directory without safetensors files: its torch files, else its
  ``.npz``/``.npy`` files (activation dumps);
* a ``.npz`` file; a ``.npy`` file (one tensor, named by the file's stem);
* a torch ``.pt``/``.pth``/``.bin``/``.ckpt`` state dict (nested dicts flattened with
  dots; two entries that join to the same name are an error), read with
  ``torch.load(..., weights_only=True, mmap=True)`` (a legacy non-zip file is
  read whole, without ``mmap``): torch, the project's optional extra ``torch``;
* ``PATH:KEY``: the one tensor ``KEY`` of the source ``PATH``.

A :class:`TensorRef` is a small, picklable description of one tensor (file,
byte offset, dtype, shape), so a thread, a process or a Dask worker can read
any range of its elements straight from the file: nothing is loaded until it
is read, and then only the range asked for (a compressed ``.npz`` member and a
Fortran-ordered array are the exceptions: they are read whole, once per
process; so is a transposed or sliced tensor of a torch file).

Files are read through memory maps.  A file found shorter than its header says
is refused by name, but one truncated *while* its pages are being read (a job
rewriting a checkpoint in place) ends the process with SIGBUS, which Python
cannot catch: copy a checkpoint that is being written before inspecting it, or
read it with ``TensorRef.read(..., mmap=False)``.
"""

from __future__ import annotations

import math
import os
import pickle
import pickletools
import re
import stat
import struct
import threading
import warnings
import zipfile
import zlib
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from numerics.dtypes import format_of_dtype
from numerics.formats import Format
from numerics.tensors import (
    TORCH_SUFFIXES,
    TensorFileError,
    check_raw_codes,
    check_tensor_dtype,
    element_range,
    file_errors,
    fs_path,
    npy_header,
    npz_members,
    parse_json,
    read_npy,
    read_npz_member,
    safetensors_entries,
    safetensors_packed,
    unpack_nibbles,
)

__all__ = [
    "Source",
    "TensorFileError",
    "TensorRef",
    "check_ref",
    "open_source",
]

_TORCH_NAMES = "/".join(TORCH_SUFFIXES)  # ".pt/.pth/.bin/.ckpt", for messages
#: torch's dtype of two e2m1 codes in a byte, the first in the low bits (read unpacked)
_TORCH_FP4 = "torch.float4_e2m1fn_x2"
_SUFFIXES = (".safetensors", ".npz", ".npy", *TORCH_SUFFIXES, ".json")


@dataclass(frozen=True)
class TensorRef:
    """One tensor of a source: enough to read any range of its elements anywhere.

    Attributes
    ----------
    name : str
        The tensor's name in the source.
    file : str
        The file holding its bytes (a shard of a sharded checkpoint), as the path
        given names it.
    dtype : numpy.dtype
        The element type as stored (byte order included).
    stored_dtype : str
        The dtype as the file names it (``"BF16"``, ``"<f4"``, ``"torch.bfloat16"``).
    shape : tuple of int
    offset : int
        Byte offset of element 0 in ``file`` (-1 where the bytes are not
        addressable: compressed ``.npz`` members, torch files, Fortran order).
    loader : str
        ``"file"`` (bytes at ``offset``), ``"nibbles"`` (4-bit codes packed two to a
        byte at ``offset``, the first in the low bits: safetensors' ``F4``), ``"npz"``,
        ``"npy"`` (whole array, Fortran order) or ``"torch"``.
    member : str
        The ``.npz`` member or torch key.
    format : Format or None
        The float format of the elements (None for integers, bool, raw bytes);
        set for raw bytes by :meth:`as_format`.
    root : str
        The working directory a relative ``file`` was given in (:func:`open_source`
        sets it): reads resolve ``file`` against it, on a Dask worker or after a
        ``chdir`` too.
    """

    name: str
    file: str
    dtype: np.dtype
    stored_dtype: str
    shape: tuple[int, ...]
    offset: int = -1
    loader: str = "file"
    member: str = ""
    format: Format | None = None
    root: str = ""

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def packed(self) -> bool:
        """Whether the file packs two 4-bit elements to a byte (safetensors' ``F4``,
        torch's ``float4_e2m1fn_x2``); :meth:`read` gives them one to a byte."""
        return self.loader == "nibbles" or self.stored_dtype == _TORCH_FP4

    @property
    def nbytes(self) -> int:
        """Bytes of the elements as stored."""
        if self.packed:
            return (self.size + 1) // 2
        return self.size * self.dtype.itemsize

    def stored_bytes(self, start: int, stop: int) -> int:
        """Bytes of the file that elements ``[start:stop]`` take, so that the ranges of a
        split of the tensor add up to :attr:`nbytes` (a progress count): a packed byte
        counts with the range that holds its second element (or its only one)."""
        if self.packed:
            return (stop + 1) // 2 - (start + 1) // 2
        return (stop - start) * self.dtype.itemsize

    @property
    def dtype_name(self) -> str:
        """The element type: the format's name, or the numpy dtype's (``int64``, ``|V2``)."""
        if self.format is not None:
            return self.format.name
        return self.dtype.str if self.dtype.type is np.void else self.dtype.name

    @property
    def is_raw(self) -> bool:
        """Raw bytes (numpy's void dtype): no format until one is given."""
        return self.dtype.type is np.void and self.format is None

    def as_format(self, fmt: Format) -> TensorRef:
        """A raw tensor's bytes read as codes of ``fmt`` (the widths must agree)."""
        if self.dtype.itemsize != fmt.code_dtype.itemsize:
            raise TensorFileError(
                f"Got raw tensor {self.name!r} in {self.file!r} with {self.dtype.itemsize}-byte "
                f"elements, but {fmt.name} codes take {fmt.code_dtype.itemsize} byte(s)")
        return replace(self, format=fmt)

    def read(self, start: int = 0, stop: int | None = None, *, mmap: bool = True) -> np.ndarray:
        """Flattened elements ``[start:stop]`` in C order, native byte order.

        With ``mmap=False`` the range is read with one ``read`` call instead
        of through a memory map (what a Dask task does).  Raw tensors given a
        format come back as its codes.
        """
        start, stop = element_range(start, stop, self.size)
        file = os.path.join(self.root, self.file)  # (the file itself when absolute)
        if self.loader == "file":
            if stop == start:
                out = np.empty(0, self.dtype)
            elif mmap:
                out = _mapped(file, self.offset, self.dtype, self.size)[start:stop]
            else:
                out = np.fromfile(file, dtype=self.dtype, count=stop - start,
                                  offset=self.offset + start * self.dtype.itemsize)
        elif self.loader == "nibbles":
            first, count = start // 2, (stop + 1) // 2 - start // 2
            if mmap:
                packed = _mapped(file, self.offset, np.dtype(np.uint8), self.nbytes)
                packed = packed[first:first + count]
            else:
                packed = np.fromfile(file, dtype=np.uint8, count=count,
                                     offset=self.offset + first)
            out = unpack_nibbles(packed, start % 2, stop - start).view(self.dtype)
        elif self.loader == "npz":
            out = _npz_member(file, self.member)[start:stop]
        elif self.loader == "npy":
            out = _npy_c_order(file)[start:stop]
        else:
            out = _torch_slice(file, self.member, start, stop)
        if out.dtype.byteorder == ">":
            out = out.astype(out.dtype.newbyteorder("="))
        if self.format is not None and self.dtype.type is np.void:
            out = out.view(self.format.code_dtype)
            # (every reader of the tensor goes through here)
            check_raw_codes(out, self.format, f"{self.name!r} in {self.file!r}")
        return out


@dataclass(frozen=True)
class Source:
    """The tensors a path names (see the module docstring).

    Attributes
    ----------
    path : str
        The path as given.
    kind : str
        ``"safetensors"``, ``"sharded"``, ``"npz"``, ``"npy"``, ``"torch"``,
        ``"directory"`` or ``"tensor"`` (``PATH:KEY``).
    tensors : tuple of TensorRef
        Sorted by name.
    files : tuple of str
        The files read.
    skipped : tuple of str
        Entries that are not real-number tensors of a readable dtype (left out): a
        safetensors entry of a dtype not read (``F6_E2M3``, ``C64``), a torch file's
        entries that are not tensors, ``.npz`` members of strings, objects or
        complex numbers.
    unread : tuple of str
        Tensor files of a directory that were not read (their names): a directory is read
        through its ``*.index.json`` if it has one, else through the files of the first
        kind it holds of ``.safetensors``, torch files, ``.npz``/``.npy`` (a checkpoint
        often holds the same tensors in two kinds); the tensor files of the other kinds,
        or outside the index, are listed here so that a listing or a comparison can say
        they were left out.
    unindexed : tuple of str
        Tensors that a shard named by the index holds but the index does not list (a
        stale index): left out, as a loader that follows the index leaves them, and
        listed so that a listing or a comparison can say so.
    """

    path: str
    kind: str
    tensors: tuple[TensorRef, ...]
    files: tuple[str, ...]
    skipped: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()
    unindexed: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """The tensor names, sorted."""
        return tuple(t.name for t in self.tensors)

    def __getitem__(self, name: str) -> TensorRef:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    @property
    def nbytes(self) -> int:
        """Bytes of every tensor."""
        return sum(t.nbytes for t in self.tensors)

    def with_raw_format(self, fmt: Format) -> Source:
        """Raw tensors read as codes of ``fmt``; the others unchanged."""
        return replace(self, tensors=tuple(t.as_format(fmt) if t.is_raw else t
                                           for t in self.tensors))


def _float_format(dtype: np.dtype) -> Format | None:
    return None if dtype.kind in "iub" or dtype.type is np.void else format_of_dtype(dtype)


def _ref(name: str, file: str, dtype: np.dtype, stored: str, shape: tuple[int, ...], *,
         offset: int = -1, loader: str = "file", member: str = "") -> TensorRef:
    check_tensor_dtype(dtype, f"tensor {name!r} in {file!r}")
    return TensorRef(name, file, dtype, stored, tuple(int(n) for n in shape), offset, loader,
                     member, _float_format(dtype))


# ---------------------------------------------------------------- readers (cached per process)
#: Which file a path names now: its absolute path and (st_dev, st_ino, st_size, st_mtime_ns).
_FileId = tuple[str, int, int, int, int]


def _file_id(file: str) -> _FileId:
    """The key the readers cache a file under: a file rewritten, replaced or reached from
    another working directory is another key, so a cache never serves stale bytes."""
    st = os.stat(file)
    return (os.path.abspath(file), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


_MAPS: dict[tuple[_FileId, int, str, int], np.ndarray] = {}
_MAPS_LOCK = threading.Lock()


def _mapped(file: str, offset: int, dtype: np.dtype, size: int) -> np.ndarray:
    key = (_file_id(file), offset, dtype.str, size)
    arr = _MAPS.get(key)
    if arr is None:
        with _MAPS_LOCK:
            arr = _MAPS.get(key)
            if arr is None:
                try:
                    arr = np.memmap(file, dtype=dtype, mode="r", offset=offset, shape=(size,))
                except ValueError:  # numpy's "mmap length is greater than file size"
                    raise TensorFileError(
                        f"Got file {file!r}, which is shorter than its header says (was it "
                        "truncated or rewritten while being read?)") from None
                if len(_MAPS) > 4096:
                    _MAPS.clear()
                _MAPS[key] = arr
    return arr


def release_maps() -> None:
    """Drop every cached reader (memory maps, decompressed members, torch files).

    :func:`open_source` calls it, so each operation on a path starts from the
    file as it is then (file timestamps are too coarse to tell a file
    rewritten within a few milliseconds with the same size from the old one).
    """
    with _MAPS_LOCK:
        _MAPS.clear()
    _npz_member_of.cache_clear()
    _npy_c_order_of.cache_clear()
    _torch_flat_of.cache_clear()
    _torch_state_of.cache_clear()


def _npz_member(file: str, member: str) -> np.ndarray:
    return _npz_member_of(_file_id(file), file, member)


@lru_cache(maxsize=2)
def _npz_member_of(fid: _FileId, file: str, member: str) -> np.ndarray:
    return np.ascontiguousarray(read_npz_member(file, member)).reshape(-1)


def _npy_c_order(file: str) -> np.ndarray:
    return _npy_c_order_of(_file_id(file), file)


@lru_cache(maxsize=2)
def _npy_c_order_of(fid: _FileId, file: str) -> np.ndarray:
    return np.ascontiguousarray(read_npy(file)).reshape(-1)


# ---------------------------------------------------------------- safetensors and indexes
def _safetensors(path: str) -> tuple[list[TensorRef], list[str]]:
    """The tensors of a safetensors file, and the names of the entries of a dtype not read
    (``F6_E2M3``, ``C64``, ...: left out, as a torch file's entries that are not tensors
    are; a file of nothing else is refused)."""
    others: dict[str, str] = {}
    entries = safetensors_entries(path, unsupported=others)
    if others and not entries:
        safetensors_entries(path)  # (raises for the first of them)
    return [_ref(name, path, dtype, code, shape, offset=offset,
                 loader="nibbles" if safetensors_packed(code) else "file")
            for name, (code, dtype, shape, offset) in entries.items()], sorted(others)


def _index(path: str) -> tuple[list[TensorRef], list[str], list[str], list[str]]:
    """Tensors named by a ``*.index.json`` file: (refs, shard files, skipped, the tensors
    of the shards that the index does not place there)."""
    with open(path, "rb") as f:
        doc = parse_json(f.read(), f"Got index {path!r}, which")
    weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(weight_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()):
        raise TensorFileError(
            f"Got index {path!r}, which has no \"weight_map\" of tensor names to shard files")
    base = os.path.dirname(path)
    shards = sorted(set(weight_map.values()))
    by_shard: dict[str, dict[str, TensorRef]] = {}
    skipped: list[str] = []
    for shard in shards:
        # a shard lies in the index's folder or below it, as the files the index came
        # with do: a name that leaves it (an absolute path, a "..") is refused, not read
        parts = shard.replace("\\", "/").split("/")
        if os.path.isabs(shard) or ".." in parts or not shard:
            raise TensorFileError(
                f"Got index {path!r}, which names shard {shard!r}, outside the index's folder")
        file = os.path.join(base, shard)
        if not _is_file(file):
            raise TensorFileError(
                f"Got index {path!r}, which names shard {shard!r}, but that file does not exist")
        refs, skip = _file_refs(file)
        by_shard[shard] = {r.name: r for r in refs}
        skipped += skip
    out = []
    for name, shard in sorted(weight_map.items()):
        ref = by_shard[shard].get(name)
        if ref is None:
            raise TensorFileError(
                f"Got index {path!r}, which places tensor {name!r} in shard {shard!r}, "
                "but that shard does not hold it")
        out.append(ref)
    unindexed = sorted(f"{name} (in {shard})" for shard, refs in by_shard.items()
                       for name in refs if weight_map.get(name) != shard)
    return out, [os.path.join(base, s) for s in shards], skipped, unindexed


# ---------------------------------------------------------------- npz / npy
def _npz(path: str) -> tuple[list[TensorRef], list[str]]:
    """The members of ``path`` that hold real numbers, and the names of those that do not
    (strings, Python objects, complex numbers, ...: left out, as a torch file's entries
    that are not tensors are; a file of nothing else is refused with the first reason)."""
    try:
        z = zipfile.ZipFile(path)
    except file_errors() as err:
        if isinstance(err, (FileNotFoundError, PermissionError)):
            raise
        raise TensorFileError(f"Got file {path!r}, which is not a valid .npz (zip) file") \
            from None
    out: list[TensorRef] = []
    skipped: list[str] = []
    refusal: TensorFileError | None = None
    with z, open(path, "rb") as raw:
        infos = z.infolist()
        names = npz_members(path, [info.filename for info in infos])  # no name twice
        for info, name in zip(infos, names):
            try:
                with z.open(info) as member:
                    shape, fortran, dtype = npy_header(member)
                    header_len = member.tell()
            except file_errors() as err:
                if isinstance(err, PermissionError):
                    raise
                raise TensorFileError(
                    f"Got member {name!r} of {path!r}, which is not a readable .npy array: "
                    f"{_first_line(err)}") from None
            try:
                if dtype.hasobject:
                    raise TensorFileError(f"Got member {name!r} of {path!r}, which holds "
                                          "Python objects, not numbers")
                _ref(name, path, dtype, dtype.str, shape)  # (its dtype's checks)
            except TensorFileError as err:
                skipped.append(name)
                refusal = refusal or err
                continue
            promised = header_len + math.prod(shape) * dtype.itemsize  # exact
            if info.file_size != promised or (info.compress_type == zipfile.ZIP_STORED
                                              and info.compress_size != promised):
                raise TensorFileError(
                    f"Got member {name!r} of {path!r}, whose header promises {promised} bytes "
                    f"(shape {list(shape)} of {dtype.str}) but which holds {info.file_size} "
                    "(truncated or corrupt)")
            if info.compress_type == zipfile.ZIP_STORED and not fortran:
                raw.seek(info.header_offset + 26)
                n, m = np.frombuffer(raw.read(4), "<u2").tolist()
                offset = info.header_offset + 30 + n + m + header_len
                out.append(_ref(name, path, dtype, dtype.str, shape, offset=offset))
            else:
                out.append(_ref(name, path, dtype, dtype.str, shape, loader="npz",
                                member=name))
    if not out and refusal is not None:
        raise refusal
    return out, skipped


def _npy(path: str) -> list[TensorRef]:
    arr = read_npy(path)  # checks the file; a memory map costs nothing
    name = os.path.splitext(os.path.basename(path))[0]
    if arr.dtype.hasobject:
        raise TensorFileError(f"Got file {path!r}, which holds Python objects, not numbers")
    if arr.size and not arr.flags.c_contiguous:
        return [_ref(name, path, arr.dtype, arr.dtype.str, arr.shape, loader="npy")]
    offset = int(arr.offset) if isinstance(arr, np.memmap) else -1
    if offset < 0:  # an empty array is not mapped: nothing to read
        return [_ref(name, path, arr.dtype, arr.dtype.str, arr.shape, loader="npy")]
    return [_ref(name, path, arr.dtype, arr.dtype.str, arr.shape, offset=offset)]


# ---------------------------------------------------------------- torch
def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def _torch_state(file: str) -> dict[str, Any]:
    return _torch_state_of(_file_id(file), file)


#: The two containers ``torch.save`` writes: a zip archive (the default since torch 1.6) and
#: the legacy stream of pickles, whose first pickle is this magic number
#: (``torch.serialization.MAGIC_NUMBER``).
_ZIP_MAGIC = b"PK\x03\x04"
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
#: The pickles that precede a legacy file's raw storage bytes: the magic number, the protocol
#: version, the system information, the state itself and the list of storage keys.
_LEGACY_PICKLES = 5
#: A refusal by torch's weights_only unpickler of something it understood (a class, a
#: function, a module it does not allow), as opposed to bytes it could not parse at all.
_REFUSAL = re.compile(r"GLOBAL \S+ was not an allowed global|whose module \S+ is blocked|"
                      r"must be imported to load|Can only create new object|"
                      r"Trying to call reduce for unrecognized function")


def _torch_container(file: str) -> str:
    """``"zip"`` or ``"legacy"``: which container ``file`` is, read from its first bytes;
    TensorFileError naming the file if it is neither (text, a ``.npy`` renamed ``.pt``, a
    plain pickle, random bytes)."""
    with open(file, "rb") as f:
        head = f.read(4)
        if head == _ZIP_MAGIC:
            return "zip"
        f.seek(0)
        if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
            try:
                values = [arg for _, arg, _ in pickletools.genops(f)]
            except (ValueError, OverflowError):  # cut short, or not a pickle after all
                values = []
            if _LEGACY_MAGIC in values:
                return "legacy"
    raise TensorFileError(
        f"Got file {file!r}, which is not a readable torch file: it starts with {head!r}, "
        "neither a zip archive (b'PK\\x03\\x04') nor a legacy torch pickle (its magic number)")


def _torch_pickles_parse(file: str, container: str) -> bool:
    """Whether the pickles of a torch file parse to the end (read, never run): a refusal by
    torch.load(weights_only=True) of a file whose pickles do not is a corrupt file (a legacy
    file cut short mid-name refuses ``GLOBAL torch._utils._rebuild_ten``)."""
    try:
        if container == "zip":
            with zipfile.ZipFile(file) as z:
                names = [n for n in z.namelist() if n.endswith("data.pkl")]
                if len(names) != 1:
                    return False
                with z.open(names[0]) as f:
                    for _ in pickletools.genops(f):
                        pass
            return True
        with open(file, "rb") as f:
            for _ in range(_LEGACY_PICKLES):
                for _ in pickletools.genops(f):
                    pass
        return True
    except (ValueError, OverflowError, OSError, EOFError, zipfile.BadZipFile, zlib.error,
            NotImplementedError):
        return False


@lru_cache(maxsize=4)
def _torch_state_of(fid: _FileId, file: str) -> dict[str, Any]:
    container = _torch_container(file)  # text or random bytes: not a torch file, torch or not
    torch = _torch()
    if torch is None:
        raise TensorFileError(
            f"Got torch file {file!r}, but torch is not installed; install it (pip install "
            f"torch, or the project's extra: pip install -e '.[torch]') to read {_TORCH_NAMES} "
            "files")
    # the zip format is memory-mapped; the legacy one (torch.save(...,
    # _use_new_zipfile_serialization=False), old pytorch_model.bin) cannot be and is read whole
    records = _storage_records(file) if container == "zip" else None
    # a memory map reads each record's bytes where they lie, unchecked: a compressed record
    # (a file re-zipped with deflate) would give its compressed bytes as values, so such a
    # file is read whole, as torch.load reads it (it decompresses and checks each record)
    mmap = records is not None
    try:
        with warnings.catch_warnings():  # torch warns on quantized, complex32, sparse CSR, ...
            warnings.simplefilter("ignore")
            obj = torch.load(file, map_location="cpu", weights_only=True, mmap=mmap)
    except MemoryError:
        raise
    except pickle.UnpicklingError as err:
        # a refusal of what a well-formed file holds, or bytes the unpickler could not parse
        if not _torch_pickles_parse(file, container):
            raise TensorFileError(
                f"Got file {file!r}, which is not a readable torch file: it is corrupt or cut "
                "short (its pickled state does not parse to the end)") from None
        if _REFUSAL.search(str(err)):
            raise TensorFileError(
                f"Got torch file {file!r}, which holds more than tensors (torch.load with "
                f"weights_only=True refused it: {_refusal_line(err)})") from None
        raise TensorFileError(
            f"Got file {file!r}, which is not a readable torch file (torch.load with "
            f"weights_only=True could not read it: {_refusal_line(err)})") from None
    except Exception as err:  # noqa: BLE001 - torch's parsers fail on bad bytes in many ways
        # (KeyError, IndexError, TypeError, EOFError, RuntimeError, struct.error, ...)
        # (torch itself cannot load some well-formed files, e.g. legacy-format files of
        # float8 tensors: the message says what torch.load raised)
        raise TensorFileError(
            f"Got file {file!r}, which is not a readable torch file (it is corrupt or cut "
            "short, or holds what this version of torch.load cannot read): "
            f"{type(err).__name__}: {_first_line(err)}") from None
    flat: dict[str, Any] = {}
    mapped: list[Any] = []  # the tensors as loaded: their storages lie in the file's map

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(node, (list, tuple)):
            for i, v in enumerate(node):
                walk(f"{prefix}.{i}" if prefix else str(i), v)
        elif prefix in flat:  # {"a.b": x, "a": {"b": y}}: one would hide the other
            raise TensorFileError(
                f"Got torch file {file!r}, in which two entries are both named {prefix!r} once "
                "nested keys are joined with dots; rename one of them")
        elif isinstance(node, torch.Tensor):
            mapped.append(node)
            if node.is_neg() or node.is_conj():  # a lazy view: its storage holds -x or x*
                node = node.resolve_neg().resolve_conj()  # (a new storage, off the map)
            flat[prefix] = node
        else:  # None: not a tensor, listed as skipped
            flat[prefix] = None

    # a bare tensor (torch.save(t, "x.pt"): an activation dump) is named after its file,
    # as a .npy is
    walk("" if isinstance(obj, (dict, list, tuple)) else
         os.path.splitext(os.path.basename(file))[0], obj)
    if records is not None:
        _check_storage_sizes(file, mapped, records)
    return flat


def _storage_records(file: str) -> dict[int, int] | None:
    """The storage records (``<archive>/data/<key>``) of a zip torch file, as the offset of
    each one's bytes in the file -> its size, or None where one is compressed (a memory
    map would read its compressed bytes) or the archive cannot be read here (torch.load,
    reading it whole, then names what is wrong)."""
    try:
        with zipfile.ZipFile(file) as z, open(file, "rb") as f:
            infos = [i for i in z.infolist() if i.filename.rsplit("/", 2)[-2:-1] == ["data"]]
            if any(i.compress_type != zipfile.ZIP_STORED for i in infos):
                return None
            out = {}
            for i in infos:  # a record's bytes follow its local header and its names
                f.seek(i.header_offset)
                head = f.read(30)
                if len(head) < 30 or head[:4] != b"PK\x03\x04":
                    return None
                name_len, extra_len = struct.unpack("<HH", head[26:30])
                out[i.header_offset + 30 + name_len + extra_len] = i.file_size
            return out
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return None


def _check_storage_sizes(file: str, tensors: list[Any], records: dict[int, int]) -> None:
    """TensorFileError unless every storage a memory-mapped load gave lies at the start of
    a record of its own size: torch.load with ``mmap=True`` maps the whole file and cuts
    each storage from it at its record's offset without comparing sizes, so a record cut
    short or given another storage's bytes (a damaged file) would read past its end, where
    torch.load reading the file whole refuses it.  The map's base is found from the
    storage that lies first, which starts some record of its size."""
    storages = {}
    for t in tensors:
        try:
            s = t.untyped_storage()
        except (NotImplementedError, RuntimeError):  # sparse, quantized: no plain storage
            continue
        if s is not None and s.device.type == "cpu" and s.nbytes():  # (a meta tensor's
            storages[s.data_ptr()] = s.nbytes()                       # has no bytes)
    if not storages:
        return
    first = min(storages)
    for offset in sorted(o for o, size in records.items() if size == storages[first]):
        base = first - offset
        if all(records.get(ptr - base) == n for ptr, n in storages.items()):
            return
    raise TensorFileError(
        f"Got file {file!r}, which is not a readable torch file: its tensors' storages do "
        "not lie in records of their own sizes in the archive (it is corrupt)")


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


#: Where torch.load(weights_only=True) wraps its unpickler's own message in a long preamble
#: (and terminal escapes), the unpickler's message.
_UNPICKLER_MESSAGE = re.compile(r"(?:Unsupported (?:global|operand)|Trying to|Can only|"
                                r"String is too long|unsupported persistent|persistent_load|"
                                r"Only persistent_load|\S+ must be \S+ to load)[^\n]*")


def _refusal_line(err: BaseException) -> str:
    """What torch's weights_only unpickler objected to (``Unsupported global: GLOBAL
    fractions.Fraction ...``), else the first line of the message."""
    m = _UNPICKLER_MESSAGE.search(_ANSI.sub("", str(err)))
    return m.group(0).strip() if m else _first_line(err)


def _first_line(err: BaseException) -> str:
    """The first line of an error's message, without terminal escapes (torch's bold)."""
    text = _ANSI.sub("", str(err)).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _torch_numpy_dtype(tdtype: Any) -> np.dtype | None:
    import ml_dtypes  # imported here: it takes most of a second (and torch is loaded anyway)

    names: dict[str, Any] = {
        "float64": np.float64, "float32": np.float32, "float16": np.float16,
        "bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
        "float8_e5m2": ml_dtypes.float8_e5m2, "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
        "float8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
        "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu,
        "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8,
        "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
        "bool": np.bool_, "float4_e2m1fn_x2": ml_dtypes.float4_e2m1fn,  # (unpacked)
    }
    name = str(tdtype).removeprefix("torch.")
    scalar = names.get(name)
    return None if scalar is None else np.dtype(scalar)


def _check_torch_storage(name: str, path: str, t: Any) -> None:
    """TensorFileError for a tensor whose elements cannot be read as a dense array."""
    if t.device.type == "meta":
        raise TensorFileError(
            f"Got tensor {name!r} in {path!r} on the meta device, which holds no data "
            "(only a shape and dtype)")
    if t.layout is not _torch().strided:
        raise TensorFileError(
            f"Got tensor {name!r} in {path!r} of layout {t.layout} (not dense); save it dense "
            "(t.to_dense()) to read its elements")
    if getattr(t, "is_nested", False):
        raise TensorFileError(
            f"Got tensor {name!r} in {path!r}, a nested tensor (of rows of several lengths); "
            "save its rows as tensors of their own (t.unbind()) to read their elements")


def _torch_refs(path: str) -> tuple[list[TensorRef], list[str]]:
    state = _torch_state(path)
    out, skipped = [], []
    refusal: TensorFileError | None = None
    for name, t in state.items():
        if t is None:
            skipped.append(name)
            continue
        try:  # a tensor of no real numbers (complex, quantized, meta, sparse): left out
            _check_torch_storage(name, path, t)
            dtype = _torch_numpy_dtype(t.dtype)
            if dtype is None:
                raise TensorFileError(
                    f"Got tensor {name!r} in {path!r} of dtype {t.dtype}, which has no numpy "
                    "equivalent here")
            shape = tuple(t.shape)
            if str(t.dtype) == _TORCH_FP4:  # a byte of two codes: the last axis doubles
                shape = (*shape[:-1], 2 * shape[-1]) if shape else (2,)
            out.append(_ref(name, path, dtype, str(t.dtype), shape, loader="torch",
                            member=name))
        except TensorFileError as err:
            skipped.append(name)
            refusal = refusal or err
    if not out:
        raise refusal or TensorFileError(f"Got torch file {path!r}, which holds no tensors")
    return out, skipped


def _torch_flat(file: str, key: str) -> Any:
    return _torch_flat_of(_file_id(file), file, key)


@lru_cache(maxsize=4)
def _torch_flat_of(fid: _FileId, file: str, key: str) -> Any:
    """Tensor ``key`` of ``file`` flattened in C order: a view when it is contiguous, else
    one copy per process (``reshape(-1)`` of a transposed or column-sliced tensor copies
    the whole tensor, and did so for every chunk read)."""
    return _torch_state(file)[key].contiguous().reshape(-1)


def _torch_slice(file: str, key: str, start: int, stop: int) -> np.ndarray:
    torch = _torch()
    t = _torch_flat(file, key)
    dtype = _torch_numpy_dtype(t.dtype)
    assert dtype is not None
    if str(t.dtype) == _TORCH_FP4:  # element i in byte i // 2
        packed = t[start // 2:(stop + 1) // 2].contiguous().view(torch.uint8).numpy()
        return unpack_nibbles(packed, start % 2, stop - start).view(dtype)
    flat = t[start:stop]
    if dtype.kind == "b":
        return flat.numpy().copy()
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[dtype.itemsize]
    return flat.contiguous().view(ints).numpy().view(dtype).copy()


# ---------------------------------------------------------------- opening
def _file_refs(path: str) -> tuple[list[TensorRef], list[str]]:
    low = path.lower()
    if low.endswith(".safetensors"):
        return _safetensors(path)
    if low.endswith(".npz"):
        return _npz(path)
    if low.endswith(".npy"):
        return _npy(path), []
    if low.endswith(TORCH_SUFFIXES):
        return _torch_refs(path)
    raise TensorFileError(
        f"Got file {path!r}, but only .safetensors, .npz, .npy, {_TORCH_NAMES} files and "
        "*.index.json indexes hold tensors")


def _collect(path: str, files: list[str], kind: str, refs: list[TensorRef],
             skipped: list[str], unindexed: list[str] | None = None) -> Source:
    seen: dict[str, str] = {}
    for r in refs:
        if r.name in seen and seen[r.name] != r.file:
            raise TensorFileError(
                f"Got {path!r}, in which tensor {r.name!r} is in both {seen[r.name]!r} and "
                f"{r.file!r}")
        seen[r.name] = r.file
    if not refs:
        what = "directory" if kind == "directory" or os.path.isdir(path) else "file"
        raise TensorFileError(f"Got {what} {path!r}, which holds no tensors")
    return Source(path, kind, tuple(sorted(refs, key=lambda r: r.name)), tuple(files),
                  tuple(skipped), unindexed=tuple(unindexed or ()))


def _directory(path: str) -> Source:
    names = sorted(os.listdir(path))
    groups = ((".safetensors",), TORCH_SUFFIXES, (".npz", ".npy"))
    tensor_files = [n for n in names if n.lower().endswith(sum(groups, ()))
                    and _is_file(os.path.join(path, n))]
    indexes = [n for n in names if n.endswith(".index.json")]
    if indexes:
        pick = "model.safetensors.index.json" if "model.safetensors.index.json" in indexes \
            else indexes[0]
        refs, files, skipped, unindexed = _index(os.path.join(path, pick))
        return _unread(_collect(path, files, "sharded", refs, skipped, unindexed),
                       tensor_files)
    for group in groups:
        files = [os.path.join(path, n) for n in tensor_files if n.lower().endswith(group)]
        if files:
            refs, skipped = [], []
            for f in files:
                r, s = _file_refs(f)
                refs += r
                skipped += s
            return _unread(_collect(path, files, "sharded" if group == (".safetensors",) else
                                    "directory", refs, skipped), tensor_files)
    raise TensorFileError(
        f"Got directory {path!r}, which holds no tensor files (.safetensors, {_TORCH_NAMES}, "
        ".npz, .npy)")


def _unread(src: Source, tensor_files: list[str]) -> Source:
    """``src`` with the names of ``tensor_files`` (in its directory) it did not read."""
    read = {os.path.normcase(os.path.abspath(f)) for f in src.files}
    return replace(src, unread=tuple(
        n for n in tensor_files
        if os.path.normcase(os.path.abspath(os.path.join(src.path, n))) not in read))


def _is_file(path: str) -> bool:
    """Whether ``path`` is a regular file (following links); PermissionError where a directory
    on the way cannot be searched (``os.path.isfile`` would say False, and a directory of
    tensor files would look empty)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except PermissionError:
        raise
    except (OSError, ValueError):  # missing, a dangling link, a name the OS refuses
        return False


def _exists(path: str) -> bool:
    """``os.path.exists``, but True where the answer is hidden by a permission (the path is
    then opened, and the PermissionError says so, rather than "No such file")."""
    try:
        os.stat(path)
    except PermissionError:
        return True
    except (OSError, ValueError):
        return False
    return True


def _open_path(path: str) -> Source:
    if os.path.isdir(path):
        return _directory(path)
    try:  # FileNotFoundError, or PermissionError inside an unsearchable directory
        st = os.stat(path)
    except ValueError:
        raise TensorFileError(f"Got path {path!r}, which no file can have (a NUL character)") \
            from None
    if not stat.S_ISREG(st.st_mode):
        raise TensorFileError(f"Got path {path!r}, which is not a regular file (a pipe, "
                              "socket or device); tensors are read from files")
    if st.st_size == 0 and not path.lower().endswith(".npy"):
        raise TensorFileError(f"Got file {path!r}, which is empty")
    if path.lower().endswith(".json"):
        refs, files, skipped, unindexed = _index(path)
        return _collect(path, files, "sharded", refs, skipped, unindexed)
    refs, skipped = _file_refs(path)
    kind = {".safetensors": "safetensors", ".npz": "npz", ".npy": "npy"}.get(
        os.path.splitext(path.lower())[1], "torch")
    return _collect(path, [path], kind, refs, skipped)


def check_ref(ref: object, name: str) -> None:
    """TypeError naming ``name`` unless ``ref`` is a :class:`TensorRef`.

    Parameters
    ----------
    ref : object
        The argument to check.
    name : str
        The argument's name, quoted in the error message.

    Raises
    ------
    TypeError
        If ``ref`` is not a :class:`TensorRef`.
    """
    if not isinstance(ref, TensorRef):
        raise TypeError(f"Got {name}={ref!r}, but it must be a TensorRef (a tensor of "
                        "open_source(path).tensors)")


def open_source(path: str | bytes | os.PathLike[str]) -> Source:
    """The tensors a path names: a file, a directory of shards, an index, or ``PATH:KEY``.

    Parameters
    ----------
    path : str, bytes or path-like
        A ``.npy``, ``.npz``, ``.safetensors`` or torch file, a safetensors index
        (``*.index.json``), a directory of such files, or ``PATH:KEY`` for one tensor
        of one of them (the key after the last colon whose prefix exists).

    Returns
    -------
    Source
        The tensors (:class:`TensorRef`, read lazily through memory maps), with the
        files they live in and the entries left out as not real-number tensors of a readable dtype.

    Raises
    ------
    FileNotFoundError, PermissionError
        If the path does not exist or cannot be read.
    TensorFileError
        A file that is not a tensor file or is corrupt (a truncated
        safetensors header, an index naming a missing shard, a ``.npy`` that
        is empty or text, a torch file holding more than tensors, ...), a
        directory with no tensors, or a ``KEY`` the source does not hold.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> np.save(os.path.join(d, "x.npy"), np.arange(6, dtype=np.float32).reshape(2, 3))
    >>> src = open_source(os.path.join(d, "x.npy"))
    >>> [(t.name, t.dtype_name, t.shape, t.nbytes) for t in src.tensors]
    [('x', 'binary32', (2, 3), 24)]
    >>> src.tensors[0].read(1, 4).tolist()
    [1.0, 2.0, 3.0]
    """
    path = fs_path(path)
    release_maps()
    if _exists(path) or ":" not in path:
        return _anchored(_open_path(path))
    # PATH:KEY, the key after the last colon whose prefix exists
    cut = len(path)
    while True:
        cut = path.rfind(":", 0, cut)
        if cut <= 0:
            raise FileNotFoundError(2, "No such file or directory", path)
        base, key = path[:cut], path[cut + 1:]
        if _exists(base):
            break
    src = _open_path(base)
    if key in src.skipped:
        raise TensorFileError(f"Got key {key!r}, but in {base!r} it is not a tensor of real "
                              "numbers (ls lists it as left out)")
    if key not in src.names:
        shown = ", ".join(repr(k) for k in src.names[:8]) + (", ..." if len(src.names) > 8
                                                            else "")
        raise TensorFileError(f"Got key {key!r}, but {base!r} holds only {shown}")
    return _anchored(Source(path, "tensor", (src[key],), (src[key].file,), ()))


def _anchored(src: Source) -> Source:
    """``src`` with each tensor's ``root`` set: a relative file would be resolved
    against another directory by a Dask worker (or after a ``chdir``)."""
    cwd = os.getcwd()
    return replace(src, tensors=tuple(replace(t, root=cwd) for t in src.tensors))
