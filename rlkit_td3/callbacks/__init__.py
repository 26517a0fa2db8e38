"""Callbacks with Stable-Baselines3's names and hook order: the protocol (`BaseCallback` and the composing
callbacks, defined in `rlkit_td3.callbacks.base` and importable from here) and the built-in callbacks.

Built-in callbacks: `EvalCallback`, `CheckpointCallback`, `EveryNTimesteps`, the stop
callbacks and `ProgressBarCallback`. Their frequencies count env timesteps (summed over envs),
not calls as in Stable-Baselines3, whose names, arguments and hook order they follow otherwise.
See `rlkit_td3.callbacks.base` for the order in which ``learn()`` calls the hooks.
"""

from __future__ import annotations

import io
import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv

from rlkit_td3.callbacks.base import (  # noqa: F401  (the protocol, importable from SB3's module)
    BaseCallback,
    CallbackList,
    CallbackModel,
    ConvertCallback,
    EventCallback,
    EveryNTimesteps,
    LogEveryNTimesteps,
    _EveryTimesteps,
)
from rlkit_td3.checks.arguments import check_bool
from rlkit_td3.evaluation import evaluate_policy, is_sb3_vec_env
from rlkit_td3.fileio.serialization import atomic_path, atomic_write

if TYPE_CHECKING:
    pass


def _save_npz(path: Path, **arrays: np.ndarray) -> None:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    with atomic_write(path) as fh:
        fh.write(buf.getvalue())


