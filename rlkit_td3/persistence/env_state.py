"""The envs' part of a run's state: each sub-env's random generator, `DummyVecEnv`'s records of the generator
states before its auto-resets, and bringing freshly made envs to where a saved run's envs stood.

`EnvRecords` is that part as a component of the state protocol (``state_dict`` / ``load_state_dict``), part of the
model's training state (`rlkit_td3.persistence.training_state`); `BaseAlgorithm` asks `exact_resume_problem` whether a
checkpoint of its run could resume exactly.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from typing import Any

import numpy as np
import torch
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from rlkit_td3.checks.state import _int, _number, check_rng_json
from rlkit_td3.fileio.serialization import ModelFileError, rng_state_to_json, set_rng_state
from rlkit_td3.preprocessing import obs_from_tensors, obs_shapes, obs_to_tensors, stack_obs
from rlkit_td3.utils import InexactResumeWarning
from rlkit_td3.vec_env.dummy_vec_env import DummyVecEnv
from rlkit_td3.vec_env.gymnasium_bridge import GymnasiumVecEnv, VecEnvView
from rlkit_td3.vec_env.training_env import episode_statistics


def _json_bit_generator_state(state: Any) -> Any:
    """A NumPy ``bit_generator.state`` with its arrays as lists (JSON)."""
    if isinstance(state, dict):
        return {key: _json_bit_generator_state(value) for key, value in state.items()}
    if isinstance(state, np.ndarray):
        return state.tolist()
    if isinstance(state, np.integer):
        return int(state)
    return state


def exact_resume_problem(model: Any) -> str | None:
    """Why no checkpoint of this model's run could resume exactly, or ``None`` when one can."""
    if model._venv is not None and model._autoreset_mode == AutoresetMode.SAME_STEP and _sb3_dummy_env(model) is None:
        return (
            "the env is a vector env with same-step autoreset (AutoresetMode.SAME_STEP), which resets an ended "
            "env inside step(): the env generator's state before that reset, which a resumed run would need, "
            "is gone. Make the vector env with gymnasium's default next-step autoreset or with "
            "autoreset_mode=AutoresetMode.DISABLED, or train on rlkit_td3.vec_env.DummyVecEnv (which records "
            "that state), or save without include_buffer"
        )
    return None


def _sb3_dummy_env(model: Any) -> DummyVecEnv | None:
    """The training env when it is this library's `DummyVecEnv`, given as it is (no VecEnv wrapper around it).

    That env records each sub-env's generator state just before its auto-resets (`DummyVecEnv.restore_reset`),
    which is what an exact resume of a same-step autoreset env needs.
    """
    base = None if model._venv is None else model._venv.unwrapped
    if isinstance(base, GymnasiumVecEnv) and type(base.sb3_env) is DummyVecEnv:
        return base.sb3_env
    return None


def pre_reset_states(model: Any) -> list[dict[str, Any] | None] | None:
    """For a `DummyVecEnv`, each sub-env's generator state before the reset it did at the last step (None for
    an env that did not end there)."""
    dummy = _sb3_dummy_env(model)
    if dummy is None:
        return None
    last = dummy.step_count - 1
    return [
        None if entry is None or entry[0] != last else _json_bit_generator_state(entry[1])
        for entry in dummy.pre_reset_states
    ]


def _gymnasium_base(model: Any) -> Any:
    """The innermost vector env of the model's training env, looking through a `VecEnvView` (what another model's
    ``get_env()`` returns) to the gymnasium vector env it shows, whose sub-envs' generators are reachable."""
    base = None if model._venv is None else model._venv.unwrapped
    if isinstance(base, GymnasiumVecEnv) and isinstance(base.sb3_env, VecEnvView):
        base = base.sb3_env.gym_env.unwrapped
    return base


