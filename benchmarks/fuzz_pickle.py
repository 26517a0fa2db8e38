"""Cases for the plain-data pickle door (``save_util.load_from_pkl`` without ``allow_pickle``), used by
``fuzz_doors.py``.

A genuine plain-data pickle (the kind of object a user saves with ``save_to_pkl``: arrays, containers, scalars)
is re-pickled at a random protocol (0 to 5) and then corrupted: truncated, bytes flipped, a declared length
changed, a foreign opcode sequence spliced in, a leaf of the object replaced before pickling, or replaced by a
hand-written hostile pickle (a forbidden global, a codec or constructor that would grow what the file holds,
arrays whose header declares more than their data, dtypes whose state lies about their items, lengths far past the
file's end, memo amplification), and the two routes of issue 45: every allowed class called with numbers instead
of data through every opcode that calls one (REDUCE, NEWOBJ, NEWOBJ_EX, OBJ, INST), and opcodes that build
without any constructor (one-byte empty sets, dicts, lists, marks, memo entries, repeated up to a megabyte).

``fuzz_doors.py`` checks each case's peak memory against the documented bound of its size,
``plain_pickle.PLAIN_DATA_PEAK_FACTOR`` times it plus ``PLAIN_DATA_PEAK_FLOOR_BYTES`` (`peak_bound`).
"""

from __future__ import annotations

import collections
import pickle
import pickletools
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from rlkit_td3.fileio.plain_pickle import _PLAIN_GLOBALS, PLAIN_DATA_PEAK_FACTOR, PLAIN_DATA_PEAK_FLOOR_BYTES
from rlkit_td3.save_util import load_from_pkl

WALKED_NODES = 10_000  # use_pickle visits at most this many nodes: its own memory (about 1 MiB) stays small

ODD_LEAVES: list[Any] = [
    None,
    float("nan"),
    2**200,
    -(2**70),
    "x" * 1000,
    b"\x00" * 1000,
    bytearray(b"ab"),
    [[[[[]]]]],
    {(): frozenset({1})},
    np.array(["a", None, 1.5], dtype=object),
    np.zeros((3, 0, 2)),
    np.arange(6, dtype=">i4").reshape(2, 3)[:, ::2],
    np.zeros(3, dtype=[("a", "f4"), ("b", "S3")]),
    np.float16(1),
    np.datetime64("2026-01-01"),
    collections.deque(range(5), maxlen=2),
    slice(None, 3, -1),
    complex("nan+1j"),
]


def plain_data() -> dict[str, Any]:
    """The genuine object: what a user saves with ``save_to_pkl`` (a small offline data set and its notes)."""
    rng = np.random.default_rng(0)
    return {
        "observations": rng.standard_normal((20, 3)).astype(np.float32),
        "actions": rng.uniform(-2, 2, (20, 1)).astype(np.float32),
        "rewards": rng.standard_normal(20),
        "terminated": np.zeros(20, dtype=bool),
        "infos": [{"TimeLimit.truncated": i == 19} for i in range(20)],
        "settings": collections.OrderedDict(gamma=0.99, tau=0.005, net_arch=(8, 8)),
        "recent": collections.deque([1.5, 2.5], maxlen=10),
        "tags": {"pendulum", "td3"},
        "frozen": frozenset({1, 2}),
        "raw": b"\x00\x01rlkit",
        "buffer": bytearray(b"abc"),
        "complex": 1 + 2j,
        "steps": np.int64(20),
        "names": np.array(["a", None], dtype=object),
        "window": slice(0, 20, 2),
        "empty": b"",
    }


def use_pickle(path: Any) -> str:
    """Load ``path`` as plain data and walk what loaded (iteratively: a loaded structure may be deep or cyclic)."""
    obj = load_from_pkl(path)
    seen: set[int] = set()
    stack = [obj]
    items = 0
    while stack and items < WALKED_NODES:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        items += 1
        if isinstance(node, dict):
            stack += [*node.keys(), *node.values()]
        elif isinstance(node, (list, tuple, set, frozenset, collections.deque)):
            stack += list(node)
        elif isinstance(node, np.ndarray):
            node.nbytes  # noqa: B018  (a loaded array answers its size)
            if node.dtype == object:
                stack += list(node.ravel()[:1000])
    return "loaded"


