"""The plain-data unpickler behind ``save_util.load_from_pkl`` without ``allow_pickle``: it builds builtin
containers and scalars and NumPy arrays only, and what it builds is bounded by the file's size.

NumPy's own pickles are read as NumPy writes them; what NumPy trusts in them is checked first: the globals a pickle
names (`_PLAIN_GLOBALS`), the number a constructor would allocate from (``bytearray(n)``, ``bytes(n)``), the codec
of ``_codecs.encode`` (latin-1 only), an array's header against its data, a dtype's state against the dtype NumPy
makes from its description (its flags say whether items are object pointers), and the copies constructors and
arrays make (`PLAIN_DATA_COPY_FACTOR`). Used through ``file_reader.unpickle_plain_data``, which wraps every error
in ``ModelFileError``. Imports no other module of the package.
"""

from __future__ import annotations

import collections
import io
import math
import pickle
import sys
from typing import Any

import numpy as np

_PLAIN_GLOBALS = frozenset(
    {
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("builtins", "complex"),
        ("builtins", "bytearray"),
        ("builtins", "bytes"),  # protocols 0 to 2 write empty bytes as bytes()
        ("builtins", "slice"),
        ("collections", "OrderedDict"),
        ("collections", "deque"),
        ("_codecs", "encode"),  # bytes written with protocols below 3
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy.core.numeric", "_frombuffer"),  # protocol 5 (NumPy refuses object dtype there)
        ("numpy._core.numeric", "_frombuffer"),
    }
)
"""The only globals a plain-data pickle may name: constructors of data that run no code of the file's choosing.
An object array's items go through the same unpickler, so they are plain data too."""

PLAIN_DATA_COPY_FACTOR = 64
"""Everything a plain-data pickle builds is charged against one budget of this many times the file's size (plus
`PLAIN_DATA_COPY_FLOOR_BYTES`): every object an opcode makes (``sys.getsizeof``: an empty set from the one byte
``\x8f`` is 216 bytes), every slot it takes on the stack or in the memo, every container's growth, and every copy
a constructor or an array makes. A genuine pickle of small items builds 4 to 40 times its size (a list of small
ints about 22, a set of them up to about 50); a crafted one can ask for about 250 (one-byte empty sets) or call
a copying constructor on one remembered object thousands of times, and is refused once it passes the budget."""
PLAIN_DATA_COPY_FLOOR_BYTES = 4 * 2**20
PLAIN_DATA_PEAK_FACTOR = 80
"""The memory loading a plain-data pickle may take, measured (peak traced memory, every opcode and constructor
route of ``benchmarks/fuzz_pickle.py``): at most this many times the file's size plus `PLAIN_DATA_PEAK_FLOOR_BYTES`.
It is above the budget because the budget does not count the interpreter's own overhead (allocator rounding,
the stack list's spare slots, a frame's copy of its bytes); the Security page states it."""
PLAIN_DATA_PEAK_FLOOR_BYTES = 8 * 2**20
_SLOT_BYTES = 8  # a reference on the stack, in a list or in the memo's table
_MARK_BYTES = 64  # MARK starts a new (empty) stack list
_MAX_ZERO_SIZE_ITEMS = 65_536  # items of a zero-size dtype ("V0") hold no data: their count is capped instead
_ITEM_BYTES = {"set": 32, "frozenset": 32, "deque": 8, "OrderedDict": 64}  # table bytes per item a copy makes