def _env_generators(model: Any) -> list[Any] | None:
    """Each sub-env's own generator (``env.unwrapped.np_random``), where the vector env lets us reach it.

    For a ``SyncVectorEnv`` these are the generators themselves; for an ``AsyncVectorEnv``, copies
    received from the worker processes (see `restart_envs()` for how those are set).
    """
    base = _gymnasium_base(model)
    if isinstance(base, SyncVectorEnv):
        return [sub.unwrapped.np_random for sub in base.envs]
    if isinstance(base, AsyncVectorEnv):
        return list(base.get_attr("np_random"))
    dummy = _sb3_dummy_env(model)
    if dummy is not None:
        return [sub.unwrapped.np_random for sub in dummy.envs]
    return None


def env_rng_states(model: Any) -> list[dict[str, Any]] | None:
    generators = _env_generators(model)
    if generators is None:
        return None
    return [rng_state_to_json(rng) for rng in generators]


def _outside_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning issued by the caller of this function point at the first frame
    outside this library (the user's ``load()`` or ``set_env()``), however deep inside it the warning is issued."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(2), 2  # the warning's issuer is level 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def _warn_if_inexact(model: Any, generators: list[Any] | None) -> None:
    """Warn (`InexactResumeWarning`) when the model's env cannot go on from the saved envs' state: its sub-envs'
    generators are out of reach, or it is a `VecEnvView` of a gymnasium vector env, which resets ended envs
    otherwise than the saved run did, so the episode bookkeeping of the saved run is not redone. (Another model's
    ``get_env()`` is not such a view here: the model trains on the env behind it, as that model does; see
    `rlkit_td3.vec_env.training_env.as_training_env`.)"""
    why = None
    base = model._venv.unwrapped
    if generators is None:
        why = (
            f"the random generators of its sub-envs cannot be reached through a {type(base).__name__}, so the "
            "envs' random state saved in the checkpoint is not restored"
        )
    elif isinstance(base, GymnasiumVecEnv) and isinstance(base.sb3_env, VecEnvView):
        mode = AutoresetMode(base.sb3_env.gym_env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP))
        why = (
            f"it is a VecEnvView, which resets ended envs inside step() (same-step autoreset), of a vector env with "
            f"{mode}: the envs' random state is restored, but their reset bookkeeping (the last observations, the "
            "resets due) is not the saved run's"
        )
    if why is not None:
        warnings.warn(
            f"the env given to load() or set_env() does not resume the saved run exactly: {why}. Training goes on, "
            "not bit for bit as the saved run would; for an exact resume pass the env id, a freshly made env, the "
            "gymnasium vector env itself or another model's get_env()",
            InexactResumeWarning,
            stacklevel=_outside_stacklevel(),
        )