# ---------------------------------------------------------------------------- hand-written hostile pickles
def _global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _bin_unicode(text: str) -> bytes:
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _bin_bytes(raw: bytes) -> bytes:
    return b"B" + struct.pack("<I", len(raw)) + raw


def _int(n: int) -> bytes:
    return b"J" + struct.pack("<i", n) if -(2**31) <= n < 2**31 else b"L" + str(n).encode() + b"L\n"


def _call(callable_: bytes, *args: bytes) -> bytes:
    return callable_ + b"(" + b"".join(args) + b"tR"


def _proto(body: bytes, protocol: int = 2) -> bytes:
    return b"\x80" + bytes([protocol]) + body + b"."


def _forbidden(rng: np.random.Generator) -> bytes:
    module, name = [
        ("os", "system"),
        ("builtins", "eval"),
        ("builtins", "getattr"),
        ("subprocess", "Popen"),
        ("numpy", "load"),
        ("torch", "load"),
        ("numpy", "frombuffer"),
        ("collections", "namedtuple"),
        ("__builtin__", "exec"),
    ][int(rng.integers(9))]
    return _proto(_call(_global(module, name), _bin_unicode("echo owned")))


def _codec_growth(rng: np.random.Generator) -> bytes:
    codec = ["hex", "base64", "uu", "zlib", "rot13", "utf-16"][int(rng.integers(6))]
    body = _bin_unicode("A" * 64)
    for _ in range(int(rng.integers(1, 31))):
        body = _call(_global("_codecs", "encode"), body, _bin_unicode(codec))
    return _proto(body)


def _sized_constructor(rng: np.random.Generator) -> bytes:
    name = ["bytearray", "bytes", "set", "frozenset", "complex", "slice"][int(rng.integers(6))]
    return _proto(_call(_global("builtins", name), _int(int(rng.choice([2**30, 2**31 - 1, 2**40, -1])))))


def _reconstruct(
    shape: tuple, dtype: bytes, state_shape: tuple, data: bytes, module: str = "numpy.core.multiarray"
) -> bytes:
    shape_b = b"(" + b"".join(_int(d) for d in shape) + b"t"
    array = _call(_global(module, "_reconstruct"), _global("numpy", "ndarray"), shape_b, _bin_bytes(b"b"))
    dtype_b = _call(_global("numpy", "dtype"), _bin_unicode(dtype.decode()), b"\x89\x88")  # dtype(str, False, True)
    state_shape_b = b"(" + b"".join(_int(d) for d in state_shape) + b"t"
    state = b"(" + _int(1) + state_shape_b + dtype_b + b"\x89" + _bin_bytes(data) + b"tb"
    return _proto(array + state)


def _lying_array(rng: np.random.Generator) -> bytes:
    case = int(rng.integers(6))
    if case == 0:  # starts non-empty: would allocate before any data is read
        return _reconstruct((2**30,), b"f8", (1,), bytes(8))
    if case == 1:  # declares far more elements than its data holds
        return _reconstruct((0,), b"f8", (2**40,), bytes(8))
    if case == 2:  # zero-size items: any count fits in no bytes
        return _reconstruct((0,), b"V0", (2**50,), b"")
    if case == 3:  # a sub-array dtype declaring terabytes
        body = _call(_global("numpy", "dtype"), b"(" + _bin_unicode("f8") + b"(" + _int(2**20) + _int(2**20) + b"tt")
        return _proto(body)
    if case == 4:  # protocol 5's constructor with a lying shape
        shape = b"(" + _int(2**30) + b"t"
        dtype_b = _call(_global("numpy", "dtype"), _bin_unicode("f8"), b"\x89\x88")
        return _proto(
            _call(
                _global("numpy.core.numeric", "_frombuffer"), _bin_bytes(bytes(16)), dtype_b, shape, _bin_unicode("C")
            )
        )
    return _reconstruct((0,), b"O", (2**30,), b"")  # an object array whose state is not a list


