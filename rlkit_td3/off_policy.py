"""``OffPolicyAlgorithm``: the collect → store → update loop and the deterministic actor-critic update.

TD3 and DDPG are this class with three settings fixed (see `rlkit_td3.td3` and
`rlkit_td3.ddpg`): the number of critics, target policy smoothing, and the policy delay.
The update (`OffPolicyAlgorithm._train_step()`) follows the TD3 paper (Fujimoto et al. 2018,
Algorithm 1) step by step.
"""

from __future__ import annotations

import os
import time
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

from rlkit_td3.base_class import BaseAlgorithm
from rlkit_td3.buffers import (
    DictReplayBuffer,
    NStepReplayBuffer,
    PrioritizedReplayBuffer,
    PrioritizedReplayBufferSamples,
    ReplayBuffer,
    ReplayBufferSamples,
)
from rlkit_td3.callbacks import MaybeCallback, convert_callback
from rlkit_td3.checks.arguments import check_bool
from rlkit_td3.fileio.model_files import register_algorithm
from rlkit_td3.her import HerReplayBuffer, per_env_infos
from rlkit_td3.noise import ActionNoise, NormalActionNoise, VectorizedActionNoise, draw_noise
from rlkit_td3.persistence import checkpoint, sb3_import  # noqa: F401  (they register their file formats)
from rlkit_td3.policies import POLICY_ALIASES, TD3Policy
from rlkit_td3.policies.td3_policy import python_scalars
from rlkit_td3.preprocessing import obs_copy, obs_rows, obs_set_row, obs_where
from rlkit_td3.schedules import ScheduleLike, as_schedule
from rlkit_td3.update.fused_update import FusedUpdate, fused_reference
from rlkit_td3.update.optim import MOMENT_FLUSH_EVERY, flush_tiny_moments, optimizer_step, zero_grad
from rlkit_td3.utils import (
    NonFiniteError,
    _check_float,
    _check_int,
    _parse_train_freq,
    auto_num_threads,
    get_parameters_by_name,
    warn_thread_oversubscription,
)
from rlkit_td3.vec_env.training_env import (
    _all_fit_float32,
    _fits_float32,
    episode_statistics,
    non_finite_error,
)

DEFAULT_NOISE_SIGMA = 0.1
"""σ of the default Gaussian exploration noise, in normalised units (TD3 paper, sfujim/TD3, RL Zoo)."""
WARMUP_ACTIONS = {  # what the warm-up takes, by ``warmup_action_noise``: the words of learning_starts' doc and Tips
    True: "uniform random actions plus the exploration noise, clipped (Stable-Baselines3's warm-up)",
    False: "uniform random actions only (the TD3 paper's warm-up)",
}


