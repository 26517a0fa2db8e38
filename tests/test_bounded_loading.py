"""Loading is bounded by what a file holds, not by what it declares: small hostile files are refused before any
large allocation, whichever door they come through.

Each load runs in a fresh interpreter under ``tracemalloc`` (which sees Python's and NumPy's allocations, also
pages never touched) and prints its peak. On the code before the one reader, these files made loading allocate
128 MiB (a deflated run of zeros as ``policy.pth`` under a large declared net) and 2 GiB (a VecNormalize file of
4 KiB whose statistics member declares 2**28 float64).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from rlkit_td3 import TD3
from rlkit_td3.fileio.file_reader import MAX_JSON_DEPTH, ModelFileError, ZipReader, json_depth, parse_json
from rlkit_td3.policies import TD3Policy
from rlkit_td3.vec_env import DummyVecEnv, VecNormalize

ROOT = Path(__file__).resolve().parents[1]
PEAK_LIMIT = 16 * 2**20
"""Largest tracemalloc peak (bytes) a refused load may reach: the bound, whatever the file declares."""

_PROBE = textwrap.dedent(
    """
    import sys, tracemalloc
    import gymnasium as gym
    from rlkit_td3 import TD3
    from rlkit_td3.policies import TD3Policy
    from rlkit_td3.vec_env import DummyVecEnv, VecNormalize
    door, path = sys.argv[1], sys.argv[2]
    venv = DummyVecEnv([lambda: gym.make("Pendulum-v1")])
    model = TD3("MlpPolicy", venv, policy_kwargs={"net_arch": [8]}) if door == "set_parameters" else None
    tracemalloc.start()
    try:
        if door == "TD3.load":
            TD3.load(path)
        elif door == "TD3Policy.load":
            TD3Policy.load(path)
        elif door == "set_parameters":
            model.set_parameters(path)
        else:
            VecNormalize.load(path, venv)
        outcome = "loaded"
    except ValueError as exc:
        outcome = type(exc).__name__
    print(outcome, tracemalloc.get_traced_memory()[1])
    """
)


def _probe(door: str, path: Path) -> tuple[str, int]:
    env = {"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, door, str(path)], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr[-2000:]
    outcome, peak = out.stdout.split()[-2:]
    return outcome, int(peak)


def _deflated_zeros(nbytes: int) -> bytes:
    """A raw deflate stream of ``nbytes`` zeros (about 1000 times smaller)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = bytes(2**22)
    parts = [packer.compress(chunk) for _ in range(nbytes // len(chunk))]
    return b"".join(parts) + packer.flush()


def _put_raw(archive: zipfile.ZipFile, name: str, size: int, deflated: bytes, crc: int) -> None:
    """Write an entry from an already deflated stream (its header honest: ``size`` bytes, ``crc``)."""
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.file_size, info.compress_size, info.CRC = size, len(deflated), crc
    archive.fp.write(info.FileHeader())
    info.header_offset = archive.fp.tell() - len(info.FileHeader())
    archive.fp.write(deflated)
    archive.filelist.append(info)
    archive.NameToInfo[name] = info
    archive.start_dir = archive.fp.tell()


def _zeros_crc(nbytes: int) -> int:
    crc, chunk = 0, bytes(2**22)
    for _ in range(nbytes // len(chunk)):
        crc = zlib.crc32(chunk, crc)
    return crc


@pytest.fixture(scope="module")
def zeros_files(tmp_path_factory):
    """A model file and a policy file whose metadata declares a legal net of ~50M parameters (4096x4096 layers)
    and whose ``policy.pth`` is 128 MiB of zeros, deflated to ~130 KB."""
    tmp = tmp_path_factory.mktemp("zeros")
    model = TD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]}, learning_starts=10, buffer_size=100)
    size = 128 * 2**20
    deflated, crc = _deflated_zeros(size), _zeros_crc(size)
    files = {}
    for door, save in (("TD3.load", model.save), ("TD3Policy.load", model.policy.save)):
        genuine = tmp / f"{door}.zip"
        save(genuine)
        with zipfile.ZipFile(genuine) as archive:
            metadata = json.loads(archive.read("metadata.json"))
            others = {n: archive.read(n) for n in archive.namelist() if n not in ("metadata.json", "policy.pth")}
        metadata["policy"]["kwargs"]["net_arch"] = [4096, 4096]
        forged = tmp / f"{door}-zeros.zip"
        with zipfile.ZipFile(forged, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("metadata.json", json.dumps(metadata))
            for name, raw in others.items():
                archive.writestr(name, raw)
            _put_raw(archive, "policy.pth", size, deflated, crc)
        files[door] = forged
    files["set_parameters"] = files["TD3.load"]
    return files


@pytest.mark.parametrize("door", ["TD3.load", "TD3Policy.load", "set_parameters"])
def test_deflated_zeros_under_a_large_declared_net_are_refused_before_they_are_inflated(zeros_files, door):
    with zipfile.ZipFile(zeros_files[door]) as archive:
        info = archive.getinfo("policy.pth")
    assert info.file_size == 128 * 2**20 and info.compress_size < 2**20  # the file is small, it declares a lot
    outcome, peak = _probe(door, zeros_files[door])
    assert outcome == "ModelFileError"
    assert peak < PEAK_LIMIT, f"{door} peaked at {peak / 2**20:.0f} MiB on a refused file"


def _vecnormalize_file(path: Path, declared: int, data: bytes, compress: int) -> Path:
    """A VecNormalize file whose ``obs_rms.mean`` member's ``.npy`` header declares ``declared`` float64."""
    venv = DummyVecEnv([lambda: __import__("gymnasium").make("Pendulum-v1")])
    VecNormalize(venv).save(path)
    with zipfile.ZipFile(path) as archive:
        config = archive.read("vec_normalize.json")
        stats = archive.read("statistics.npz")
    members = {}
    with zipfile.ZipFile(io.BytesIO(stats)) as inner:
        for name in inner.namelist():
            members[name] = inner.read(name)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (declared,)})
    members["obs_rms.mean.npy"] = header.getvalue() + data
    inner_bytes = io.BytesIO()
    with zipfile.ZipFile(inner_bytes, "w") as inner:
        for name, raw in members.items():
            inner.writestr(name, raw, compress_type=compress)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("vec_normalize.json", config)
        archive.writestr("statistics.npz", inner_bytes.getvalue())
    return path