class PlainDataUnpickler(pickle._Unpickler):  # noqa: SLF001  (the Python unpickler: its BUILD can be checked)
    """An unpickler that builds plain data only (`_PLAIN_GLOBALS`); any other global is refused, unresolved.

    It reads from bytes already in memory (a length declared past the end reads nothing more), charges every copy
    a constructor or an array makes against a budget proportional to the file's size (`PLAIN_DATA_COPY_FACTOR`),
    and checks an array's state against its dtype before NumPy builds it.
    """

    dispatch = dict(pickle._Unpickler.dispatch)  # noqa: SLF001  (wrapped below: every opcode is charged)

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file)
        self.budget = PLAIN_DATA_COPY_FACTOR * len(file.getbuffer()) + PLAIN_DATA_COPY_FLOOR_BYTES
        self.unbuilt: dict[int, np.dtype] = {}  # dtypes made by this pickle and not yet given their state
        self.built: dict[int, Any] = {}  # dtypes and arrays that have had their one BUILD (kept: ids stay unique)

    def charge(self, n_bytes: int, what: str) -> None:
        self.budget -= n_bytes
        if self.budget < 0:
            raise pickle.UnpicklingError(
                f"{what} makes the pickle build more than {PLAIN_DATA_COPY_FACTOR} times its own size plus "
                f"{PLAIN_DATA_COPY_FLOOR_BYTES // 2**20} MiB: a plain-data pickle builds about what it holds"
            )

    def find_class(self, module: str, name: str) -> Any:
        if module == "__builtin__":  # protocols 0 to 2 name the builtins module by its Python 2 name
            module = "builtins"
        if (module, name) not in _PLAIN_GLOBALS:
            raise pickle.UnpicklingError(
                f"it needs {module}.{name}, and without allow_pickle=True only plain data is read (builtin "
                "containers and scalars, NumPy arrays); pass allow_pickle=True for a file you trust"
            )
        constructors = {
            "bytearray": self._bytearray,
            "bytes": _empty_bytes,
            "encode": self._latin1_encode,
            "_reconstruct": _empty_array,
            "set": self._counted(set),
            "frozenset": self._counted(frozenset),
            "deque": self._counted(collections.deque),
            "OrderedDict": self._counted(collections.OrderedDict),
            "complex": self._complex,
            "_frombuffer": self._frombuffer,
            "dtype": self._dtype,
        }
        if name == "scalar":
            return self._scalar(super().find_class(module, name))
        if name == "ndarray":
            # NumPy's pickles name the class only as _reconstruct's first argument; called itself (REDUCE, NEWOBJ,
            # INST, OBJ) it would allocate an uninitialised array of any size from a number
            return NDARRAY_NAME
        return constructors.get(name) or super().find_class(module, name)

    def _scalar(self, make_scalar: Any) -> Any:
        def scalar(dtype: Any, *data: Any) -> Any:
            # scalar(dtype) alone allocates dtype.itemsize bytes (a "V1000000000" dtype is a gigabyte): NumPy's
            # pickles always give the item's bytes (or, for an object dtype, the object)
            dtype = self._usable(dtype)
            if len(data) != 1 or not (dtype.hasobject or isinstance(data[0], bytes) and len(data[0]) == dtype.itemsize):
                raise pickle.UnpicklingError("a NumPy scalar is made of its dtype and exactly its item's bytes")
            self.charge(dtype.itemsize, "a NumPy scalar")
            return make_scalar(dtype, *data)

        return scalar

    def _counted(self, build: Any) -> Any:
        def construct(*args: Any) -> Any:
            if args and not isinstance(args[0], (list, tuple, set, frozenset, dict, str, bytes)):
                raise pickle.UnpicklingError(f"{build.__name__} of {type(args[0]).__name__}: only of plain data")
            self.charge(_ITEM_BYTES[build.__name__] * (len(args[0]) if args else 1), build.__name__)
            return build(*args)

        return construct

    def _complex(self, *parts: Any) -> complex:
        if not all(isinstance(part, (int, float, str)) for part in parts):
            raise pickle.UnpicklingError("complex of other than numbers or a string")
        self.charge(sum(len(part) for part in parts if isinstance(part, str)), "complex")
        return complex(*parts)

    def _bytearray(self, data: Any = b"") -> bytearray:
        # bytearray(n) would allocate n bytes the file does not hold: only a copy of bytes it does
        if not isinstance(data, (bytes, bytearray)):
            raise pickle.UnpicklingError(f"bytearray of {type(data).__name__}: only of bytes")
        self.charge(len(data), "bytearray")
        return bytearray(data)

    def _latin1_encode(self, text: Any = "", encoding: Any = "latin1", *rest: Any) -> bytes:
        # protocols 0 to 2 write bytes as _codecs.encode(text, "latin1"); another codec (hex, base64, ...) could
        # expand what the file holds, and nested, grow it exponentially
        if rest or not isinstance(text, str) or not isinstance(encoding, str) or encoding not in ("latin1", "latin-1"):
            raise pickle.UnpicklingError("_codecs.encode other than (str, 'latin1'): a pickle writes bytes only so")
        self.charge(len(text), "_codecs.encode")
        return text.encode("latin1")

    def _dtype(self, *args: Any) -> np.dtype:
        if not args or len(args) > 3 or not all(isinstance(flag, bool) for flag in args[1:]):
            raise pickle.UnpicklingError("numpy.dtype(description, align, copy): NumPy's pickles pass two bools")
        made = np.dtype(*args)
        if len(args) == 3 and args[2] is True:  # a new copy (NumPy's pickles), which gets its state right after
            self.unbuilt[id(made)] = made
        return made

    def _usable(self, dtype: Any) -> np.dtype:
        # a dtype still waiting for its state could be changed under an array that uses it
        if not isinstance(dtype, np.dtype) or id(dtype) in self.unbuilt:
            raise pickle.UnpicklingError("an array or scalar needs a dtype that has its state")
        return dtype

    def _frombuffer(self, buffer: Any, dtype: Any, shape: Any, order: Any) -> np.ndarray:
        dtype = self._usable(dtype)
        if not isinstance(buffer, (bytes, bytearray)) or dtype.hasobject:
            raise pickle.UnpicklingError("an array of protocol 5 is made of bytes and a dtype without objects")
        _check_array_size(shape, dtype, len(buffer))
        self.charge(len(buffer), "an array")  # NumPy keeps the buffer or copies it: count it once per array
        return np.frombuffer(buffer, dtype=dtype).reshape(shape, order=order)

    def load_build(self) -> None:
        state = self.stack[-1]
        target = self.stack[-2]
        if isinstance(target, (np.ndarray, np.dtype)):
            if id(target) in self.built or (isinstance(target, np.dtype) and id(target) not in self.unbuilt):
                raise pickle.UnpicklingError("a dtype or array gets its state once, right after it is made")
            self.built[id(target)] = target
        if isinstance(target, np.dtype):
            # NumPy trusts a dtype's state (its flags say whether items are object pointers): apply it to a
            # scratch copy first and keep it only if it is the dtype NumPy itself makes from that description
            scratch = np.dtype(target.str, False, True)
            scratch.__setstate__(state)
            for part in _nested_dtypes(scratch):
                self._usable(part)  # a field's dtype changed later would change this one's layout
            _check_canonical_dtype(scratch)
            del self.unbuilt[id(target)]
        if isinstance(target, np.ndarray):
            if not isinstance(state, tuple) or len(state) not in (4, 5):
                raise pickle.UnpicklingError("an array's state is NumPy's (version, shape, dtype, fortran, data)")
            shape, dtype, data = state[-4], self._usable(state[-3]), state[-1]
            if isinstance(data, list):
                _check_array_size(shape, np.dtype(object), 8 * len(data))
                self.charge(8 * len(data), "an object array")
            elif isinstance(data, (bytes, bytearray, str)):
                _check_array_size(shape, dtype, len(data))
                self.charge(len(data), "an array")
            else:
                raise pickle.UnpicklingError(f"an array's data is {type(data).__name__}: only bytes or a list")
        super().load_build()

    dispatch[pickle.BUILD[0]] = load_build

    def charge_new(self) -> None:
        """Charge the object an opcode has just pushed, and its slot on the stack."""
        self.charge(sys.getsizeof(self.stack[-1]) + _SLOT_BYTES, "an object")