def _past_the_end(rng: np.random.Generator) -> bytes:
    opcode, fmt = [(b"\x8e", "<Q"), (b"\x8d", "<Q"), (b"\x8b", "<i"), (b"\x96", "<Q"), (b"X", "<I"), (b"\x95", "<Q")][
        int(rng.integers(6))
    ]
    size = int(rng.choice([2**31 - 1, 2**40])) if fmt == "<Q" else 2**31 - 1
    return b"\x80\x05" + opcode + struct.pack(fmt, size) + b"\x00" * 16 + b"."


def _memo_amplification(rng: np.random.Generator) -> bytes:
    # one 64 KiB string in the memo, then a copying constructor called on it many times
    name = [("builtins", "bytearray"), ("_codecs", "encode"), ("builtins", "set"), ("collections", "deque")][
        int(rng.integers(4))
    ]
    if name[0] == "_codecs":
        seed, args = _bin_unicode("a" * 65536), b"h\x00" + _bin_unicode("latin1")
    elif name[1] == "bytearray":
        seed, args = _bin_bytes(b"a" * 65536), b"h\x00"
    else:
        seed, args = b"(" + b"".join(_int(i) for i in range(8192)) + b"l", b"h\x00"
    calls = b"".join(_global(*name) + b"(" + args + b"tR" for _ in range(4000))
    return _proto(seed + b"q\x00" + b"0" + b"(" + calls + b"l")


def _dtype_state(code: str, byteorder: str, elsize: int, flags: int, copy: bool = True) -> bytes:
    made = _call(_global("numpy", "dtype"), _bin_unicode(code), b"\x89", b"\x88" if copy else b"\x89")
    state = b"(" + _int(3) + _bin_unicode(byteorder) + b"NNN" + _int(elsize) + _int(-1) + _int(flags) + b"t"
    return made + state + b"b"


def _forged_dtype(rng: np.random.Generator) -> bytes:
    # NumPy trusts a dtype's state: its flags say whether items are object pointers, elsize how big an item is
    case = int(rng.integers(5))
    code, byteorder, elsize, flags = [
        ("O", "|", -1, 0),
        ("f8", "<", -1, 63),
        ("V8", "|", 2**20, 0),
        ("f8", "<", -1, 0),
    ][min(case, 3)]
    dtype = _dtype_state(code, byteorder, elsize, flags, copy=case != 4)  # case 4: the process-wide float64
    state_shape = b"(" + _int(2) + b"t"
    array = _call(
        _global("numpy.core.multiarray", "_reconstruct"),
        _global("numpy", "ndarray"),
        b"(" + _int(0) + b"t",
        _bin_bytes(b"b"),
    )
    return _proto(array + b"(" + _int(1) + state_shape + dtype + b"\x89" + _bin_bytes(b"A" * 16) + b"tb")


def peak_bound(size: int) -> int:
    """The documented bound, in bytes, on the memory loading a plain-data pickle of ``size`` bytes may take."""
    return PLAIN_DATA_PEAK_FACTOR * size + PLAIN_DATA_PEAK_FLOOR_BYTES


def _number_sized(rng: np.random.Generator) -> bytes:
    # any allowed class called with numbers where NumPy's pickles give data, through every opcode that calls one
    module, name = sorted(_PLAIN_GLOBALS)[int(rng.integers(len(_PLAIN_GLOBALS)))]
    numbers = [_int(int(rng.choice([2**27, 2**30, 2**31 - 1, 16, 0, -1]))) for _ in range(int(rng.integers(1, 4)))]
    if name == "scalar" and rng.random() < 0.5:  # a scalar of a gigabyte void dtype, without its bytes
        numbers = [_call(_global("numpy", "dtype"), _bin_unicode(f"V{2**30}"))]
    cls, args = _global(module, name), b"".join(numbers)
    route = int(rng.integers(5))
    if route == 0:
        return _proto(cls + b"(" + args + b"tR")  # REDUCE
    if route == 1:
        return _proto(cls + b"(" + args + b"t\x81")  # NEWOBJ
    if route == 2:
        return _proto(cls + b"(" + args + b"t}\x92", 4)  # NEWOBJ_EX
    if route == 3:
        return _proto(b"(" + cls + args + b"o")  # OBJ
    return b"(" + args + b"i" + module.encode() + b"\n" + name.encode() + b"\n."  # INST (protocol 0)