def restart_envs(
    model: Any,
    env_rngs: list[dict[str, Any]] | None,
    last_obs: torch.Tensor | dict[str, torch.Tensor] | None,
    needs_reset: list[bool] | None = None,
    pre_reset: list[dict[str, Any] | None] | None = None,
    in_flight: dict[str, list[Any]] | None = None,
) -> None:
    """Bring a freshly made env to where the saved run's envs stood.

    Each env is reset once (a fresh env's first reset can differ from later ones, as in the PyBullet
    envs), then its generator is set to the saved state. What follows depends on the autoreset mode:

    - disabled (single envs, which the model wraps so): every env is marked for reset before the next
      step, which is exactly what the saved run would do next when the checkpoint fell on an episode
      boundary; mid-episode, the episode in flight restarts;
    - next-step (gymnasium's default), when every env's episode had just ended: the next step resets
      the envs and stores nothing, as the saved run's next step did (see `_step_envs()`);
    - otherwise the envs are reset at the start of the next ``learn`` (the episodes in flight restart).

    At an episode boundary of every env the episode statistics' counters are the saved ones too (``in_flight``:
    the ended episodes' returns and lengths, which the next reset clears, as in the saved run).
    """
    generators = _env_generators(model)
    if env_rngs is not None:
        _warn_if_inexact(model, generators)
    model._env_seeded = True
    model._envs_restored = False
    model._venv.reset()
    if env_rngs is not None and generators is not None and len(env_rngs) == len(generators):
        for rng, spec in zip(generators, env_rngs):
            set_rng_state(rng, spec)
        base = _gymnasium_base(model)
        if isinstance(base, AsyncVectorEnv):  # the generators are copies: send them back
            base.set_attr("np_random", generators)
    _restore_recent_episodes(model)
    if model._autoreset_mode == AutoresetMode.DISABLED:
        # every env is due for the reset the saved run would do next, just before the next step, and learn does
        # not reset them afresh. At an episode boundary of every env that reset is the saved run's own, and the
        # saved last observations (which no step starts from) are kept, so that the model holds what the file
        # holds; mid-episode they are dropped (as SB3 after a load with force_reset=True): the episodes restart.
        at_boundary = needs_reset is not None and all(needs_reset) and last_obs is not None
        model._last_obs = obs_from_tensors(last_obs) if at_boundary else None
        if at_boundary:
            _set_episodes_in_flight(model, in_flight, np.ones(model.n_envs, dtype=bool))
        model._envs_restored = True
        model._needs_reset = np.ones(model.n_envs, dtype=bool)
    elif (
        model._autoreset_mode == AutoresetMode.NEXT_STEP
        and needs_reset is not None
        and all(needs_reset)
        and last_obs is not None
    ):
        model._last_obs = obs_from_tensors(last_obs)
        model._needs_reset = np.ones(model.n_envs, dtype=bool)
        model._pending_reset_step = True
        _set_episodes_in_flight(model, in_flight, model._needs_reset)
    elif _sb3_dummy_env(model) is not None and pre_reset is not None and all(x is not None for x in pre_reset):
        # Every env ended at the saved run's last step and was reset inside it: redo those resets from the
        # generator states recorded before them, which leaves envs and generators where the saved run's were.
        dummy = _sb3_dummy_env(model)
        first = [dummy.restore_reset(i, state) for i, state in enumerate(pre_reset)]
        model._last_obs = stack_obs(first, model.observation_space)
        model._needs_reset = np.zeros(model.n_envs, dtype=bool)
    else:
        model._last_obs = None


def keep_envs(
    model: Any,
    last_obs: torch.Tensor | dict[str, torch.Tensor],
    needs_reset: list[bool] | None = None,
    in_flight: dict[str, list[Any]] | None = None,
) -> None:
    """``load(..., force_reset=False)``: take the envs as they stand, without resetting them (as SB3 does).

    The caller says the env passed to ``load`` is the one the model was saved from, still where the saved run
    left it: the saved last observations are the model's again and the next ``learn`` steps the envs on from
    there (envs whose episode had ended are reset before that step, as in the saved run). The envs' generators
    are left as they are. The episode statistics go on with the saved counts of the episodes in flight (files
    without them: counted from this step, as after a reset).
    """
    model._env_seeded = True
    model._envs_restored = False
    model._last_obs = obs_from_tensors(last_obs)
    ended = np.zeros(model.n_envs, dtype=bool) if needs_reset is None else np.asarray(needs_reset, dtype=bool)
    # an env that ended at the saved run's last step is reset by the loop before the next step (autoreset
    # disabled) or by gymnasium inside it (next-step: that step's row is not a transition); same-step envs
    # were reset inside the step that ended them
    model._needs_reset = np.zeros_like(ended) if model._autoreset_mode == AutoresetMode.SAME_STEP else ended
    model._pending_reset_step = False
    model._env_used_outside = False
    _set_episodes_in_flight(model, in_flight, model._needs_reset)
    _restore_recent_episodes(model)


def _set_episodes_in_flight(model: Any, in_flight: dict[str, list[Any]] | None, ended: np.ndarray) -> None:
    """The episode statistics' counters of the episodes in flight: the saved ones (zero without them), and the
    envs whose episode ended at the last step (the statistics restart those at the next step)."""
    stats = episode_statistics(model._venv)
    if stats is None:
        return
    n = model.n_envs
    stats.episode_returns = np.zeros(n) if in_flight is None else np.array(in_flight["returns"], dtype=np.float64)
    stats.episode_lengths = np.zeros(n, dtype=int) if in_flight is None else np.array(in_flight["lengths"], dtype=int)
    stats.episode_start_times = np.full(n, time.perf_counter())
    stats.prev_dones = np.array(ended, dtype=bool)