class EvalCallback(EventCallback):
    """Evaluates the model every ``eval_freq`` env timesteps, keeps the best model and logs ``eval/*``.

    Each evaluation runs `evaluate_policy()` for ``n_eval_episodes`` episodes, records
    ``eval/mean_reward`` and ``eval/mean_ep_length`` and dumps the logger. With ``log_path`` it (re)writes
    ``<log_path>/evaluations.npz`` with arrays ``timesteps`` (n_evals,), ``results`` and ``ep_lengths``
    (n_evals, n_eval_episodes); with ``best_model_save_path`` it saves ``best_model.zip`` there whenever
    the mean return improves. When the eval env's final infos carry ``"is_success"`` (goal-reaching envs),
    the share of successful episodes is logged as ``eval/success_rate`` and saved as ``successes``.

    When the model trains on a `VecNormalize` env, its statistics are copied into ``eval_env`` (which must be
    wrapped the same way; see `sync_envs_normalization`) before each evaluation, as in Stable-Baselines3.

    Unlike Stable-Baselines3 (which counts calls, i.e. ``eval_freq × n_envs`` timesteps), ``eval_freq``
    counts env timesteps: an evaluation runs each time ``num_timesteps`` crosses a multiple of it.

    Args:
        eval_env: the env to evaluate on (an Env, an env id, a gymnasium vector env or a Stable-Baselines3-style
            VecEnv). Use a separate env from the training one.
        callback_on_new_best: run when a new best mean return is reached (e.g.
            `StopTrainingOnRewardThreshold`).
        callback_after_eval: run after every evaluation (e.g. `StopTrainingOnNoModelImprovement`).
        n_eval_episodes: episodes per evaluation.
        eval_freq: the period, in env timesteps.
        log_path: folder for ``evaluations.npz`` (``None``: not written).
        best_model_save_path: folder for ``best_model.zip`` (``None``: not saved).
        deterministic: act without exploration noise.
        render: render the eval env during evaluation (``evaluate_policy(render=True)``).
        verbose: 1 prints each evaluation's result.
        warn: passed to [`evaluate_policy`][rlkit_td3.evaluation.evaluate_policy]: warn when ``eval_env`` has no
            [`Monitor`][rlkit_td3.monitor.Monitor] wrapper but other wrappers, which may change its returns.
        seed: seed of each evaluation's first reset, so that every evaluation sees the same episodes
            (``None``: the eval env's RNG continues).
    """

    def __init__(
        self,
        eval_env: gym.Env | VectorEnv | str,
        callback_on_new_best: BaseCallback | None = None,
        callback_after_eval: BaseCallback | None = None,
        n_eval_episodes: int = 5,
        eval_freq: int = 10_000,
        log_path: str | os.PathLike[str] | None = None,
        best_model_save_path: str | os.PathLike[str] | None = None,
        deterministic: bool = True,
        render: bool = False,
        verbose: int = 1,
        warn: bool = True,
        seed: int | None = None,
    ) -> None:
        super().__init__(callback_on_new_best, verbose=verbose)
        if callback_after_eval is not None and not isinstance(callback_after_eval, BaseCallback):
            raise TypeError(f"callback_after_eval must be a BaseCallback or None, got {callback_after_eval!r}")
        if (
            not isinstance(n_eval_episodes, (int, np.integer))
            or isinstance(n_eval_episodes, bool)
            or n_eval_episodes < 1
        ):
            raise ValueError(f"n_eval_episodes must be a positive int, got {n_eval_episodes!r}")
        n_eval_episodes = int(n_eval_episodes)
        self.callback_after_eval = callback_after_eval
        if callback_after_eval is not None:
            callback_after_eval.parent = self
        self.eval_env = gym.make(eval_env) if isinstance(eval_env, str) else eval_env
        if not (isinstance(self.eval_env, (gym.Env, VectorEnv)) or is_sb3_vec_env(self.eval_env)):
            raise TypeError(
                f"eval_env must be a gymnasium Env, a VectorEnv, a Stable-Baselines3-style VecEnv or an env id, "
                f"got {eval_env!r}"
            )
        for name, flag in (("render", render), ("warn", warn), ("deterministic", deterministic)):
            check_bool(name, flag)
        self.render = bool(render)
        self.warn = bool(warn)
        self.n_eval_episodes = n_eval_episodes
        self._every = _EveryTimesteps("eval_freq", eval_freq)
        self.eval_freq = self._every.freq
        self.log_path = None if log_path is None else Path(log_path) / "evaluations.npz"
        self.best_model_save_path = None if best_model_save_path is None else Path(best_model_save_path)
        self.deterministic = bool(deterministic)
        self.seed = seed
        self.best_mean_reward = -np.inf
        self.last_mean_reward = -np.inf
        self.evaluations_timesteps: list[int] = []
        self.evaluations_results: list[list[float]] = []
        self.evaluations_length: list[list[int]] = []
        self.evaluations_successes: list[list[bool]] = []
        self._is_success_buffer: list[bool] = []

    def _init_callback(self) -> None:
        for folder in (self.best_model_save_path, None if self.log_path is None else self.log_path.parent):
            if folder is not None:
                folder.mkdir(parents=True, exist_ok=True)
        if self.callback_after_eval is not None:
            self.callback_after_eval.init_callback(self.model)  # type: ignore[arg-type]

    def _on_training_start(self) -> None:
        self._every.start(self.num_timesteps)
        super()._on_training_start()
        if self.callback_after_eval is not None:
            self.callback_after_eval.on_training_start(self.locals, self.globals)

    def _on_step(self) -> bool:
        if not self._every.due(self.num_timesteps):
            return True
        return self.evaluate()

    def _log_success_callback(self, locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
        """``evaluate_policy``'s per-step callback: collect ``info["is_success"]`` at the end of each episode."""
        if locals_["done"]:
            is_success = locals_["info"].get("is_success")
            if is_success is not None:
                self._is_success_buffer.append(bool(is_success))

    def evaluate(self) -> bool:
        """Run one evaluation now; returns False when a child callback asks to stop training."""
        assert self.model is not None, "callback used before init_callback()"
        if getattr(self.model, "get_vec_normalize_env", lambda: None)() is not None:
            from rlkit_td3.vec_env import sync_envs_normalization  # (a module-level import would be circular)

            # evaluate with the training statistics as they stand, as Stable-Baselines3's EvalCallback does
            sync_envs_normalization(self.training_env, self.eval_env)
        self._is_success_buffer = []
        returns, lengths = evaluate_policy(
            self.model,
            self.eval_env,
            n_eval_episodes=self.n_eval_episodes,
            deterministic=self.deterministic,
            render=self.render,
            callback=self._log_success_callback,
            return_episode_rewards=True,
            warn=self.warn,
            seed=self.seed,
        )
        self.evaluations_timesteps.append(self.num_timesteps)
        self.evaluations_results.append(list(returns))
        self.evaluations_length.append(list(lengths))
        if self._is_success_buffer:
            self.evaluations_successes.append(list(self._is_success_buffer))
        if self.log_path is not None:
            successes = {"successes": np.array(self.evaluations_successes)} if self.evaluations_successes else {}
            _save_npz(
                self.log_path,
                timesteps=np.array(self.evaluations_timesteps),
                results=np.array(self.evaluations_results),
                ep_lengths=np.array(self.evaluations_length),
                **successes,
            )
        mean_reward, std_reward = float(np.mean(returns)), float(np.std(returns))
        mean_length = float(np.mean(lengths))
        self.last_mean_reward = mean_reward
        if self.verbose >= 1:
            print(
                f"Eval num_timesteps={self.num_timesteps}, episode_reward={mean_reward:.2f} +/- {std_reward:.2f}, "
                f"episode_length={mean_length:.2f}"
            )
        self.logger.record("eval/mean_reward", mean_reward)
        self.logger.record("eval/mean_ep_length", mean_length)
        if self._is_success_buffer:
            success_rate = float(np.mean(self._is_success_buffer))
            if self.verbose >= 1:
                print(f"Success rate: {100 * success_rate:.2f}%")
            self.logger.record("eval/success_rate", success_rate)
        self.logger.record("time/total_timesteps", self.num_timesteps, exclude="tensorboard")
        self.logger.dump(self.num_timesteps)

        continue_training = True
        if mean_reward > self.best_mean_reward:
            if self.verbose >= 1:
                print("New best mean reward!")
            self.best_mean_reward = mean_reward
            if self.best_model_save_path is not None:
                self.model.save(self.best_model_save_path / "best_model.zip")
            continue_training = self._on_event()
        if self.callback_after_eval is not None:
            continue_training = self.callback_after_eval.on_step() and continue_training
        return continue_training

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        super().update_child_locals(locals_)
        if self.callback_after_eval is not None:
            self.callback_after_eval.update_locals(locals_)


class CheckpointCallback(BaseCallback):
    """Saves the model every ``save_freq`` env timesteps as ``<save_path>/<name_prefix>_<t>_steps.zip``.

    With ``save_replay_buffer=True`` the buffer goes beside it as
    ``<name_prefix>_replay_buffer_<t>_steps.npz`` (reload it with ``model.load_replay_buffer``). With
    ``save_vecnormalize=True``, when the model trains on a ``VecNormalize`` env (``model.get_vec_normalize_env()``
    is not ``None``), its running statistics go beside it as ``<name_prefix>_vecnormalize_<t>_steps.pkl``
    (written atomically by the ``VecNormalize``'s own ``save``).
    Unlike Stable-Baselines3, ``save_freq`` counts env timesteps, not calls, whatever the number of envs.

    Args:
        save_freq: the period, in env timesteps.
        save_path: the folder (created if missing).
        name_prefix: the start of the file names.
        save_replay_buffer: also save the replay buffer, which makes each pair of files a checkpoint that
            resumes exactly. Refused (``ValueError`` at the start of ``learn``) where no checkpoint can: on a
            vector env with same-step autoreset, as ``model.save(path, include_buffer=True)`` refuses.
        save_vecnormalize: also save the ``VecNormalize`` statistics, if the model has some.
        verbose: 2 prints each saved path.
    """

    def __init__(
        self,
        save_freq: int,
        save_path: str | os.PathLike[str],
        name_prefix: str = "rl_model",
        save_replay_buffer: bool = False,
        save_vecnormalize: bool = False,
        verbose: int = 0,
    ) -> None:
        super().__init__(verbose)
        for name, flag in (("save_replay_buffer", save_replay_buffer), ("save_vecnormalize", save_vecnormalize)):
            check_bool(name, flag)
        self._every = _EveryTimesteps("save_freq", save_freq)
        self.save_freq = self._every.freq
        self.save_path = Path(save_path)
        self.name_prefix = name_prefix
        self.save_replay_buffer = bool(save_replay_buffer)
        self.save_vecnormalize = bool(save_vecnormalize)

    def _init_callback(self) -> None:
        assert self.model is not None
        problem = self.model._exact_resume_problem() if self.save_replay_buffer else None
        if problem is not None:
            raise ValueError(f"CheckpointCallback(save_replay_buffer=True) refused: {problem}")
        self.save_path.mkdir(parents=True, exist_ok=True)

    def _on_training_start(self) -> None:
        self._every.start(self.num_timesteps)

    def _checkpoint_path(self, checkpoint_type: str = "", extension: str = "zip") -> Path:
        return self.save_path / f"{self.name_prefix}_{checkpoint_type}{self.num_timesteps}_steps.{extension}"

    def _on_step(self) -> bool:
        if self._every.due(self.num_timesteps):
            assert self.model is not None
            path = self._checkpoint_path()
            self.model.save(path)
            if self.verbose >= 2:
                print(f"Saving model checkpoint to {path}")
            if self.save_replay_buffer:
                buffer_path = self._checkpoint_path("replay_buffer_", extension="npz")
                self.model.save_replay_buffer(buffer_path)
                if self.verbose >= 2:
                    print(f"Saving model replay buffer checkpoint to {buffer_path}")
            vec_normalize = (
                getattr(self.model, "get_vec_normalize_env", lambda: None)() if self.save_vecnormalize else None
            )
            if vec_normalize is not None:
                vec_normalize_path = self._checkpoint_path("vecnormalize_", extension="pkl")
                with atomic_path(vec_normalize_path, suffix=".pkl") as tmp:
                    vec_normalize.save(tmp)
                if self.verbose >= 2:
                    print(f"Saving model VecNormalize to {vec_normalize_path}")
        return True


class StopTrainingOnRewardThreshold(BaseCallback):
    """Stops training once the best mean evaluation return reaches ``reward_threshold``.

    Use it as ``EvalCallback(..., callback_on_new_best=StopTrainingOnRewardThreshold(-200))``.

    Args:
        reward_threshold: the return to reach.
        verbose: 1 prints a message when training stops.
    """

    def __init__(self, reward_threshold: float, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.reward_threshold = float(reward_threshold)

    def _on_step(self) -> bool:
        if not isinstance(self.parent, EvalCallback):
            raise TypeError("StopTrainingOnRewardThreshold must be a child of an EvalCallback (callback_on_new_best)")
        keep_going = bool(self.parent.best_mean_reward < self.reward_threshold)
        if not keep_going and self.verbose >= 1:
            print(
                f"Stopping training: the best mean reward {self.parent.best_mean_reward:.2f} "
                f"reached the threshold {self.reward_threshold:.2f}"
            )
        return keep_going


class StopTrainingOnNoModelImprovement(BaseCallback):
    """Stops training when ``max_no_improvement_evals`` evaluations in a row bring no new best mean return.

    Use it as ``EvalCallback(..., callback_after_eval=StopTrainingOnNoModelImprovement(3))``.

    Args:
        max_no_improvement_evals: evaluations without improvement tolerated.
        min_evals: evaluations before the count starts.
        verbose: 1 prints a message when training stops.
    """

    def __init__(self, max_no_improvement_evals: int, min_evals: int = 0, verbose: int = 0) -> None:
        super().__init__(verbose)
        if isinstance(max_no_improvement_evals, bool) or not isinstance(max_no_improvement_evals, (int, np.integer)):
            raise TypeError(f"max_no_improvement_evals must be an int, got {max_no_improvement_evals!r}")
        if max_no_improvement_evals < 0 or min_evals < 0:
            raise ValueError(
                f"max_no_improvement_evals and min_evals must be >= 0, got {max_no_improvement_evals}, {min_evals}"
            )
        self.max_no_improvement_evals = max_no_improvement_evals
        self.min_evals = min_evals
        self.last_best_mean_reward = -np.inf
        self.no_improvement_evals = 0

    def _on_step(self) -> bool:
        if not isinstance(self.parent, EvalCallback):
            raise TypeError("StopTrainingOnNoModelImprovement must be a child of an EvalCallback (callback_after_eval)")
        keep_going = True
        best = self.parent.best_mean_reward
        if self.n_calls > self.min_evals:
            if best > self.last_best_mean_reward:
                self.no_improvement_evals = 0
            else:
                self.no_improvement_evals += 1
                keep_going = self.no_improvement_evals <= self.max_no_improvement_evals
        self.last_best_mean_reward = best
        if not keep_going and self.verbose >= 1:
            print(f"Stopping training: no new best model in the last {self.no_improvement_evals} evaluations")
        return keep_going


class StopTrainingOnMaxEpisodes(BaseCallback):
    """Stops training after ``max_episodes`` episodes per env (``max_episodes × n_envs`` in all, as in SB3).

    Args:
        max_episodes: episodes per env.
        verbose: 1 prints a message when training stops.
    """

    def __init__(self, max_episodes: int, verbose: int = 0) -> None:
        super().__init__(verbose)
        if isinstance(max_episodes, bool) or not isinstance(max_episodes, (int, np.integer)) or max_episodes < 1:
            raise ValueError(f"max_episodes must be a positive int, got {max_episodes!r}")
        max_episodes = int(max_episodes)
        self.max_episodes = max_episodes
        self._total_max_episodes = max_episodes
        self.n_episodes = 0

    def _init_callback(self) -> None:
        self._total_max_episodes = self.max_episodes * self.training_env.num_envs

    def _on_step(self) -> bool:
        self.n_episodes += int(np.sum(self.locals["dones"]))
        keep_going = self.n_episodes < self._total_max_episodes
        if not keep_going and self.verbose >= 1:
            print(f"Stopping training: {self.n_episodes} episodes reached max_episodes={self.max_episodes}")
        return keep_going


class ProgressBarCallback(BaseCallback):
    """A tqdm progress bar drawn with rich: timesteps done, speed and time left.

    ``learn(..., progress_bar=True)`` adds one. Without a terminal (CI, a captured run) the bar is
    printed once when training ends.

    Raises:
        ImportError: tqdm or rich is missing (the ``progress`` extra: ``pip install -e '.[progress]'`` in the clone).
    """

    def __init__(self) -> None:
        super().__init__()
        try:
            import rich  # noqa: F401
            from tqdm.rich import tqdm
        except ImportError as exc:
            raise ImportError(
                "the progress bar needs tqdm and rich: install the 'progress' extra "
                "(pip install -e '.[progress]' in the rlkit_td3 clone)"
            ) from exc
        self._tqdm = tqdm
        self.pbar: Any = None
        self._start = 0

    def _on_training_start(self) -> None:
        with warnings.catch_warnings():  # tqdm.rich is marked experimental
            warnings.simplefilter("ignore")
            self.pbar = self._tqdm(total=int(self.locals["total_timesteps"]), unit="steps")
        self._start = self.num_timesteps

    def _on_step(self) -> bool:
        self.pbar.update(self.num_timesteps - self._start - self.pbar.n)
        return True

    def _on_training_end(self) -> None:
        self.pbar.refresh()
        self.pbar.close()


MaybeCallback = BaseCallback | Callable[[dict[str, Any], dict[str, Any]], bool] | Sequence[Any] | None


def convert_callback(callback: MaybeCallback, progress_bar: bool = False) -> BaseCallback:
    """Turn ``None``, a list, a function or a callback into one `BaseCallback`.

    Args:
        callback: what the user passed to ``learn``.
        progress_bar: add a `ProgressBarCallback`.

    Raises:
        TypeError: anything else.
    """
    progress_bar = check_bool("progress_bar", progress_bar)
    if callback is None:
        converted: BaseCallback = BaseCallback()
    elif isinstance(callback, BaseCallback):
        converted = callback
    elif isinstance(callback, (list, tuple)):
        converted = CallbackList([convert_callback(cb) for cb in callback])
    elif callable(callback):
        converted = ConvertCallback(callback)
    else:
        raise TypeError(f"callback must be a BaseCallback, a list of them, or a function, got {callback!r}")
    if progress_bar:
        converted = CallbackList([converted, ProgressBarCallback()])
    return converted


__all__ = [
    "BaseCallback",
    "CallbackList",
    "CheckpointCallback",
    "ConvertCallback",
    "EvalCallback",
    "EventCallback",
    "EveryNTimesteps",
    "LogEveryNTimesteps",
    "MaybeCallback",
    "ProgressBarCallback",
    "StopTrainingOnMaxEpisodes",
    "StopTrainingOnNoModelImprovement",
    "StopTrainingOnRewardThreshold",
    "convert_callback",
]