_GROWTH_UNITS = [b"\x8f", b"}", b"]", b"(", b"\x8f\x94", b"(\x91", b"}\x94", b"2", b"N\x94", b"\x8c\x00\x94"]
_GROWTH_UNITS += [b"}\x94h\x00", b"h\x00"]


def _opcode_growth(rng: np.random.Generator) -> bytes:
    # opcodes that build without any constructor: ~250 bytes of objects per file byte if nothing charged them
    unit = _GROWTH_UNITS[int(rng.integers(len(_GROWTH_UNITS)))]
    size = int(rng.choice([2**14, 2**17, 2**20]))
    return _proto(b"}\x94](}" + unit * (size // len(unit)) + b"e", 4)


def _deep(rng: np.random.Generator) -> bytes:
    depth = int(rng.choice([1000, 100_000]))
    return _proto(b"]" * depth + b"a" * (depth - 1))


HOSTILE: list[Callable[[np.random.Generator], bytes]] = [
    _forbidden,
    _codec_growth,
    _sized_constructor,
    _lying_array,
    _past_the_end,
    _memo_amplification,
    _forged_dtype,
    _deep,
    _number_sized,
    _opcode_growth,
]


# ---------------------------------------------------------------------------- mutations
def _opcode_positions(raw: bytes) -> list[tuple[int, str]]:
    try:
        return [(pos, op.name) for op, _, pos in pickletools.genops(raw) if pos is not None]
    except Exception:  # noqa: BLE001  (a corrupted pickle: its readable prefix is enough)
        return [(0, "PROTO")]


def _replace_leaf(rng: np.random.Generator, obj: dict) -> dict:
    key = sorted(obj)[int(rng.integers(len(obj)))]
    return {**obj, key: ODD_LEAVES[int(rng.integers(len(ODD_LEAVES)))]}


def mutate_pickle(rng: np.random.Generator, genuine: bytes) -> tuple[str, bytes]:
    """One corruption of the plain-data pickle ``genuine`` (re-pickled at a random protocol first)."""
    obj = pickle.loads(genuine)  # noqa: S301  (our own genuine file)
    protocol = int(rng.integers(0, 6))
    roll = rng.random()
    if roll < 0.3:
        kind = HOSTILE[int(rng.integers(len(HOSTILE)))]
        return f"hostile:{kind.__name__}", kind(rng)
    if roll < 0.45:
        return f"leaf:p{protocol}", pickle.dumps(_replace_leaf(rng, obj), protocol)
    raw = pickle.dumps(obj, protocol)
    if roll < 0.55:
        return f"truncate:p{protocol}", raw[: int(rng.integers(0, len(raw)))]
    if roll < 0.7:
        data = bytearray(raw)
        for pos in rng.integers(0, len(data), size=int(rng.integers(1, 10))):
            data[pos] ^= int(rng.integers(1, 256))
        return f"flip:p{protocol}", bytes(data)
    positions = _opcode_positions(raw)
    pos, op = positions[int(rng.integers(len(positions)))]
    if roll < 0.85:  # a length or argument after an opcode made huge, negative or zero
        value = int(rng.choice([0, 1, 2**31 - 1, 2**32 - 1, 2**63 - 1]))
        width = int(rng.choice([1, 4, 8]))
        patch = value.to_bytes(8, "little")[:width]
        return f"argument:{op}:p{protocol}", raw[: pos + 1] + patch + raw[pos + 1 + width :]
    snippet = HOSTILE[int(rng.integers(len(HOSTILE)))](rng)[2:-1]  # a hostile body spliced into a genuine file
    return f"splice:{op}:p{protocol}", raw[:pos] + snippet + raw[pos:]