def _restore_recent_episodes(model: Any) -> None:
    """The saved recent episodes (``rollout/ep_rew_mean``, ``ep_info_buffer``) become the env statistics' records,
    in place of whatever the env's statistics held before (another model's episodes, on its env)."""
    stats = episode_statistics(model._venv)
    if stats is None:
        return
    for queue in (stats.return_queue, stats.length_queue, stats.time_queue):
        queue.clear()
    for r, n in getattr(model, "_saved_episode_infos", ()):
        stats.return_queue.append(r)
        stats.length_queue.append(n)


def state_dict(model: Any) -> dict[str, Any]:
    """The envs' records a checkpoint stores (JSON): ``env_rngs`` (each sub-env's generator), ``sb3_pre_reset``
    (`DummyVecEnv`'s generator states before the resets of its last step), ``needs_reset`` and
    ``episodes_in_flight`` (the episode statistics' returns and lengths of each env's episode so far)."""
    needs_reset = getattr(model, "_needs_reset", None)
    stats = episode_statistics(model._venv)
    return {
        "env_rngs": env_rng_states(model),
        "sb3_pre_reset": pre_reset_states(model),
        "needs_reset": None if needs_reset is None else [bool(x) for x in needs_reset],
        "episodes_in_flight": None
        if stats is None
        else {"returns": [float(r) for r in stats.episode_returns], "lengths": [int(n) for n in stats.episode_lengths]},
    }


def _check_last_obs(entry: str, last_obs: Any, expected: tuple[int, ...]) -> None:
    if not isinstance(last_obs, torch.Tensor) or tuple(last_obs.shape) != expected:
        got = tuple(last_obs.shape) if isinstance(last_obs, torch.Tensor) else type(last_obs).__name__
        raise ModelFileError(f"{entry} has shape {got}, the model needs {expected}")
    if last_obs.dtype.is_complex:
        raise ModelFileError(f"{entry} must be real numbers, got {last_obs.dtype}")
    if last_obs.is_floating_point() and not bool(torch.isfinite(last_obs).all()):
        raise ModelFileError(f"{entry} holds non-finite values")