def test_a_4_kib_vecnormalize_file_declaring_2_gib_is_refused_before_allocation(tmp_path):
    path = _vecnormalize_file(tmp_path / "vn.zip", 2**28, bytes(64), zipfile.ZIP_DEFLATED)
    assert path.stat().st_size < 4096
    outcome, peak = _probe("VecNormalize.load", path)
    assert outcome == "ModelFileError"
    assert peak < PEAK_LIMIT, f"VecNormalize.load peaked at {peak / 2**20:.0f} MiB on a 4 KiB file"


def test_an_honest_deflated_bomb_inside_the_npz_is_refused_by_its_ratio(tmp_path):
    # 2**21 float64 of zeros (16 MiB), deflated inside the npz: the header is honest, the ratio is not
    path = _vecnormalize_file(tmp_path / "vn.zip", 2**21, bytes(2**24), zipfile.ZIP_DEFLATED)
    with pytest.raises(ModelFileError, match="declares|expands"):
        VecNormalize.load(path, DummyVecEnv([lambda: __import__("gymnasium").make("Pendulum-v1")]))


def test_a_genuine_vecnormalize_file_still_loads(tmp_path):
    venv = DummyVecEnv([lambda: __import__("gymnasium").make("Pendulum-v1")])
    VecNormalize(venv).save(tmp_path / "vn.zip")
    assert isinstance(VecNormalize.load(tmp_path / "vn.zip", venv), VecNormalize)


def test_policy_load_refuses_an_expensive_torch_class(tmp_path):
    policy = TD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]}).policy
    policy.save(tmp_path / "p.zip")
    with zipfile.ZipFile(tmp_path / "p.zip") as archive:
        entries = {n: archive.read(n) for n in archive.namelist()}
    metadata = json.loads(entries["metadata.json"])
    metadata["policy"]["kwargs"]["activation_fn"] = "torch.nn.Transformer"
    entries["metadata.json"] = json.dumps(metadata).encode()
    with zipfile.ZipFile(tmp_path / "t.zip", "w") as archive:
        for name, raw in entries.items():
            archive.writestr(name, raw)
    with pytest.raises(ModelFileError, match="activation_fn.*Transformer"):
        TD3Policy.load(tmp_path / "t.zip")