# What each opcode builds, charged after it runs (an opcode not named here pushes one new object: `charge_new`).
_PUSH_REFERENCE = {"GET", "BINGET", "LONG_BINGET", "DUP", "NONE", "NEWTRUE", "NEWFALSE", "EMPTY_TUPLE", "BININT1"}
_NO_GROWTH = {"POP", "POP_MARK", "STOP", "PROTO", "FRAME", "BUILD"}  # BUILD charges arrays itself
_MEMO = {"PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"}
_GROWTH = {"APPEND": -2, "SETITEM": -3, "APPENDS": None, "SETITEMS": None, "ADDITEMS": None}  # where the container is


def _charged(name: str, run: Any) -> Any:
    if name in _NO_GROWTH:
        return run
    if name in _PUSH_REFERENCE:

        def reference(self: PlainDataUnpickler) -> None:
            run(self)
            self.charge(_SLOT_BYTES, "a stack slot")

        return reference
    if name == "MARK":

        def mark(self: PlainDataUnpickler) -> None:
            run(self)
            self.charge(_MARK_BYTES, "a mark")

        return mark
    if name in _MEMO:

        def memo(self: PlainDataUnpickler) -> None:
            before = sys.getsizeof(self.memo)
            run(self)
            self.charge(sys.getsizeof(self.memo) - before + 32 + _SLOT_BYTES, "the memo")  # its table and key

        return memo
    if name in _GROWTH:
        depth = _GROWTH[name]

        def grow(self: PlainDataUnpickler) -> None:
            container = self.stack[depth] if depth is not None else self.metastack[-1][-1]
            before = sys.getsizeof(container)
            run(self)
            self.charge(max(sys.getsizeof(container) - before, 0), "a container")

        return grow

    def new(self: PlainDataUnpickler) -> None:
        run(self)
        self.charge_new()

    return new