class EnvRecords:
    """The envs' part of a run as a component of the state protocol: ``env_rngs``, ``sb3_pre_reset`` and
    ``needs_reset`` (`state_dict()`, JSON) and ``last_obs`` (the observations the envs stand at, tensors).

    Args:
        model: the model whose envs these are.
        saved_n_envs: the number of envs the state was saved with (default: the model's ``n_envs``); loaded
            onto another number of envs, every episode restarts.
        force_reset: ``False`` keeps the envs as they stand with the saved last observations (`keep_envs()`,
            ``load(..., force_reset=False)``) instead of bringing them to the saved state (`restart_envs()`).
    """

    keys = ("env_rngs", "sb3_pre_reset", "needs_reset", "episodes_in_flight", "last_obs")
    """The entries of the state (each optional: older files lack them)."""

    def __init__(self, model: Any, saved_n_envs: int | None = None, force_reset: bool = True) -> None:
        self.model = model
        self.saved_n_envs = model.n_envs if saved_n_envs is None else saved_n_envs
        self.force_reset = force_reset

    def state_dict(self) -> dict[str, Any]:
        """The records (`state_dict` of the module) and ``last_obs`` as tensors (absent when there is none)."""
        state = state_dict(self.model)
        if self.model._last_obs is not None:
            state["last_obs"] = obs_to_tensors(self.model._last_obs)
        return state

    def check_state(self, state: Any) -> None:
        """Refuse records of the wrong shape for ``saved_n_envs`` envs and the model's observation space.

        Raises:
            ModelFileError: naming the record.
        """
        if not isinstance(state, dict):
            raise ModelFileError(f"the env records must be a dict, got {type(state).__name__}")
        n_envs = self.saved_n_envs
        env_rngs = state.get("env_rngs")
        if env_rngs is not None:
            if not isinstance(env_rngs, list) or len(env_rngs) != n_envs:
                raise ModelFileError(f"training_state.env_rngs must be a list of {n_envs} generator states")
            for i, spec in enumerate(env_rngs):
                check_rng_json(f"training_state.env_rngs[{i}]", spec)
        last_obs, shapes = state.get("last_obs"), obs_shapes(self.model.observation_space)
        if isinstance(shapes, dict) and last_obs is not None:  # Dict observations: one tensor per key
            if not isinstance(last_obs, dict) or list(last_obs) != list(shapes):
                got = list(last_obs) if isinstance(last_obs, dict) else type(last_obs).__name__
                raise ModelFileError(f"training_state.last_obs must hold the keys {list(shapes)}, got {got}")
            for key, shape in shapes.items():
                _check_last_obs(f"training_state.last_obs[{key!r}]", last_obs[key], (n_envs, *shape))
        elif last_obs is not None:
            _check_last_obs("training_state.last_obs", last_obs, (n_envs, *shapes))
        needs_reset = state.get("needs_reset")
        if needs_reset is not None and (
            not isinstance(needs_reset, list)
            or len(needs_reset) != n_envs
            or not all(isinstance(x, bool) for x in needs_reset)
        ):
            raise ModelFileError(
                f"training_state: needs_reset must be a list of {n_envs} booleans, got {needs_reset!r}"
            )
        in_flight = state.get("episodes_in_flight")
        if in_flight is not None:
            if not isinstance(in_flight, dict) or set(in_flight) != {"returns", "lengths"}:
                raise ModelFileError("training_state.episodes_in_flight must hold returns and lengths")
            for key in ("returns", "lengths"):
                if not isinstance(in_flight[key], list) or len(in_flight[key]) != n_envs:
                    raise ModelFileError(f"training_state.episodes_in_flight.{key} must be a list of {n_envs} values")
            for i, (r, n) in enumerate(zip(in_flight["returns"], in_flight["lengths"])):
                _number(f"training_state.episodes_in_flight.returns[{i}]", r)
                _int(f"training_state.episodes_in_flight.lengths[{i}]", n)
        pre_reset = state.get("sb3_pre_reset")
        if pre_reset is not None and (
            not isinstance(pre_reset, list)
            or len(pre_reset) != n_envs
            or not all(x is None or isinstance(x, dict) for x in pre_reset)
        ):
            raise ModelFileError(f"training_state: sb3_pre_reset must be a list of {n_envs} generator states or nulls")

    def load_state_dict(self, state: Any) -> None:
        """Check the records (`check_state`), then bring the model's envs (if any) to where they stood.

        Raises:
            ModelFileError: a record of the wrong shape; nothing was changed.
        """
        self.check_state(state)
        model = self.model
        if model._venv is None:
            # loaded without an env: the first set_env brings the env it is given to the saved state, as
            # load(env=...) would have (`apply_pending`)
            model._pending_env_records = (self.saved_n_envs, dict(state)) if model._env_seeded else None
            return
        if not model._env_seeded:
            # saved before its first learn: its envs were never reset, and the saved run's first learn resets
            # them with the model's seed; the loaded model's does the same (restored by `RunState` just before)
            model._last_obs = None
            return
        if self.saved_n_envs != model.n_envs:  # loaded onto another number of envs: every episode restarts
            restart_envs(model, None, None, None)
        elif not self.force_reset and state.get("last_obs") is not None:
            keep_envs(model, state["last_obs"], state.get("needs_reset"), state.get("episodes_in_flight"))
        else:
            restart_envs(
                model,
                state.get("env_rngs"),
                state.get("last_obs"),
                state.get("needs_reset"),
                state.get("sb3_pre_reset"),
                state.get("episodes_in_flight"),
            )


def apply_pending(model: Any, force_reset: bool) -> None:
    """After ``load()`` without an env, the first `set_env()`: bring its env to the saved run's state, exactly as
    ``load(path, env=env, force_reset=force_reset)`` would have (the file's env records, kept by `EnvRecords`)."""
    pending = getattr(model, "_pending_env_records", None)
    if pending is None:
        return
    model._pending_env_records = None
    saved_n_envs, state = pending
    EnvRecords(model, saved_n_envs, force_reset).load_state_dict(state)