@register_algorithm
class OffPolicyAlgorithm(BaseAlgorithm):
    """Abstract base of TD3 and DDPG: warm-up, exploration, replay, the update loop and the update.

    What every model has around the loop (the env, the logger, ``predict``, parameters, save/load) comes from
    `rlkit_td3.base_class.BaseAlgorithm`. Do not instantiate it directly: use `TD3` or `DDPG`, or subclass it and
    pass the three switches (``policy_delay``, ``target_policy_noise``/``target_noise_clip`` and ``n_critics`` in
    ``policy_kwargs``).

    Args:
        policy: ``"MlpPolicy"`` or a `TD3Policy` subclass.
        env: a gymnasium Env, an env id, or a gymnasium ``VectorEnv`` with any number of envs.
        learning_rate: learning rate of both optimizers, a float or a schedule of the remaining
            progress (1 → 0).
        buffer_size: replay buffer capacity in transitions.
        learning_starts: warm-up steps before the actor acts and updates begin. By default they take uniform random
            actions plus the exploration noise, clipped (Stable-Baselines3's warm-up); see ``warmup_action_noise``.
        batch_size: transitions per gradient step.
        tau: Polyak coefficient of the target networks, in [0, 1] (0: the targets never move, as SB3 allows).
        gamma: discount factor, in [0, 1].
        train_freq: update every ``train_freq`` env steps (calls to ``env.step``), or a tuple
            ``(n, "step")`` / ``(n, "episode")``.
        gradient_steps: gradient steps after each rollout; -1 means as many as transitions collected, 0 none
            (the model only collects, as in SB3).
        action_noise: exploration noise in normalised units. ``"default"`` (the default) is Gaussian with
            σ = 0.1; ``None`` turns exploration noise off.
        replay_buffer_class: a `ReplayBuffer` subclass (default ``ReplayBuffer``, or ``NStepReplayBuffer`` when
            ``n_steps > 1``).
        replay_buffer_kwargs: extra keyword arguments for the buffer.
        optimize_memory_usage: store each observation once in the replay buffer (about half the memory);
            terminations and truncations stay exact (see `ReplayBuffer`).
        policy_delay: update the actor and the targets every ``policy_delay`` critic updates.
        target_policy_noise: σ of the Gaussian noise added to target actions (0 turns smoothing off).
        target_noise_clip: the smoothing noise is clipped to ±``target_noise_clip``.
        actor_learning_rate: overrides ``learning_rate`` for the actor (float or schedule).
        critic_learning_rate: overrides ``learning_rate`` for the critics (float or schedule).
        n_steps: n-step returns (SB3's name): targets use ``n_steps`` rewards and the discount ``gamma ** k``
            the buffer reports (see `NStepReplayBuffer`). Default 1: one-step TD3. Needs an ``NStepReplayBuffer``
            subclass, which is chosen when ``replay_buffer_class`` is not given; the model passes ``n_steps`` and
            ``gamma`` to such a buffer unless ``replay_buffer_kwargs`` sets them (SB3's way, also accepted).
        warmup_action_noise: add the exploration noise to the uniform warm-up actions, then clip, as SB3's loop
            does (the default, True). ``False``: pure uniform warm-up actions, as in the TD3 paper (the ``paper``
            preset). Files saved before this switch existed load with ``False``, the warm-up they were run with.
        policy_kwargs: keyword arguments for the policy (``net_arch``, ``activation_fn``, ``n_critics``,
            ``optimizer_class``, ``optimizer_kwargs``). The caller's dict is never modified.
        tensorboard_log: folder for TensorBoard runs; each ``learn`` call logs to
            ``<tensorboard_log>/<tb_log_name>_<N>`` (needs the ``tensorboard`` extra). ``None``: no TensorBoard.
        verbose: 0 silent, 1 prints a training table every ``log_interval`` episodes.
        seed: seeds torch, the buffer's sampler, the noise, the warm-up actions and the env's first reset.
        device: ``"auto"``, ``"cpu"``, ``"cuda"``, ...

    Attributes:
        use_fused_update: ``train`` makes each eligible update with `rlkit_td3.update.fused_update.FusedUpdate`, the
            same update as `_train_step` without autograd's overhead (bit for bit with the reference products, see
            ``fused_update_matmul``); ``False`` always uses `_train_step`. Default True; not saved (a loaded model
            starts with True).
        fused_update_matmul: who computes the fused update's matrix products (float32 on the CPU): ``"reference"``,
            the calls autograd makes, so the update is `_train_step`'s bit for bit; ``"onednn"``, oneDNN's inner
            products for the products whose dimensions are all 64 or more, the same update to float32 rounding (1.5-2
            times MKL's speed on AMD Zen 5 CPUs); ``"mixed"``, the same at one thread, and at several threads oneDNN
            for those products of a single network and the reference's batched call for the critic ensemble's
            (faster on AMD Zen 4); ``"auto"`` (the default), ``"onednn"`` or ``"mixed"`` on AMD CPUs by CPU family and
            the reference calls elsewhere (`rlkit_td3.update.fused_update.resolve_matmul`).
            Saved with a checkpoint's training state, so a resumed run makes the same choice.
    """

    policy_aliases: ClassVar[dict[str, type[TD3Policy]]] = POLICY_ALIASES

    def __init__(
        self,
        policy: str | type[TD3Policy],
        env: gym.Env | VectorEnv | str | None,
        learning_rate: ScheduleLike = 1e-3,
        buffer_size: int = 1_000_000,
        learning_starts: int = 100,
        batch_size: int = 256,
        tau: float = 0.005,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 1,
        gradient_steps: int = 1,
        action_noise: ActionNoise | str | None = "default",
        replay_buffer_class: type[ReplayBuffer] | None = None,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        optimize_memory_usage: bool = False,
        *,
        policy_delay: int,
        target_policy_noise: float,
        target_noise_clip: float,
        actor_learning_rate: ScheduleLike | None = None,
        critic_learning_rate: ScheduleLike | None = None,
        n_steps: int = 1,
        warmup_action_noise: bool = True,
        policy_kwargs: dict[str, Any] | None = None,
        tensorboard_log: str | os.PathLike[str] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: torch.device | str = "auto",
        _init_setup_model: bool = True,
    ) -> None:
        if type(self) is OffPolicyAlgorithm:
            raise TypeError("OffPolicyAlgorithm is abstract: use TD3 or DDPG, or subclass it")
        self.actor_learning_rate = (
            None if actor_learning_rate is None else as_schedule(actor_learning_rate, "actor_learning_rate")
        )
        self.critic_learning_rate = (
            None if critic_learning_rate is None else as_schedule(critic_learning_rate, "critic_learning_rate")
        )
        self.buffer_size = _check_int("buffer_size", buffer_size, 1)
        self.batch_size = _check_int("batch_size", batch_size, 1)  # may exceed buffer_size: drawn with replacement
        self.learning_starts = _check_int("learning_starts", learning_starts, 0)
        self.tau = _check_float("tau", tau, 0.0, 1.0)  # 0: the targets stay as built (SB3 accepts it)
        self.gamma = _check_float("gamma", gamma, 0.0, 1.0)
        self.train_freq = _parse_train_freq(train_freq)
        self.gradient_steps = _check_int("gradient_steps", gradient_steps, -1)  # 0: no training (as SB3)
        self.policy_delay = _check_int("policy_delay", policy_delay, 1)
        self.target_policy_noise = _check_float("target_policy_noise", target_policy_noise, 0.0, float("inf"))
        self.target_noise_clip = _check_float("target_noise_clip", target_noise_clip, 0.0, float("inf"))
        if not (action_noise is None or action_noise == "default" or isinstance(action_noise, ActionNoise)):
            raise TypeError(f"action_noise must be an ActionNoise, 'default' or None, got {action_noise!r}")
        self._action_noise_arg = action_noise
        if replay_buffer_class is not None and not (
            isinstance(replay_buffer_class, type) and issubclass(replay_buffer_class, ReplayBuffer)
        ):
            raise TypeError(f"replay_buffer_class must be a ReplayBuffer subclass, got {replay_buffer_class!r}")
        self.n_steps = _check_int("n_steps", n_steps, 1)
        if not isinstance(warmup_action_noise, (bool, np.bool_)):
            raise TypeError(f"warmup_action_noise must be a bool, got {warmup_action_noise!r}")
        self.warmup_action_noise = bool(warmup_action_noise)
        if replay_buffer_class is None:
            replay_buffer_class = NStepReplayBuffer if self.n_steps > 1 else ReplayBuffer
        if self.n_steps > 1 and not issubclass(replay_buffer_class, NStepReplayBuffer):
            raise ValueError(
                f"n_steps={self.n_steps} needs an NStepReplayBuffer subclass as replay_buffer_class, "
                f"got {replay_buffer_class.__name__}"
            )
        self.replay_buffer_class = replay_buffer_class
        self.replay_buffer_kwargs = python_scalars(dict(replay_buffer_kwargs or {}))
        # SB3's way to configure a given n-step buffer, replay_buffer_kwargs={"n_steps": ..., "gamma": ...}, works too.
        buffer_n_steps = self.replay_buffer_kwargs.get("n_steps", self.n_steps)
        if self.n_steps > 1 and buffer_n_steps != self.n_steps:
            raise ValueError(
                f"n_steps={self.n_steps} and replay_buffer_kwargs n_steps={buffer_n_steps!r} disagree: give one of them"
            )
        check_bool("optimize_memory_usage", optimize_memory_usage)
        self.optimize_memory_usage = bool(optimize_memory_usage)
        super().__init__(
            policy,
            env,
            learning_rate,
            policy_kwargs=policy_kwargs,
            tensorboard_log=tensorboard_log,
            verbose=verbose,
            seed=seed,
            device=device,
            _init_setup_model=_init_setup_model,
        )
        self._pending_reset_step = False
        self._env_seeded = False
        self.use_fused_update = True
        self.fused_update_matmul = "auto"
        # (state key, FusedUpdate or None) of the last train() call, see _fused_update_for
        self._fused_update: tuple[tuple, FusedUpdate | None] | None = None
        if _init_setup_model:
            self._setup_model()
            self._fit_to_env(strict=True)

    @property
    def use_fused_update(self) -> bool:
        """Whether ``train`` makes eligible updates with `rlkit_td3.update.fused_update.FusedUpdate` (see the class
        docstring); set it to True or False (a bool: anything else is a ``TypeError``)."""
        return self._use_fused_update

    @use_fused_update.setter
    def use_fused_update(self, value: bool) -> None:
        self._use_fused_update = check_bool("use_fused_update", value)

    def _make_replay_buffer(self, seed: int | None) -> ReplayBuffer:
        """An empty replay buffer of the model's class and settings."""
        buffer_class = self.replay_buffer_class
        if buffer_class is ReplayBuffer and isinstance(self.observation_space, spaces.Dict):
            buffer_class = DictReplayBuffer  # the default for Dict observations, as in SB3
        buffer_kwargs = {
            "optimize_memory_usage": self.optimize_memory_usage,
            **({"n_steps": self.n_steps, "gamma": self.gamma} if issubclass(buffer_class, NStepReplayBuffer) else {}),
            **self.replay_buffer_kwargs,
        }
        if issubclass(buffer_class, HerReplayBuffer):
            buffer_kwargs["env"] = self._venv  # relabelled rewards come from the env's compute_reward
        return buffer_class(
            self.buffer_size,
            self.observation_space,
            self.action_space,
            device=self.device,
            n_envs=self.n_envs,
            seed=seed,
            **buffer_kwargs,
        )

    # ------------------------------------------------------------------ setup
    def _setup_model(self) -> None:
        """Build the policy, the buffer, the noise and the RNGs from the stored settings."""
        assert self.observation_space is not None and self.action_space is not None
        child_seeds: list[int | None] = [None] * 4
        if self.seed is not None:
            torch.manual_seed(self.seed)
            child_seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(self.seed).spawn(4)]
        buffer_seed, noise_seed, warmup_seed, smoothing_seed = child_seeds

        actor_lr = self._actor_schedule(1.0)
        critic_lr = self._critic_schedule(1.0)
        self.policy = self.policy_class(
            self.observation_space,
            self.action_space,
            **self.policy_kwargs,
            actor_learning_rate=actor_lr,
            critic_learning_rate=critic_lr,
        ).to(self.device)
        self.replay_buffer = self._make_replay_buffer(buffer_seed)
        self.replay_buffer.run_id = self.run_id  # the run its files name (see BaseAlgorithm's run_id)
        self.action_noise = self._make_action_noise(noise_seed)
        self._warmup_rng = np.random.default_rng(warmup_seed)
        # the target policy smoothing noise's own generator: a checkpoint restores it, not torch's global one
        self._smoothing_rng = torch.Generator(device=self.device)
        if smoothing_seed is None:
            self._smoothing_rng.seed()
        else:
            self._smoothing_rng.manual_seed(smoothing_seed)
        self._action_dim = int(np.prod(self.action_space.shape))
        self._actor_params = list(self.policy.actor.parameters())
        self._actor_target_params = list(self.policy.actor_target.parameters())
        self._critic_params = list(self.policy.critic.parameters())
        self._critic_target_params = list(self.policy.critic_target.parameters())
        # batch norm statistics, copied to the targets with each Polyak update (as in SB3); usually empty
        self._norm_stats = get_parameters_by_name(self.policy.actor, ["running_"])
        self._norm_stats += get_parameters_by_name(self.policy.critic, ["running_"])
        self._target_norm_stats = get_parameters_by_name(self.policy.actor_target, ["running_"])
        self._target_norm_stats += get_parameters_by_name(self.policy.critic_target, ["running_"])
        self._mode_dependent = self.policy.mode_dependent()
        self._reset_loss_stats()

    def set_env(self, env: gym.Env | VectorEnv | str, force_reset: bool = True) -> None:
        """Replace the training env; see `BaseAlgorithm.set_env()`. A `HerReplayBuffer` relabels its rewards with
        the new env's ``compute_reward``."""
        super().set_env(env, force_reset)
        if isinstance(getattr(self, "replay_buffer", None), HerReplayBuffer):
            self.replay_buffer.env = self._venv

    def _make_action_noise(self, seed: int | None) -> ActionNoise | None:
        noise = self._action_noise_arg
        if noise is None:
            return None
        if noise == "default":
            dim = int(np.prod(self.action_space.shape))
            noise = NormalActionNoise(np.zeros(dim), DEFAULT_NOISE_SIGMA * np.ones(dim))
        if self.n_envs > 1 and not isinstance(noise, VectorizedActionNoise):
            return VectorizedActionNoise(noise, self.n_envs, seed=seed)
        if seed is not None:
            noise.seed(seed)
        return noise

    def _actor_schedule(self, progress_remaining: float) -> float:
        return (self.actor_learning_rate or self.learning_rate)(progress_remaining)

    def _critic_schedule(self, progress_remaining: float) -> float:
        return (self.critic_learning_rate or self.learning_rate)(progress_remaining)

    def _reset_loss_stats(self) -> None:
        zero = torch.zeros((), device=self.device)
        self._critic_loss_sum, self._actor_loss_sum = zero.clone(), zero.clone()
        self._n_critic_losses = self._n_actor_losses = 0

    # ------------------------------------------------------------------ learning loop
    def learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int | None = 4,
        tb_log_name: str | None = None,
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> OffPolicyAlgorithm:
        """Train for ``total_timesteps`` env steps (counted over all envs) and return ``self``.

        Args:
            total_timesteps: env steps to collect in this call (an integral float such as ``1e5`` is accepted, as
                in SB3).
            callback: a callback, a list of them, or a function ``f(locals, globals) -> bool``.
            log_interval: write the logger (stdout table, TensorBoard, ...) every this many episodes; ``None``
                never (as in SB3: log by timesteps with `LogEveryNTimesteps`).
            tb_log_name: name of the TensorBoard run folder (default: the class name, e.g. ``TD3``).
            reset_num_timesteps: False continues the counters of a previous ``learn`` call or of a loaded
                model. The schedules' progress runs from 1 to 0 over each call, except that a call ending where
                an unfinished call would have ended (``learn(remaining, reset_num_timesteps=False)`` after a
                checkpoint, a crash or a callback stop) continues that call's progress.
            progress_bar: show a progress bar (needs the ``progress`` extra: tqdm and rich).

        Threads: ``learn`` trains at ``model.torch_num_threads`` torch intra-op threads, set at its start; the
        caller's setting is put back at the end, even on exceptions. The default, ``"auto"``, is resolved at the
        model's first ``learn`` by `rlkit_td3.utils.auto_num_threads` (the caller's count on an idle machine, fewer
        when other work keeps the CPUs busy) and kept for the rest of the run. A model loaded from a file trains
        at the count the file records (exact resume). ``None`` trains at the caller's setting.
        """
        total_timesteps = _check_int("total_timesteps", total_timesteps, 1, integral_float=True)
        if log_interval is not None:
            log_interval = _check_int("log_interval", log_interval, 1)
        if tb_log_name is None:
            tb_log_name = type(self).__name__
        if not isinstance(tb_log_name, str) or not tb_log_name or os.sep in tb_log_name:
            raise ValueError(f"tb_log_name must be a non-empty folder name, got {tb_log_name!r}")
        if self._venv is None:
            raise ValueError("the model has no env: pass env= to load() or call set_env() before learn()")
        reset_num_timesteps = check_bool("reset_num_timesteps", reset_num_timesteps)
        callback = convert_callback(callback, progress_bar=progress_bar)
        if reset_num_timesteps:
            self.num_timesteps = 0
            self._episode_num = 0
            self._last_obs = None
            self._envs_restored = False
            self._rollout = None
            stats = episode_statistics(self._venv)
            if stats is not None:
                for queue in (stats.return_queue, stats.length_queue, stats.time_queue):
                    queue.clear()
        end = self.num_timesteps + total_timesteps
        # Progress runs from _start_timesteps to _total_timesteps. A call that finishes an unfinished one (same
        # end) keeps its start, so that a resumed checkpoint continues the schedules where they stood.
        if reset_num_timesteps or not self._start_timesteps <= self.num_timesteps < self._total_timesteps == end:
            self._start_timesteps = self.num_timesteps
        self._total_timesteps = end
        self._learn_start_timesteps = self.num_timesteps
        self._start_time = time.perf_counter()
        if self._env_used_outside:  # user code stepped get_env(): the last observations are stale
            self._last_obs = None
            self._envs_restored = False
            self._rollout = None
        if self._last_obs is None and not self._envs_restored:
            self._reset_env()
        self._setup_logger(tb_log_name, reset_num_timesteps)
        self._mode_dependent = self.policy.mode_dependent()  # a layer may have been swapped since construction
        caller_threads = torch.get_num_threads()
        if isinstance(self.torch_num_threads, str) and self.torch_num_threads == "auto":
            # chosen once per model, so that a run (and its checkpoints) keeps one count throughout
            self.torch_num_threads = auto_num_threads(caller_threads)
        if self.torch_num_threads is not None:
            torch.set_num_threads(_check_int("torch_num_threads", self.torch_num_threads, 1))
        self._learn_num_threads = torch.get_num_threads()
        try:
            # inside the try: a caller who turns warnings into errors still gets their thread count back
            warn_thread_oversubscription()
            callback.init_callback(self)
            callback.on_training_start(locals(), globals())

            while self.num_timesteps < self._total_timesteps:
                continue_training, collected = self.collect_rollouts(callback, log_interval)
                if not continue_training:
                    break
                if self.num_timesteps > self.learning_starts and self.replay_buffer.size() > 0:
                    gradient_steps = self.gradient_steps if self.gradient_steps >= 0 else collected
                    if gradient_steps > 0:
                        self.train(gradient_steps, self.batch_size)

            if self._n_updates:
                self._record_train_values()  # readable in logger.name_to_value after learn(), as in SB3
            callback.on_training_end()
        finally:
            torch.set_num_threads(caller_threads)
        return self

    def _reset_env(self) -> None:
        # The env is seeded once, at the model's first reset; later resets continue its RNG.
        seed = None if self._env_seeded else self.seed
        self._env_seeded = True
        obs, _ = self._venv.reset(seed=seed)
        self._check_reset_obs(obs, np.ones(self.n_envs, dtype=bool))
        self.policy.update_obs_statistics(obs)
        self._last_obs = obs
        self._envs_restored = False
        self._needs_reset = np.zeros(self.n_envs, dtype=bool)
        self._pending_reset_step = False
        self._env_used_outside = False
        if self.action_noise is not None:
            self.action_noise.reset()

    def collect_rollouts(self, callback: Any, log_interval: int | None) -> tuple[bool, int]:
        """Step the envs until ``train_freq`` is reached, storing every valid transition.

        The rollout's counters live on the model (``self._rollout``) rather than in local variables, so a
        checkpoint written by a callback in the middle of a rollout resumes it exactly.

        Returns:
            ``(continue_training, transitions_collected)``.
        """
        freq, unit = self.train_freq
        if self.policy.actor.training:  # acting runs in evaluation mode (batch norm, dropout), as in SB3
            self.policy.set_training_mode(False)
        if self._rollout is None:
            self._rollout = {"calls": 0, "episodes": 0, "collected": 0}
            callback.on_rollout_start()
        rollout = self._rollout
        while (
            rollout["calls"] < freq if unit == "step" else rollout["episodes"] < freq
        ) and self.num_timesteps < self._total_timesteps:
            if self._autoreset_mode == AutoresetMode.DISABLED and self._needs_reset.any():
                self._reset_ended_envs()
            obs = self._last_obs
            actions = self._sample_action(obs)
            env_actions = self.policy.unscale_action(actions.reshape(self.n_envs, *self.action_space.shape))
            new_obs, rewards, terminated, truncated, infos = self._step_envs(env_actions)
            dones = terminated | truncated
            # Checked before anything is stored or counted (see _raise_non_finite).
            finite = _all_fit_float32(new_obs) and _all_fit_float32(rewards)
            if finite and self._autoreset_mode == AutoresetMode.SAME_STEP and dones.any():
                finite = all(_all_fit_float32(infos["final_obs"][i]) for i in np.flatnonzero(dones))
            if not finite:
                self._raise_non_finite(new_obs, rewards, infos, dones)
            self.policy.update_obs_statistics(new_obs)
            self.num_timesteps += self.n_envs
            rollout["calls"] += 1
            valid = self._store_transition(obs, new_obs, actions, rewards, terminated, truncated, dones, infos)
            rollout["collected"] += int(valid.sum())
            self._current_progress_remaining = 1.0 - (self.num_timesteps - self._start_timesteps) / max(
                1, self._total_timesteps - self._start_timesteps
            )
            rollout["episodes"] += self._track_episodes(rewards, dones, valid, log_interval)
            # The step is complete (stored, counted) before the callback sees it: a checkpoint taken here
            # holds this transition.
            callback.update_locals(locals())
            if not callback.on_step():
                self._rollout = None
                return False, rollout["collected"]
        self._rollout = None
        callback.on_rollout_end()
        return True, rollout["collected"]

    def _step_envs(self, env_actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """``env.step``, except on the first step of a run resumed where every env's episode had just ended
        under next-step autoreset: there the saved run's step only reset the envs (inside gymnasium, which
        stores nothing of that step), and this one does the same reset, from the restored generators."""
        if not self._pending_reset_step:
            return self._venv.step(env_actions)
        self._pending_reset_step = False
        obs, infos = self._venv.reset()
        done = np.zeros(self.n_envs, dtype=bool)
        return obs, np.zeros(self.n_envs), done, done.copy(), infos

    def _raise_non_finite(
        self,
        obs: np.ndarray,
        rewards: np.ndarray | None,
        infos: dict[str, Any] | None = None,
        dones: np.ndarray | None = None,
        where: str = "step()",
        rows: np.ndarray | None = None,
    ) -> None:
        """Raise `NonFiniteError` naming the env, the step and the value: NaNs would otherwise spread silently
        into the buffer and the networks.

        Called before anything of the step (or reset) is stored, counted or fed to the actor. The model is left
        as if the step had not happened, except that the envs are marked for a full reset: the next ``learn``
        (``reset_num_timesteps=False`` included) starts fresh episodes, so no stored transition skips the bad
        step or joins two episodes.
        """
        self._last_obs = None
        self._envs_restored = False
        self._rollout = None
        raise non_finite_error(
            self._venv, self._autoreset_mode, self.num_timesteps, obs, rewards, infos, dones, where=where, rows=rows
        )

    def _check_reset_obs(self, obs: np.ndarray, mask: np.ndarray) -> None:
        """Raise `NonFiniteError` if an observation ``reset()`` returned for a ``mask``-ed env is not finite."""
        rows = obs if isinstance(obs, dict) else np.reshape(obs, (self.n_envs, -1))
        if not _all_fit_float32(obs) and not _fits_float32(rows)[mask].all():
            self._raise_non_finite(obs, None, where="reset()", rows=mask)

    def _reset_ended_envs(self) -> None:
        """Reset the envs whose episode ended at the previous step (autoreset disabled)."""
        mask = self._needs_reset
        stats = episode_statistics(self._venv)
        if stats is None:
            reset_obs, _ = self._venv.reset(options={"reset_mask": mask.copy()})
        else:
            # gymnasium's vector env consumes the mask from the options it shares with the statistics
            # wrapper, which would then restart every env's statistics: reset below it, and restart only
            # the masked envs' statistics here.
            reset_obs, _ = stats.env.reset(options={"reset_mask": mask.copy()})
            stats.episode_returns[mask] = 0.0
            stats.episode_lengths[mask] = 0
            stats.episode_start_times[mask] = time.perf_counter()
            stats.prev_dones[mask] = False
        self._check_reset_obs(reset_obs, mask)
        self.policy.update_obs_statistics(obs_rows(reset_obs, mask))
        # after load() every env is due (`_envs_restored`): the mask covers them all, whatever _last_obs held
        self._last_obs = reset_obs if self._last_obs is None else obs_where(mask, reset_obs, self._last_obs)
        self._envs_restored = False
        self._needs_reset = np.zeros(self.n_envs, dtype=bool)

    def _sample_action(self, obs: np.ndarray) -> np.ndarray:
        """Normalised actions, clipped: uniform during warm-up (plus noise if ``warmup_action_noise``, as SB3's
        loop; the TD3 paper's warm-up is pure uniform), then the actor's plus exploration noise."""
        if self.num_timesteps < self.learning_starts:
            actions = self._warmup_rng.uniform(-1.0, 1.0, size=(self.n_envs, self._action_dim)).astype(np.float32)
            if not self.warmup_action_noise:
                return actions
        else:
            actions = self.policy.actor_numpy(obs)
        if self.action_noise is not None:
            actions = np.clip(
                actions + draw_noise(self.action_noise, self.n_envs, self.action_space), -1.0, 1.0, dtype=np.float32
            )
        return actions

    def _store_transition(
        self,
        obs: np.ndarray,
        new_obs: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        dones: np.ndarray,
        infos: dict[str, Any],
    ) -> np.ndarray:
        """Store the step's transitions and advance ``_last_obs``; return the mask of valid rows.

        Same-step autoreset: the true next obs of an ended episode is ``infos["final_obs"]``.
        Next-step autoreset: the step after an episode end only resets that env, so its row is not a
        transition and is skipped. Autoreset disabled: ended envs are marked, and reset just before the
        next step.
        """
        next_obs = new_obs
        valid = np.ones(self.n_envs, dtype=bool)
        mode = self._autoreset_mode
        if mode == AutoresetMode.SAME_STEP and dones.any():
            next_obs = obs_copy(new_obs)
            for i in np.flatnonzero(dones):
                obs_set_row(next_obs, i, infos["final_obs"][i])
        elif mode == AutoresetMode.NEXT_STEP:
            valid = ~self._needs_reset
            self._needs_reset = dones.copy()
        elif mode == AutoresetMode.DISABLED:
            self._needs_reset = dones.copy()
        # HER with copy_info_dict stores each transition's info dict for compute_reward.
        extra = {"infos": per_env_infos(infos, self.n_envs)} if getattr(self.replay_buffer, "copy_info_dict", 0) else {}
        if valid.all():
            self.replay_buffer.add(obs, next_obs, actions, rewards, terminated, truncated, **extra)
        elif valid.any():
            if extra:
                extra["infos"] = [info for info, ok in zip(extra["infos"], valid) if ok]
            self.replay_buffer.add(
                obs_rows(obs, valid),
                obs_rows(next_obs, valid),
                actions[valid],
                rewards[valid],
                terminated[valid],
                truncated[valid],
                env_indices=np.flatnonzero(valid),
                **extra,
            )
        self._last_obs = new_obs
        return valid

    def _track_episodes(
        self, rewards: np.ndarray, dones: np.ndarray, valid: np.ndarray, log_interval: int | None
    ) -> int:
        """Episode count, per-env noise resets and the periodic log; returns the number of episodes ended.

        Episode returns and lengths are recorded by the env's episode-statistics wrapper (``ep_info_buffer``).
        """
        ended = np.flatnonzero(dones & valid)
        for _ in ended:
            self._episode_num += 1
            if log_interval is not None and self._episode_num % log_interval == 0 and self.logger.writers:
                self._dump_logs()
        if len(ended) and self.action_noise is not None:
            if isinstance(self.action_noise, VectorizedActionNoise):
                self.action_noise.reset(ended)
            else:
                self.action_noise.reset()
        return len(ended)

    # ------------------------------------------------------------------ the update
    def train(self, gradient_steps: int, batch_size: int | None = None) -> None:
        """Run ``gradient_steps`` updates on batches sampled from the current replay buffer; after each, the policy's
        ``train_representation(batch, n_updates)`` hook (SALE's encoders; nothing for the plain networks)."""
        gradient_steps = _check_int("gradient_steps", gradient_steps, 0)
        batch_size = self.batch_size if batch_size is None else _check_int("batch_size", batch_size, 1)
        self._update_learning_rate()
        if isinstance(self.replay_buffer, PrioritizedReplayBuffer):
            self.replay_buffer.set_progress(1.0 - self._current_progress_remaining)  # anneals PER's beta
        fused = self._fused_update_for(batch_size)
        if self._mode_dependent and not self.policy.actor.training:  # switched only where the mode matters
            self.policy.set_training_mode(True)
        for _ in range(gradient_steps):
            self._n_updates += 1
            batch = self.policy.normalize_batch(self.replay_buffer.sample(batch_size))  # as-is without normalize_obs
            update_actor = self._n_updates % self.policy_delay == 0
            if fused is not None and fused.accepts(batch):
                fused.step(batch, update_actor)  # the same update, bit for bit, without autograd
            else:
                self._train_step(batch, update_actor=update_actor)
            self.policy.train_representation(batch, self._n_updates)  # e.g. SALE's encoders; most policies: nothing
            if self._n_updates % MOMENT_FLUSH_EVERY == 0:
                for name in self.policy.optimizer_names:
                    flush_tiny_moments(getattr(self.policy, name))
        # One check per call (not per step): the running loss sums are finite only if every loss added to them was
        # (they were finite before this call, or the call before it raised).
        if not bool(torch.isfinite(self._critic_loss_sum + self._actor_loss_sum)):
            raise NonFiniteError(
                f"a training loss became non-finite during updates {self._n_updates - gradient_steps + 1}.."
                f"{self._n_updates} (num_timesteps={self.num_timesteps}); check rewards and observations for huge "
                "values, or lower the learning rate. The networks may hold NaNs now: reload the last checkpoint."
            )

    def _fused_update_for(self, batch_size: int) -> FusedUpdate | None:
        """The model's `FusedUpdate` for ``batch_size``, rebuilt when the policy, a module, a parameter or the batch
        size changed since it was built; None when ``use_fused_update`` is off or the model is not eligible."""
        if not self._use_fused_update:
            return None
        key = FusedUpdate.state_key(self, batch_size)
        cached = self._fused_update
        if cached is None or cached[0] != key:
            fused = None
            if batch_size >= 2 and FusedUpdate.ineligibility(self) is None:
                fused = FusedUpdate(self, batch_size)
            cached = self._fused_update = (key, fused)
        return cached[1]

    def _update_learning_rate(self) -> None:
        progress = self._current_progress_remaining
        for optimizer, lr in (
            (self.policy.actor_optimizer, self._actor_schedule(progress)),
            (self.policy.critic_optimizer, self._critic_schedule(progress)),
        ):
            for group in optimizer.param_groups:
                group["lr"] = lr

    @fused_reference
    def _train_step(self, batch: ReplayBufferSamples, update_actor: bool) -> None:
        """One TD3 update (Fujimoto et al. 2018, Algorithm 1), on a sampled ``batch``."""
        policy = self.policy
        with torch.no_grad():
            # Target actions: the actor target at s', plus clipped Gaussian smoothing noise, within bounds.
            next_actions = policy.actor_target(batch.next_observations)
            if self.target_policy_noise > 0.0:
                noise = torch.randn(next_actions.shape, generator=self._smoothing_rng, device=next_actions.device).mul_(
                    self.target_policy_noise
                )
                noise = noise.clamp(-self.target_noise_clip, self.target_noise_clip)
                next_actions = (next_actions + noise).clamp(-1.0, 1.0)
            # y = r + γ (1 − terminated) min_i Q'_i(s', a'): bootstrap through truncation, not termination.
            # n-step batches carry their own discount γ^k (k transitions summed into r).
            next_q = policy.critic_target(batch.next_observations, next_actions).min(dim=0).values
            discount = getattr(batch, "discounts", self.gamma)
            target_q = batch.rewards + discount * (1.0 - batch.terminated) * next_q

        # Critic loss: the sum over critics of each critic's MSE against y (prioritized batches: the buffer's
        # loss, importance-weighted for PER, Huber for LAP, which also updates the priorities).
        current_q = policy.critic(batch.observations, batch.actions)
        if isinstance(batch, PrioritizedReplayBufferSamples):
            critic_loss = self.replay_buffer.critic_loss(batch, current_q, target_q)
        else:
            critic_loss = (current_q - target_q).pow(2).mean(dim=1).sum()
        zero_grad(policy.critic_optimizer)
        critic_loss.backward()
        optimizer_step(policy.critic_optimizer)
        self._critic_loss_sum += critic_loss.detach()
        self._n_critic_losses += 1

        if update_actor:
            # Delayed policy update: ascend Q1(s, π(s)); no gradient is computed for critic parameters.
            actor_loss = -policy.critic.q1_forward(batch.observations, policy.actor(batch.observations)).mean()
            zero_grad(policy.actor_optimizer)
            actor_loss.backward()
            optimizer_step(policy.actor_optimizer)
            self._actor_loss_sum += actor_loss.detach()
            self._n_actor_losses += 1
            # Polyak averaging of every target network: θ' ← τ θ + (1 − τ) θ'.
            with torch.no_grad():
                torch._foreach_lerp_(self._critic_target_params, self._critic_params, self.tau)
                torch._foreach_lerp_(self._actor_target_params, self._actor_params, self.tau)
                if self._norm_stats:
                    torch._foreach_copy_(self._target_norm_stats, self._norm_stats)