def test_json_depth_is_checked_before_parsing():
    deep = b"[" * 200_000 + b"]" * 200_000  # json.loads alone raises RecursionError on this
    assert json_depth(deep) == 200_000
    with pytest.raises(ModelFileError, match="nested 200000 levels"):
        parse_json(deep, "x")
    assert json_depth(b'{"a": "[[[[[[", "b": [1, {"c": "\\\\"}]}') == 3  # brackets inside strings do not count
    assert parse_json(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH, "x") is not None


def test_a_tensor_that_views_more_than_its_storage_is_refused():
    import torch

    from rlkit_td3.fileio.file_reader import load_tensors

    buf = io.BytesIO()
    torch.save({"w": torch.zeros(1).expand(2**20)}, buf)  # saved as a view: 2**20 values over one
    with pytest.raises(ModelFileError, match="storage"):
        load_tensors(buf.getvalue(), "x")


def test_a_lying_compressed_size_is_refused(tmp_path):
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w") as archive:
        archive.writestr("a", b"x" * 100)
    data = bytearray(raw.getvalue())
    central = data.rfind(b"PK\x01\x02")
    data[central + 20 : central + 24] = (2**31).to_bytes(4, "little")  # compressed size in the central directory
    with pytest.raises(ModelFileError, match="compressed bytes"):
        ZipReader(bytes(data))


def _with_entry(genuine: Path, forged: Path, name: str, data: bytes) -> Path:
    """``genuine`` with entry ``name`` replaced (or added) by ``data``, stored uncompressed: no ratio to refuse."""
    with zipfile.ZipFile(genuine) as archive:
        others = {n: archive.read(n) for n in archive.namelist() if n != name}
    with zipfile.ZipFile(forged, "w", zipfile.ZIP_STORED) as archive:
        for entry, raw in others.items():
            archive.writestr(entry, raw)
        archive.writestr(name, data)
    return forged


@pytest.fixture(scope="module")
def noise_files(tmp_path_factory):
    """Files of a small declared net ([8]) whose ``policy.pth`` is 48 MiB of incompressible bytes (ratio 1), and
    a model file whose buffer entry is."""
    tmp = tmp_path_factory.mktemp("noise")
    model = TD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]}, learning_starts=10, buffer_size=100)
    noise = np.random.default_rng(0).bytes(48 * 2**20)
    model.save(tmp / "model.zip")
    model.policy.save(tmp / "policy.zip")
    return {
        "TD3Policy.load": _with_entry(tmp / "policy.zip", tmp / "policy-noise.zip", "policy.pth", noise),
        "set_parameters": _with_entry(tmp / "model.zip", tmp / "model-noise.zip", "policy.pth", noise),
        "buffer": _with_entry(tmp / "model.zip", tmp / "model-buffer-noise.zip", "replay_buffer.npz", noise),
    }


@pytest.mark.parametrize("door", ["TD3Policy.load", "set_parameters"])
def test_a_network_entry_larger_than_its_declared_net_is_refused_unread(noise_files, door):
    """The declared net ([8], about 300 parameters) bounds ``policy.pth`` at every door, not only at
    ``TD3.load``: 48 MiB that do not even compress are refused from the header, before a byte is read."""
    outcome, peak = _probe(door, noise_files[door])
    assert outcome == "ModelFileError"
    assert peak < PEAK_LIMIT, f"{door} peaked at {peak / 2**20:.0f} MiB on a refused file"
    with pytest.raises(ModelFileError, match=r"policy\.pth.*declares \d+ bytes, more than the \d+ it may hold"):
        TD3Policy.load(noise_files["TD3Policy.load"]) if door == "TD3Policy.load" else TD3(
            "MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]}
        ).set_parameters(noise_files[door])


def test_set_parameters_from_a_file_never_reads_its_buffer(noise_files):
    """``set_parameters(path)`` reads the networks' entries only: a model file whose buffer is 48 MiB of noise
    sets the parameters with a small peak, while ``TD3.load``, which reads the buffer, refuses the file."""
    outcome, peak = _probe("set_parameters", noise_files["buffer"])
    assert outcome == "loaded" and peak < PEAK_LIMIT, (outcome, peak / 2**20)
    with pytest.raises(ModelFileError):
        TD3.load(noise_files["buffer"])