for _name in dir(pickle):
    _code = getattr(pickle, _name)
    if _name.isupper() and isinstance(_code, bytes) and len(_code) == 1 and _code[0] in PlainDataUnpickler.dispatch:
        PlainDataUnpickler.dispatch[_code[0]] = _charged(_name, PlainDataUnpickler.dispatch[_code[0]])


def _canonical_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype NumPy makes from ``dtype``'s description (its string, sub-array or fields), not from its state."""
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        return np.dtype((_canonical_dtype(base), shape))
    if dtype.names is not None:
        fields = [dtype.fields[name] for name in dtype.names]
        spec = {
            "names": list(dtype.names),
            "formats": [_canonical_dtype(field[0]) for field in fields],
            "offsets": [field[1] for field in fields],
            "itemsize": dtype.itemsize,
        }
        if any(len(field) == 3 for field in fields):
            spec["titles"] = [field[2] if len(field) == 3 else None for field in fields]
        return np.dtype(spec, align=dtype.isalignedstruct)
    return np.dtype(dtype.str)


def _nested_dtypes(dtype: np.dtype) -> list[np.dtype]:
    """The dtypes ``dtype`` is made of: its sub-array's base and its fields' dtypes (one level)."""
    parts = [dtype.subdtype[0]] if dtype.subdtype is not None else []
    return parts + [field[0] for field in (dtype.fields or {}).values()]


def _check_canonical_dtype(dtype: np.dtype) -> None:
    canonical = _canonical_dtype(dtype)
    made, expected = ((d.flags, d.itemsize, d.alignment, d.hasobject, d.isalignedstruct) for d in (dtype, canonical))
    if made != expected:
        raise pickle.UnpicklingError(
            f"a dtype's state (flags, itemsize, alignment {made}) is not NumPy's for {dtype.str!r:.80} {expected}"
        )


def _check_array_size(shape: Any, dtype: np.dtype, available: int) -> None:
    # what an array declares must fit in what the file gave for it; zero-size items fit in anything: capped
    dims = shape if isinstance(shape, tuple) else (shape,)
    if not all(isinstance(d, int) and 0 <= d for d in dims):
        raise pickle.UnpicklingError(f"an array's shape {dims!r:.80} is not of non-negative ints")
    count = math.prod(dims)
    if count * dtype.itemsize > available or (dtype.itemsize == 0 and count > _MAX_ZERO_SIZE_ITEMS):
        raise pickle.UnpicklingError(
            f"an array declares {count} items of {dtype.itemsize} bytes, more than its {available} bytes of data "
            f"hold (items of zero size: at most {_MAX_ZERO_SIZE_ITEMS})"
        )


def _empty_bytes(*args: Any) -> bytes:
    # bytes(n) would allocate n bytes the file does not hold: protocols 0 to 2 only ever call bytes()
    if args:
        raise pickle.UnpicklingError("bytes(...) with arguments: a pickle writes only bytes()")
    return b""


class _NdarrayName:
    """What the name ``numpy.ndarray`` resolves to in a plain-data pickle: a marker ``_reconstruct`` accepts as its
    class, which builds nothing when called."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise pickle.UnpicklingError("numpy.ndarray called with a shape: NumPy's pickles never size an array so")

    def __repr__(self) -> str:
        return "numpy.ndarray (a name only)"


NDARRAY_NAME = _NdarrayName()


def _empty_array(cls: Any, shape: Any, dtype: Any) -> np.ndarray:
    # NumPy pickles an array as an empty one filled by __setstate__ from the file's bytes; a larger starting
    # shape would allocate memory the file does not hold
    if cls is not NDARRAY_NAME or math.prod(np.atleast_1d(np.asarray(shape, dtype=np.int64)).tolist()) != 0:
        raise pickle.UnpicklingError("an array must start empty (NumPy's own pickles do)")
    return np.ndarray.__new__(np.ndarray, shape, dtype)
