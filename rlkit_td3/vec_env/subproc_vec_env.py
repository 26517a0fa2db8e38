"""``SubprocVecEnv``: one worker process per env, for envs slow enough to be worth it (SB3's ``SubprocVecEnv``).

Each worker owns one env and answers commands sent through a pipe. An exception inside a worker comes back
to the caller as a ``RuntimeError`` holding the worker's traceback (SB3's workers die and leave an
``EOFError``); the worker keeps serving, so ``close()`` still works.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
import numpy as np

from rlkit_td3.vec_env.base_vec_env import CloudpickleWrapper, VecEnv, VecEnvIndices, VecEnvObs, VecEnvStepReturn
from rlkit_td3.vec_env.dummy_vec_env import _check_env, _check_env_fns
from rlkit_td3.vec_env.util import dict_to_obs, is_wrapped, obs_space_info, obs_to_dict


def _handle(env: gym.Env, command: str, data: Any) -> Any:
    """What a worker does for one command."""
    if command == "step":
        obs, reward, terminated, truncated, info = env.step(data)
        done = terminated or truncated
        info = dict(info)
        info["TimeLimit.truncated"] = bool(truncated and not terminated)
        reset_info = None
        if done:
            info["terminal_observation"] = obs
            obs, reset_info = env.reset()
        return obs, reward, done, info, reset_info
    if command == "reset":
        seed, options = data
        return env.reset(seed=seed, **({"options": options} if options else {}))
    if command == "render":
        return env.render()
    if command == "get_spaces":
        return env.observation_space, env.action_space
    if command == "env_method":
        name, args, kwargs = data
        return env.get_wrapper_attr(name)(*args, **kwargs)
    if command == "get_attr":
        return env.get_wrapper_attr(data)
    if command == "has_attr":
        try:
            env.get_wrapper_attr(data)
        except AttributeError:
            return False
        return True
    if command == "set_attr":
        return env.set_wrapper_attr(*data)
    if command == "is_wrapped":
        return is_wrapped(env, data)
    raise ValueError(f"unknown worker command {command!r}")


def _worker(remote: Connection, parent_remote: Connection, env_fn: CloudpickleWrapper, index: int) -> None:
    """Serve one env: answer ``(command, data)`` with ``(True, result)`` or ``(False, traceback text)``."""
    parent_remote.close()
    # SDL (pygame, which renders classic-control envs) otherwise catches SIGTERM on its first render, and the
    # worker would ignore the terminate() multiprocessing sends daemon processes at exit: an unclosed
    # SubprocVecEnv that had rendered would hang the interpreter's exit.
    os.environ.setdefault("SDL_NO_SIGNAL_HANDLERS", "1")
    try:
        env = _check_env(env_fn.var(), index)
    except Exception:  # noqa: BLE001 - sent back to the parent, which raises it
        remote.send((False, traceback.format_exc()))
        remote.close()
        return
    remote.send((True, None))
    try:
        while True:
            command, data = remote.recv()
            if command == "close":
                env.close()
                remote.send((True, None))
                break
            try:
                remote.send((True, _handle(env, command, data)))
            except Exception:  # noqa: BLE001 - sent back to the parent, which raises it
                remote.send((False, traceback.format_exc()))
    except (KeyboardInterrupt, EOFError, BrokenPipeError):
        pass
    finally:
        remote.close()


class SubprocVecEnv(VecEnv):
    """Runs each env in its own process and steps them in parallel.

    The env functions are sent to the workers with cloudpickle, so lambdas work; what the envs return
    (observations, infos) must be picklable. Call `close()` when done.

    Args:
        env_fns: one function per env, each returning a new ``gymnasium.Env``.
        start_method: ``multiprocessing`` start method: ``"forkserver"`` (the default where available, as in
            SB3), ``"spawn"`` or ``"fork"`` (fast but unsafe once threads or torch are running).

    Raises:
        ValueError: ``env_fns`` is empty or ``start_method`` is not available here.
        RuntimeError: an env function failed in its worker (the message holds the worker's traceback).
    """

    def __init__(self, env_fns: list[Callable[[], gym.Env]], start_method: str | None = None) -> None:
        fns = _check_env_fns(env_fns)
        self.waiting = False
        self.closed = False
        methods = mp.get_all_start_methods()
        if start_method is None:
            start_method = "forkserver" if "forkserver" in methods else "spawn"
        if start_method not in methods:
            raise ValueError(f"cannot find context for {start_method!r}: start_method must be one of {methods} or None")
        ctx = mp.get_context(start_method)
        pipes = [ctx.Pipe() for _ in fns]
        self.remotes: list[Connection] = [parent for parent, _ in pipes]
        self.processes = []
        for index, ((remote, work_remote), fn) in enumerate(zip(pipes, fns)):
            process = ctx.Process(
                target=_worker, args=(work_remote, remote, CloudpickleWrapper(fn), index), daemon=True
            )
            process.start()
            self.processes.append(process)
            work_remote.close()
        try:
            self._receive_all(self.remotes)
            self.remotes[0].send(("get_spaces", None))
            observation_space, action_space = self._receive(self.remotes[0])
        except BaseException:
            self._terminate()
            raise
        self._keys, _, _ = obs_space_info(observation_space)
        super().__init__(len(fns), observation_space, action_space)
        self.metadata = self.get_attr("metadata", [0])[0]

    @staticmethod
    def _receive(remote: Connection) -> Any:
        return SubprocVecEnv._receive_all([remote])[0]

    @staticmethod
    def _receive_all(remotes: Sequence[Connection]) -> list[Any]:
        """Every worker's answer (all are read, so the pipes stay in step), or the first error."""
        answers = []
        for remote in remotes:
            try:
                answers.append(remote.recv())
            except EOFError:
                answers.append((False, "the worker died without answering"))
        for ok, payload in answers:
            if not ok:
                raise RuntimeError(f"a SubprocVecEnv worker raised:\n{payload}")
        return [payload for _, payload in answers]

    def _stack(self, observations: Sequence[Any]) -> VecEnvObs:
        parts = [obs_to_dict(self.observation_space, obs) for obs in observations]
        return dict_to_obs(self.observation_space, {key: np.stack([part[key] for part in parts]) for key in self._keys})

    def step_async(self, actions: np.ndarray) -> None:
        self._check_open()
        actions = self._check_actions(actions)
        for remote, action in zip(self.remotes, actions):
            remote.send(("step", action))
        self.waiting = True

    def step_wait(self) -> VecEnvStepReturn:
        if not self.waiting:
            raise RuntimeError("step_wait() was called without a step_async(actions) before it")
        try:
            results = self._receive_all(self.remotes)
        finally:
            self.waiting = False
        obs, rewards, dones, infos, reset_infos = zip(*results)
        for index, reset_info in enumerate(reset_infos):
            if reset_info is not None:
                self.reset_infos[index] = reset_info
        return self._stack(obs), np.array(rewards, dtype=np.float32), np.array(dones, dtype=bool), list(infos)

    def reset(self) -> VecEnvObs:
        self._check_open()
        for index, remote in enumerate(self.remotes):
            remote.send(("reset", (self._seeds[index], self._options[index])))
        results = self._receive_all(self.remotes)
        obs, reset_infos = zip(*results)
        self.reset_infos = list(reset_infos)
        self._reset_seeds()
        self._reset_options()
        return self._stack(obs)

    def close(self) -> None:
        if self.closed:
            return
        if self.waiting:
            for remote in self.remotes:
                try:
                    remote.recv()
                except EOFError:
                    pass
        for remote in self.remotes:
            try:
                remote.send(("close", None))
                remote.recv()
            except (EOFError, BrokenPipeError, OSError):
                pass
        for process in self.processes:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
        for remote in self.remotes:
            remote.close()
        self.closed = True

    def _terminate(self) -> None:
        for process in self.processes:
            if process.is_alive():
                process.terminate()
            process.join()
        self.closed = True

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("this SubprocVecEnv is closed")

    def _call(self, command: str, data: Any, indices: VecEnvIndices) -> list[Any]:
        self._check_open()
        targets = [self.remotes[i] for i in self._get_indices(indices)]
        for remote in targets:
            remote.send((command, data))
        return self._receive_all(targets)

    def get_images(self) -> Sequence[np.ndarray | None]:
        if self.render_mode != "rgb_array":
            raise ValueError(
                f"get_images() needs envs made with render_mode='rgb_array', these have {self.render_mode!r}"
            )
        return self._call("render", None, None)

    def has_attr(self, attr_name: str) -> bool:
        return all(self._call("has_attr", attr_name, None))

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return self._call("get_attr", attr_name, indices)

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        self._call("set_attr", (attr_name, value), indices)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        return self._call("env_method", (method_name, method_args, method_kwargs), indices)

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return self._call("is_wrapped", wrapper_class, indices)


__all__ = ["SubprocVecEnv"]
