"""``VecMonitor``: episode returns and lengths of every env of a ``VecEnv`` (SB3's ``VecMonitor``).

The optional CSV file has the format of `rlkit_td3.monitor.Monitor` (and SB3's), so
`rlkit_td3.monitor.load_results()` reads it.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Sequence
from typing import Any, TextIO

import numpy as np

from rlkit_td3.fileio.serialization import atomic_write
from rlkit_td3.monitor import Monitor, _monitor_path
from rlkit_td3.vec_env.base_vec_env import VecEnv, VecEnvObs, VecEnvStepReturn, VecEnvWrapper


def _env_id(venv: VecEnv) -> str | None:
    try:
        spec = venv.get_attr("spec", indices=0)[0]
    except (AttributeError, IndexError):
        return None
    return getattr(spec, "id", None)


class VecMonitor(VecEnvWrapper):
    """Adds ``infos[i]["episode"] = {"r": return, "l": length, "t": seconds}`` when env ``i``'s episode ends.

    One wrapper for all envs, cheaper than a `Monitor` per env; it warns when the
    envs already have a ``Monitor`` (the episode statistics would then be recorded twice).

    Args:
        venv: the vectorized env to wrap.
        filename: ``None`` (no file), a folder (``<folder>/monitor.csv``) or a path prefix
            (``"logs/run"`` → ``logs/run.monitor.csv``); the file is started anew.
        info_keywords: keys of the final step's info to copy into the episode dict and the CSV row.
    """

    def __init__(
        self, venv: VecEnv, filename: str | os.PathLike[str] | None = None, info_keywords: Sequence[str] = ()
    ) -> None:
        try:
            monitored = any(venv.env_is_wrapped(Monitor))
        except (AttributeError, NotImplementedError):
            monitored = False
        if monitored:
            warnings.warn(
                "the envs are already wrapped with a Monitor; VecMonitor records the same episodes again",
                UserWarning,
                stacklevel=2,
            )
        super().__init__(venv)
        self.info_keywords = tuple(info_keywords)
        self.t_start = time.time()
        self.episode_count = 0
        self.episode_returns = np.zeros(self.num_envs, dtype=np.float64)
        self.episode_lengths = np.zeros(self.num_envs, dtype=np.int64)
        self._file: TextIO | None = None
        self.path = None
        if filename is not None:
            self.path = _monitor_path(filename)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            header = "#" + json.dumps({"t_start": self.t_start, "env_id": _env_id(venv)}) + "\n"
            header += ",".join(("r", "l", "t", *self.info_keywords)) + "\n"
            with atomic_write(self.path) as fh:
                fh.write(header.encode())
            self._file = open(self.path, "a")  # noqa: SIM115 - closed in close()

    def reset(self) -> VecEnvObs:
        obs = self.venv.reset()
        self.episode_returns[:] = 0.0
        self.episode_lengths[:] = 0
        return obs

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        self.episode_returns += rewards
        self.episode_lengths += 1
        infos = list(infos)
        for index in np.flatnonzero(dones):
            info = dict(infos[index])
            episode: dict[str, Any] = {
                "r": round(float(self.episode_returns[index]), 6),
                "l": int(self.episode_lengths[index]),
                "t": round(time.time() - self.t_start, 6),
            }
            for key in self.info_keywords:
                episode[key] = info.get(key)
            info["episode"] = episode
            infos[index] = info
            self.episode_count += 1
            self.episode_returns[index] = 0.0
            self.episode_lengths[index] = 0
            if self._file is not None:
                extra = ["" if episode[key] is None else str(episode[key]) for key in self.info_keywords]
                row = [repr(episode["r"]), str(episode["l"]), repr(episode["t"]), *extra]
                self._file.write(",".join(row) + "\n")
                self._file.flush()
        return obs, rewards, dones, infos

    def close(self) -> None:
        super().close()
        if self._file is not None:
            self._file.close()
            self._file = None


__all__ = ["VecMonitor"]
