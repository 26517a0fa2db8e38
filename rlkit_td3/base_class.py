"""``BaseAlgorithm``: what every model has around its training loop, by Stable-Baselines3's names.

The env it trains on (`BaseAlgorithm.get_env()` hands it back with SB3's ``VecEnv`` contract), the logger,
``predict``, the parameters and the model file (``save``/``load``, whose bodies live in
`rlkit_td3.persistence.checkpoint`).
The training loop and the update are in `rlkit_td3.off_policy.OffPolicyAlgorithm`, its subclass.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

from rlkit_td3.checks.arguments import ValueAssertionError, check_bool, check_seed
from rlkit_td3.checks.state import new_run_id
from rlkit_td3.fileio import model_files
from rlkit_td3.fileio.serialization import require_bool, spaces_equal
from rlkit_td3.logger import Logger, configure
from rlkit_td3.noise import draw_noise, fit_noise_to_envs
from rlkit_td3.persistence import parameters
from rlkit_td3.persistence.env_state import apply_pending, exact_resume_problem
from rlkit_td3.policies import TD3Policy, get_policy_class
from rlkit_td3.policies.td3_policy import python_scalars
from rlkit_td3.preprocessing import OBSERVATION_SPACES, check_dict_space, dict_obs_batch, obs_len
from rlkit_td3.schedules import Schedule, ScheduleLike, as_schedule
from rlkit_td3.utils import ReplayBufferRunWarning, _check_int, _latest_run_id, get_device
from rlkit_td3.vec_env.base_vec_env import VecEnv
from rlkit_td3.vec_env.gymnasium_bridge import GymnasiumVecEnv
from rlkit_td3.vec_env.training_env import (
    _TrainingEnvView,
    as_training_env,
    check_action_space,
    env_name,
    episode_statistics,
    find_vec_normalize,
)
from rlkit_td3.vec_env.vec_normalize import VecNormalize


class BaseAlgorithm:
    """The base of every model: its env, logger, ``predict``, parameters and model file.

    Not instantiated directly: `rlkit_td3.off_policy.OffPolicyAlgorithm` adds the training loop and the
    update, and `TD3`/`DDPG` fix its settings. The arguments are described on `OffPolicyAlgorithm`.

    Attributes:
        torch_num_threads: the torch intra-op thread count ``learn`` trains at. ``"auto"`` (the default): chosen
            at the first ``learn`` by `rlkit_td3.utils.auto_num_threads` (the caller's count, fewer on a busy
            machine) and then kept; an int: that count; ``None``: the caller's setting. `load()` sets it to the
            count the saved run trained at, which exact resume needs.
        run_id: this run's id, 32 random hex digits (128 bits) made when the model is built, saved in its model
            files and replay-buffer files and kept by `load()`: `load_replay_buffer()` warns
            (`rlkit_td3.utils.ReplayBufferRunWarning`) when a buffer file was written by another run.
    """

    def __init__(
        self,
        policy: str | type[TD3Policy],
        env: gym.Env | VectorEnv | str | None,
        learning_rate: ScheduleLike,
        policy_kwargs: dict[str, Any] | None = None,
        tensorboard_log: str | os.PathLike[str] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: torch.device | str = "auto",
        _init_setup_model: bool = True,
    ) -> None:
        own_aliases = getattr(type(self), "policy_aliases", {})  # an algorithm's own meaning of "MlpPolicy" (TD7's)
        self.policy_class = own_aliases[policy] if isinstance(policy, str) and policy in own_aliases else None
        self.policy_class = self.policy_class or get_policy_class(policy)
        self.learning_rate = as_schedule(learning_rate, "learning_rate")
        if policy_kwargs is not None and not isinstance(policy_kwargs, dict):
            raise TypeError(f"policy_kwargs must be a dict, got {policy_kwargs!r}")
        self.policy_kwargs = python_scalars(dict(policy_kwargs or {}))
        if tensorboard_log is not None and not isinstance(tensorboard_log, (str, os.PathLike)):
            raise TypeError(f"tensorboard_log must be a folder path or None, got {tensorboard_log!r}")
        self.tensorboard_log = None if tensorboard_log is None else os.fspath(tensorboard_log)
        self.verbose = _check_int("verbose", verbose, 0)
        self.seed = None if seed is None else check_seed("seed", seed)
        self.device = get_device(device)
        self.run_id = new_run_id()

        self._venv: VectorEnv | None = None
        self._env_used_outside = False
        # load() brought the envs to the saved run's state with every env due for the reset the saved run would
        # do next (autoreset disabled; _last_obs is the saved one at an episode boundary, else None as SB3's after a
        # load with force_reset=True): the next learn resets them through that reset, not a fresh one (see
        # rlkit_td3.persistence.env_state.restart_envs)
        self._envs_restored = False
        self.observation_space: spaces.Box | None = None
        self.action_space: spaces.Box | None = None
        self.n_envs = 1
        if env is not None:
            self._set_env_and_spaces(as_training_env(env))
        elif _init_setup_model:
            raise ValueError("env must be given (None is only allowed inside load())")

        self.num_timesteps = 0
        self._n_updates = 0
        self._episode_num = 0
        self._start_timesteps = 0
        self._total_timesteps = 0
        self._current_progress_remaining = 1.0
        self.torch_num_threads: int | str | None = "auto"
        self._learn_num_threads: int | None = None
        self._last_obs: np.ndarray | None = None
        self._rollout: dict[str, int] | None = None
        self.logger: Logger = configure(None, ["stdout"] if self.verbose >= 1 else [])
        self._custom_logger = False

    # ------------------------------------------------------------------ env
    def _set_env_and_spaces(self, env: VectorEnv) -> None:
        obs_space = env.single_observation_space
        name = env_name(env)
        if isinstance(obs_space, spaces.Dict):
            try:
                check_dict_space(obs_space)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{name}: {exc}") from exc
        elif not isinstance(obs_space, OBSERVATION_SPACES):
            raise TypeError(
                f"{name}: observation_space must be a gymnasium.spaces.Box, Discrete, MultiDiscrete or MultiBinary "
                f"(MlpPolicy) or a gymnasium.spaces.Dict of those (MultiInputPolicy), got {obs_space!r}"
            )
        elif int(np.prod(obs_space.shape)) == 0:
            raise ValueError(f"{name}: observation_space must have at least one element, got shape {obs_space.shape}")
        try:
            self.action_space = check_action_space(env.single_action_space)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{name}: {exc}") from exc
        self.observation_space = obs_space
        self._venv = env
        self.n_envs = env.num_envs
        self._autoreset_mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        if isinstance(self._autoreset_mode, str):
            self._autoreset_mode = AutoresetMode(self._autoreset_mode)

    @property
    def ep_info_buffer(self) -> list[dict[str, float]]:
        """The last (up to 100) finished training episodes, oldest first: ``{"r": return, "l": length}``.

        Read from the env's episode-statistics wrapper (see `as_training_env()`), the one source of
        ``rollout/ep_rew_mean`` and ``rollout/ep_len_mean``.
        """
        stats = episode_statistics(self._venv)
        if stats is None:
            return []
        return [{"r": float(r), "l": int(n)} for r, n in zip(stats.return_queue, stats.length_queue)]

    @property
    def lr_schedule(self) -> Schedule:
        """SB3's name for the learning-rate schedule: the same object as ``learning_rate``. Setting it (a positive
        float or a callable of the remaining progress, e.g. ``lambda _: 0.0`` to freeze the networks) sets the
        rate the next ``train`` call uses, as in SB3; ``actor_learning_rate`` / ``critic_learning_rate``, where
        given, still take precedence for their network."""
        return self.learning_rate

    @lr_schedule.setter
    def lr_schedule(self, value: ScheduleLike) -> None:
        self.learning_rate = as_schedule(value, "lr_schedule")

    @property
    def env(self) -> VecEnv | None:
        """The training env as a Stable-Baselines3 ``VecEnv`` (see `get_env()`)."""
        return self.get_env()

    def get_env(self) -> VecEnv | None:
        """The env the model trains on, with Stable-Baselines3's ``VecEnv`` contract (``None`` for a model
        loaded without env).

        A Stable-Baselines3-style ``VecEnv`` given to the model is handed back as it is. Anything else (an env,
        an env id, a gymnasium vector env) is handed back as a `VecEnvView` of the env the model steps:
        ``reset()`` returns the observations, ``step(actions)`` returns ``(obs, rewards, dones, infos)`` and
        resets ended envs at once, with ``infos[i]["terminal_observation"]`` and
        ``infos[i]["TimeLimit.truncated"]``. Stepping or resetting it from outside ``learn`` makes the next
        ``learn`` start fresh episodes. Given to another model (its constructor, ``load(env=...)``, ``set_env``),
        the view stands for the env behind it, which that model then steps as this one does (so a checkpoint
        loaded onto it resumes exactly).
        """
        if self._venv is None:
            return None
        base = self._venv.unwrapped
        if isinstance(base, GymnasiumVecEnv):
            return base.sb3_env
        view = getattr(self, "_env_view", None)
        if view is None or view.gym_env is not self._venv:
            view = self._env_view = _TrainingEnvView(self._venv, self)
        return view

    def get_vec_normalize_env(self) -> VecNormalize | None:
        """The `VecNormalize` wrapper of the training env, if it has one (as in Stable-Baselines3)."""
        return find_vec_normalize(self.get_env())

    def set_env(self, env: gym.Env | VectorEnv | str, force_reset: bool = True) -> None:
        """Replace the training env; its spaces and number of envs must match the model's.

        The env may have fewer envs than the replay buffer was built for, not more. The exploration noise
        follows the new number of envs: a `VectorizedActionNoise` keeps the copies
        of the envs that remain and gets fresh ones for added envs; a single-env noise is vectorized.

        Args:
            env: the new env.
            force_reset: a real ``bool``. ``False`` with the env the model already trains on (``model.get_env()``)
                keeps its last observations, so the next ``learn`` goes on with the episodes in flight (as SB3);
                any other env is reset before the model's next step, since the model cannot know its state.
                The first ``set_env`` after ``load()`` without an env does what ``load(path, env=env,
                force_reset=force_reset)`` would have done: the env is brought to the file's envs' state
                (``True``) or taken as the saved run left it (``False``), so training goes on exactly as from
                that ``load``.

        Raises:
            ValueError: the spaces differ, or the env has more envs than the replay buffer was built for (a
                `rlkit_td3.utils.ValueAssertionError`, also an ``AssertionError`` as SB3's check).
            TypeError: ``force_reset`` is not a bool.
        """
        require_bool("force_reset", force_reset)
        if not force_reset and self._venv is not None and env is self.get_env():
            return  # the env in use, kept in its state
        vec = as_training_env(env)
        self._check_env_matches(vec)
        after_load = getattr(self, "_pending_env_records", None) is not None
        self._set_env_and_spaces(vec)
        self._fit_to_env(strict=False)
        self._last_obs = None
        self._envs_restored = False
        if after_load:  # the first env after load() without one: as load(path, env=env, force_reset=force_reset)
            apply_pending(self, force_reset)
        else:
            self._rollout = None

    def _check_env_matches(self, vec: VectorEnv) -> None:
        for name, mine, theirs in (
            ("observation_space", self.observation_space, vec.single_observation_space),
            ("action_space", self.action_space, vec.single_action_space),
        ):
            if not spaces_equal(mine, theirs):
                raise ValueError(f"{env_name(vec)}: the env's {name} {theirs!r} differs from the model's {mine!r}")
        if hasattr(self, "replay_buffer") and vec.num_envs > self.replay_buffer.n_envs:
            raise ValueAssertionError(
                f"{env_name(vec)}: the env has n_envs={vec.num_envs}, more than the replay buffer was built for "
                f"(n_envs={self.replay_buffer.n_envs}); save the model and load it with env=... to get a buffer "
                "for more envs"
            )

    def _fit_to_env(self, strict: bool) -> None:
        """Check the components sized for one action size or one number of envs against the current ones.

        Called when the model is built (``strict``: a mismatch is the caller's mistake and raises), and when
        its env changes (`set_env()`, ``load(env=...)``), where the exploration noise is resized to the
        new ``n_envs`` (see `set_env()` and `rlkit_td3.noise.fit_noise_to_envs()`).
        """
        if self._last_obs is not None and obs_len(self._last_obs) != self.n_envs:
            self._last_obs = None  # a checkpoint's observations of another number of envs: start afresh
        if self.action_noise is None:
            return
        seed = None if self.seed is None else int(np.random.SeedSequence([self.seed, self.n_envs]).generate_state(1)[0])
        self.action_noise = fit_noise_to_envs(self.action_noise, self.action_space, self.n_envs, seed, strict)

    # ------------------------------------------------------------------ logging
    def set_logger(self, logger: Logger) -> None:
        """Use ``logger`` (e.g. from `rlkit_td3.logger.configure()`) for the following ``learn`` calls,
        instead of the one each ``learn`` call builds from ``verbose`` and ``tensorboard_log``."""
        if not isinstance(logger, Logger):
            raise TypeError(f"logger must be a rlkit_td3.logger.Logger, got {logger!r}")
        self.logger = logger
        self._custom_logger = True

    def _setup_logger(self, tb_log_name: str, reset_num_timesteps: bool) -> None:
        """The per-``learn`` logger, as in Stable-Baselines3: stdout if ``verbose >= 1``, TensorBoard in
        ``<tensorboard_log>/<tb_log_name>_<N>`` (a new ``N`` per call; the last one again when continuing)."""
        if self._custom_logger:
            return
        self.logger.close()
        formats = ["stdout"] if self.verbose >= 1 else []
        folder = None
        if self.tensorboard_log is not None:
            root = Path(self.tensorboard_log)
            latest = _latest_run_id(root, tb_log_name)
            run_id = max(latest, 1) if not reset_num_timesteps else latest + 1
            folder = root / f"{tb_log_name}_{run_id}"
            formats.append("tensorboard")
        self.logger = configure(folder, formats)

    def _dump_logs(self) -> None:
        """Record the standard keys and write one row. The loss sums are read from the device here, once."""
        elapsed = max(time.perf_counter() - self._start_time, 1e-9)
        log = self.logger
        stats = episode_statistics(self._venv)
        if stats is not None and stats.return_queue:
            log.record("rollout/ep_rew_mean", float(np.mean(stats.return_queue)))
            log.record("rollout/ep_len_mean", float(np.mean(stats.length_queue)))
        log.record("time/episodes", self._episode_num, exclude="tensorboard")
        log.record("time/fps", int((self.num_timesteps - self._learn_start_timesteps) / elapsed))
        log.record("time/time_elapsed", int(elapsed), exclude="tensorboard")
        log.record("time/total_timesteps", self.num_timesteps, exclude="tensorboard")
        self._record_train_values()
        self._reset_loss_stats()
        log.dump(self.num_timesteps)

    def _record_train_values(self) -> None:
        """Record the ``train/*`` keys: the mean losses since the last dump, the update count and the learning
        rate. Called at each dump and at the end of ``learn`` (SB3 records them at every ``train`` call)."""
        log = self.logger
        if self._n_critic_losses or self._n_actor_losses:
            critic_sum, actor_sum = torch.stack([self._critic_loss_sum, self._actor_loss_sum]).tolist()
            if self._n_critic_losses:
                log.record("train/critic_loss", critic_sum / self._n_critic_losses)
            if self._n_actor_losses:
                log.record("train/actor_loss", actor_sum / self._n_actor_losses)
        log.record("train/n_updates", self._n_updates, exclude="tensorboard")
        # the rate in use, read back: a schedule with state then sees the same calls whatever is logged
        log.record("train/learning_rate", self.policy.actor_optimizer.param_groups[0]["lr"])

    # ------------------------------------------------------------------ acting
    def predict(
        self,
        observation: np.ndarray,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, None]:
        """Actions in env units for one observation or a batch of them.

        ``deterministic=False`` adds the model's exploration noise (TD3's actor itself is deterministic).
        ``state`` and ``episode_start`` exist for Stable-Baselines3 compatibility and are ignored.

        Returns:
            ``(action, None)``: shape ``action_space.shape`` for one observation, else ``(batch, *shape)``.

        Raises:
            TypeError: ``observation`` is the ``(obs, info)`` tuple returned by ``env.reset()``.
            ValueError: the observation's shape matches neither one observation nor a batch.
        """
        deterministic = check_bool("deterministic", deterministic)
        if isinstance(observation, tuple) and len(observation) == 2 and isinstance(observation[1], dict):
            raise TypeError(
                "observation is an (obs, info) tuple: pass only the observation, e.g. obs, info = env.reset()"
            )
        if isinstance(self.observation_space, spaces.Dict):
            batch, single = dict_obs_batch(observation, self.observation_space)
        else:
            obs = np.asarray(observation, dtype=np.float32)
            obs_shape = self.observation_space.shape
            single = obs.shape == obs_shape
            if not single and obs.shape[1:] != obs_shape:
                raise ValueError(f"observation has shape {obs.shape}; expected {obs_shape} or (batch, *{obs_shape})")
            batch = obs.reshape(-1, *obs_shape)
        if self.policy.actor.training:  # batch norm and dropout act in evaluation mode, as in SB3
            self.policy.set_training_mode(False)
        actions = self.policy.evaluation_actor_numpy(batch) if deterministic else self.policy.actor_numpy(batch)
        if not deterministic and self.action_noise is not None:
            actions = np.clip(
                actions + draw_noise(self.action_noise, len(actions), self.action_space), -1.0, 1.0, dtype=np.float32
            )
        env_actions = self.policy.unscale_action(actions.reshape(len(actions), *self.action_space.shape))
        return (env_actions[0, ...] if single else env_actions), None  # [0, ...]: an array even for shape ()

    # ------------------------------------------------------------------ Stable-Baselines3 aliases
    def dump_logs(self) -> None:
        """Write the log row now (``rollout/``, ``time/``, ``train/`` keys), as Stable-Baselines3's public
        ``dump_logs()`` does; ``learn`` calls it every ``log_interval`` episodes."""
        self._dump_logs()

    @property
    def actor(self) -> torch.nn.Module:
        """The policy's actor (``model.policy.actor``), as on Stable-Baselines3's TD3."""
        return self.policy.actor

    @property
    def actor_target(self) -> torch.nn.Module:
        """The policy's target actor (``model.policy.actor_target``)."""
        return self.policy.actor_target

    @property
    def critic(self) -> torch.nn.Module:
        """The policy's critics (``model.policy.critic``: all ``n_critics`` Q-networks in one module)."""
        return self.policy.critic

    @property
    def critic_target(self) -> torch.nn.Module:
        """The policy's target critics (``model.policy.critic_target``)."""
        return self.policy.critic_target

    # ------------------------------------------------------------------ parameters and persistence
    def get_parameters(self) -> dict[str, dict[str, Any]]:
        """The state dicts of the policy and of both optimizers, by Stable-Baselines3's names.

        Returns:
            ``{"policy": ..., "actor.optimizer": ..., "critic.optimizer": ...}``: the policy's state dict
            (actor, critics and their targets, keys such as ``"actor.mu.0.weight"``) and the two
            optimizers' state dicts. They are copies: changing them changes nothing in the model until
            they are passed to
            [`set_parameters`][rlkit_td3.base_class.BaseAlgorithm.set_parameters].
        """
        return parameters.get_parameters(self)

    def set_parameters(
        self,
        load_path_or_dict: str | os.PathLike[str] | dict[str, dict[str, Any]],
        exact_match: bool = True,
        device: torch.device | str = "auto",
    ) -> None:
        """Load parameters from a dict like ``get_parameters()``'s or from a model file, into this model.

        Unlike [`load`][rlkit_td3.base_class.BaseAlgorithm.load], this keeps the model's env, buffer and
        settings and changes only the weights (and, when given, the optimizers' states). Either everything given
        is loaded or, on an error, nothing is.

        Args:
            load_path_or_dict: a dict ``{name: state_dict}`` with names among ``"policy"``,
                ``"actor.optimizer"`` and ``"critic.optimizer"``, or the path of a file written by
                [`save`][rlkit_td3.base_class.BaseAlgorithm.save].
            exact_match: True requires all three names and, for the policy, exactly its keys; False
                loads what is given (e.g. only ``{"policy": {"actor.mu.0.weight": ...}}``).
            device: where a file's tensors are read to before being copied into the model's.

        Raises:
            ValueError: an unknown name, a missing name or key (with ``exact_match``), an unexpected policy
                key, or a state that fails the checks a model file gets (a tensor whose shape or dtype differs
                from the model's, non-finite values, optimizer moments or switches such as ``amsgrad`` other
                than the model's optimizer keeps); the message names them. The model copies what it loads: it
                never shares tensors with the dict passed in.
            TypeError: ``load_path_or_dict`` is neither a dict nor a path.
            ModelFileError: (a ``ValueError``) the file is not a readable model file.
        """
        parameters.set_parameters(self, load_path_or_dict, check_bool("exact_match", exact_match), device)

    def save_replay_buffer(self, path: str | os.PathLike[str]) -> None:
        """Write the filled part of the replay buffer to ``path`` (``.npz``, atomic, no pickle), with the model's
        ``run_id`` in its header."""
        self.replay_buffer.run_id = self.run_id
        self.replay_buffer.save(path)

    def load_replay_buffer(self, path: str | os.PathLike[str]) -> None:
        """Restore a replay buffer written by `save_replay_buffer()`.

        A model whose ``replay_buffer`` was set to ``None`` gets a new one of its class and settings first; the
        buffer then takes the model's ``device`` (as in SB3). A file written by another run (its run id is not
        the model's ``run_id``) is loaded, as in SB3, with a `rlkit_td3.utils.ReplayBufferRunWarning` naming both
        ids; a file without a run id (older files) is loaded as it is.

        Raises:
            ModelFileError: (a ``ValueError``) the file is malformed, its run id included, or does not fit the
                buffer; nothing was changed.
        """
        if self.replay_buffer is None:
            self.replay_buffer = self._make_replay_buffer(None)
        self.replay_buffer.run_id = self.run_id
        self.replay_buffer.load(path)
        self.replay_buffer.device = self.device
        file_run = self.replay_buffer.file_run_id
        if file_run is not None and file_run != self.run_id:
            warnings.warn(
                f"the replay buffer file {os.fspath(path) if isinstance(path, (str, os.PathLike)) else path!r} was "
                f"written by run {file_run}, not by this model's run {self.run_id}: its transitions are loaded, but "
                "training does not go on as either run would have",
                ReplayBufferRunWarning,
                stacklevel=2,
            )

    def save(
        self,
        path: str | os.PathLike[str],
        exclude: Iterable[str] | None = None,
        include: Iterable[str] | None = None,
        *,
        include_buffer: bool = False,
    ) -> None:
        """Save the model to one zip file (JSON metadata + torch state dicts), written atomically.

        The file always holds the training state too: counters, every random generator (the buffer's
        sampler, the exploration noise, the warm-up actions, the target smoothing noise and each env's own)
        and the state of an unfinished rollout. With ``include_buffer=True`` it also holds the replay buffer,
        which makes it a checkpoint: ``load(path, env=...)`` then ``learn(n, reset_num_timesteps=False)``
        continues the run exactly where it stood (see the "Saving, loading and resuming" docs page).

        Objects JSON cannot describe (a lambda schedule, a custom noise without ``to_dict``, user classes)
        go into a pickle entry that ``load`` only reads with ``allow_pickle=True``, or are replaced at
        load time through ``custom_objects``.

        Args:
            path: the zip file to write (replaced atomically if it exists). A path without any suffix gets
                ``.zip`` appended, as in Stable-Baselines3 (``save("model")`` writes ``model.zip``).
            exclude: hyperparameters to leave out of the file, as in SB3 (``exclude=["verbose"]``): ``load``
                gives them the constructor's defaults. Names SB3 never saves (``"env"``, ``"replay_buffer"``,
                ...) are accepted and change nothing; others raise ``ValueError`` listing the allowed ones.
            include: names saved even if ``exclude`` lists them; ``"replay_buffer"`` stores the buffer, like
                ``include_buffer=True``.
            include_buffer: also store the filled part of the replay buffer (keyword only).

        A policy replaced by ``torch.compile(model.policy)`` is saved as the module it compiles.

        Raises:
            TypeError: ``exclude`` or ``include`` is not a list of names.
            ValueError: a name ``exclude`` or ``include`` cannot take; or ``include_buffer=True`` while training
                on a vector env with same-step autoreset, whose runs no checkpoint can resume exactly (see the
                "What exact resume covers" docs section).
        """
        include_buffer = check_bool("include_buffer", include_buffer)
        compiled = self.policy
        original = getattr(compiled, "_orig_mod", None)  # model.policy = torch.compile(model.policy), as in SB3
        if not isinstance(original, torch.nn.Module):
            model_files.native_format().save(self, path, include_buffer, exclude, include)
            return
        self.policy = original  # the file holds the plain module's state dict (no "_orig_mod." prefix)
        try:
            model_files.native_format().save(self, path, include_buffer, exclude, include)
        finally:
            self.policy = compiled

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        env: gym.Env | VectorEnv | str | None = None,
        device: torch.device | str = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        allow_pickle: bool = False,
        **kwargs: Any,
    ) -> BaseAlgorithm:
        """Load a model saved by `save()`; its predictions are identical to the saved model's.

        The signature is Stable-Baselines3's, plus ``allow_pickle``. Every part of the file is checked
        before it is used (see the Security page of the docs): a bad file raises ``ModelFileError``, a bad
        argument a ``TypeError`` or ``ValueError`` naming it, before the file is opened where possible.

        Args:
            path: the zip file; if it does not exist but ``path + ".zip"`` does, that one (as in SB3).
            env: the env to continue training on (optional for prediction). Its spaces must match.
            device: where to put the networks.
            custom_objects: replacements for stored entries, by name (``learning_rate``, ``action_noise``,
                ``policy_class``, ``replay_buffer_class``, ``activation_fn``, ``optimizer_class``, ...);
                needed for user classes and for anything saved through pickle when ``allow_pickle`` is False.
            print_system_info: print the versions (Python, torch, numpy, gymnasium, platform) that wrote the
                file beside the current ones.
            force_reset: a real ``bool``. ``True``: the envs are reset before the model's next step (at an episode
                boundary with the reset the saved run would do next, keeping exact resume). ``False``: ``env`` is
                the env the model was saved from, still where it stood (e.g. the saved model's ``get_env()``): it
                is not reset and the saved last observation goes on, as in SB3.
            allow_pickle: read the file's pickle entry, if any. Unpickling can run arbitrary code: only for
                files you trust. Must be a real ``bool``.
            **kwargs: override stored hyperparameters (e.g. ``verbose=1``, ``learning_starts=0``): only the
                constructor's hyperparameters are accepted.

        Raises:
            ModelFileError: (a ``ValueError``) the file is unreadable, inconsistent, of another algorithm, or
                needs pickle or custom objects.
            TypeError: an unknown keyword argument, or an argument of the wrong type (``allow_pickle="false"``).
            ValueError: a bad argument value, or ``env``'s spaces differ from the model's.
            FileNotFoundError: no file at ``path`` (nor at ``path + ".zip"``).
        """
        # this library's format, or one another format claims (a Stable-Baselines3 2.x TD3/DDPG zip): see
        # rlkit_td3.fileio.model_files
        return model_files.format_for(path).load(
            cls,
            path,
            env,
            device,
            custom_objects,
            print_system_info,
            force_reset,
            allow_pickle,
            **kwargs,
        )

    def _exact_resume_problem(self) -> str | None:
        """Why no checkpoint of this model's run could resume exactly, or ``None`` when one can."""
        return exact_resume_problem(self)

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}(policy={self.policy_class.__name__}, n_envs={self.n_envs}, device={self.device})"
