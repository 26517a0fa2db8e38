"""A model's training state: what a run's future depends on besides the networks, optimizers and buffer, as
components of the state protocol (``state_dict()`` / ``load_state_dict(state)``, see the Architecture page).

- `RunState`: the training loop's own state (the rollout in flight, the progress of the ``learn`` call, the
  warm-up and target-smoothing generators, the recent episodes, the thread count);
- `TrainingState`: the model's training state as one component, composed of `RunState`, the envs' records
  (`rlkit_td3.persistence.env_state.EnvRecords`), the fused update's choice
  (`rlkit_td3.update.fused_update.FusedUpdateState`), the
  exploration noise (its own ``state_dict``, under ``action_noise``) and the schedules
  (`rlkit_td3.schedules.ScheduleStates`, under ``schedules``).

A state is a flat dict of JSON values and tensors; the checkpoint stores the JSON part in the model file's metadata
and the tensors in ``training_state.pth`` (`split_tensors`), and hands both back merged.
"""

from __future__ import annotations

import hashlib
import warnings
from typing import Any

import torch

from rlkit_td3.checks.state import _int, _number, check_rng_json, check_torch_generator_state
from rlkit_td3.fileio.serialization import ModelFileError, rng_state_to_json, set_rng_state
from rlkit_td3.noise import VectorizedActionNoise, check_noise_state
from rlkit_td3.persistence.env_state import EnvRecords
from rlkit_td3.schedules import ScheduleStates
from rlkit_td3.update.fused_update import FusedUpdateState

MAX_EPISODE_INFOS = 100
"""Most recent-episode records a training state may hold (the statistics window)."""

MAX_TORCH_THREADS = 4096
"""Largest torch intra-op thread count a training state may record."""


def _optional_int(state: dict[str, Any], key: str, minimum: int, maximum: int | None) -> int | None:
    """An optional int field of a training state: ``None`` when absent, else checked."""
    value = state.get(key)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        allowed = f"an int >= {minimum}" + ("" if maximum is None else f" and <= {maximum}")
        raise ModelFileError(f"training_state: {key} must be {allowed}, got {value!r}")
    return value


def restore_smoothing_rng(generator: torch.Generator, state: torch.Tensor) -> None:
    """Restore the target policy smoothing generator from a checked saved state (`check_torch_generator_state`).

    A state saved on another kind of device (CUDA's Philox seed and offset for a CPU generator, or the CPU's MT19937
    state for a CUDA one: a model trained on a GPU and loaded on a laptop) cannot be set on this generator. It is
    then seeded from a hash of the saved state, with a warning: the run goes on with other smoothing noise than on
    the saved device (its updates would differ anyway, as another device's kernels round differently), and loading
    the same file on the same device gives the same noise again.
    """
    if state.numel() == generator.get_state().numel():
        generator.set_state(state)
        return
    seed = int.from_bytes(hashlib.sha256(state.cpu().numpy().tobytes()).digest()[:8], "little")
    generator.manual_seed(seed)
    warnings.warn(
        f"the target policy smoothing noise generator was saved on another kind of device ({state.numel()}-byte "
        f"state) and cannot be restored on {generator.device}: it continues from a seed derived from the saved "
        "state, so the run does not go on bit for bit as it would on the device it was saved on",
        UserWarning,
        stacklevel=4,
    )


class RunState:
    """The training loop's own state (a component of the state protocol).

    Required entries: ``rollout``, ``progress_remaining``, ``env_seeded``, ``episode_infos``, ``warmup_rng``,
    ``smoothing_rng`` (a tensor); optional (absent from older files): ``start_timesteps``, ``total_timesteps``,
    ``torch_num_threads``. ``start_timesteps`` is checked against the model's ``num_timesteps``, so restore the
    counters first.
    """

    keys = (
        "rollout",
        "progress_remaining",
        "start_timesteps",
        "total_timesteps",
        "env_seeded",
        "episode_infos",
        "warmup_rng",
        "smoothing_rng",
        "torch_num_threads",
    )
    """The entries of the state."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def state_dict(self) -> dict[str, Any]:
        """The loop's state: JSON values and the smoothing generator's state tensor."""
        model = self.model
        threads = model.torch_num_threads if isinstance(model.torch_num_threads, int) else None
        return {
            "rollout": None if model._rollout is None else dict(model._rollout),
            "progress_remaining": model._current_progress_remaining,
            "start_timesteps": model._start_timesteps,
            "total_timesteps": model._total_timesteps,
            "env_seeded": model._env_seeded,
            "episode_infos": [[info["r"], info["l"]] for info in model.ep_info_buffer],
            "warmup_rng": rng_state_to_json(model._warmup_rng),
            "smoothing_rng": model._smoothing_rng.get_state(),
            "torch_num_threads": model._learn_num_threads or threads or torch.get_num_threads(),
        }

    def check_state(self, state: Any) -> None:
        """Refuse a state `load_state_dict` cannot restore.

        Raises:
            ModelFileError: naming the entry (``training_state.<key>``) that is missing or wrong.
        """
        if not isinstance(state, dict):
            raise ModelFileError("training_state must be a dict")
        try:
            rollout = state["rollout"]
            progress = state["progress_remaining"]
            env_seeded = state["env_seeded"]
            episode_infos = state["episode_infos"]
            warmup_rng = state["warmup_rng"]
            smoothing_rng = state["smoothing_rng"]
        except KeyError as exc:
            raise ModelFileError(f"training_state lacks {exc}") from exc
        if rollout is not None:
            if not isinstance(rollout, dict) or set(rollout) != {"calls", "episodes", "collected"}:
                raise ModelFileError(
                    f"training_state.rollout must be None or hold calls, episodes, collected: {rollout!r}"
                )
            for key, value in rollout.items():
                _int(f"training_state.rollout.{key}", value)
        _number("training_state.progress_remaining", progress, 0.0, 1.0)
        if not isinstance(env_seeded, bool):
            raise ModelFileError(f"training_state.env_seeded must be a bool, got {env_seeded!r}")
        if not isinstance(episode_infos, list) or len(episode_infos) > MAX_EPISODE_INFOS:
            raise ModelFileError(f"training_state.episode_infos must be a list of at most {MAX_EPISODE_INFOS} records")
        for record in episode_infos:
            if not isinstance(record, list) or len(record) != 2:
                raise ModelFileError(f"training_state.episode_infos holds {str(record)[:100]}, not [return, length]")
            _number("training_state.episode_infos return", record[0])
            _int("training_state.episode_infos length", record[1], 1)
        check_rng_json("training_state.warmup_rng", warmup_rng)
        check_torch_generator_state("training_state.smoothing_rng", smoothing_rng, self.model.device)
        start = _optional_int(state, "start_timesteps", 0, self.model.num_timesteps)
        total = _optional_int(state, "total_timesteps", 0, None)
        if start is not None and total is not None and start > total:
            raise ModelFileError(f"training_state: start_timesteps={start} is after total_timesteps={total}")
        _optional_int(state, "torch_num_threads", 1, MAX_TORCH_THREADS)

    def load_state_dict(self, state: Any) -> None:
        """Check the state (`check_state`), then restore it.

        Raises:
            ModelFileError: naming the entry; nothing was changed.
        """
        self.check_state(state)
        model = self.model
        model._rollout = None if state["rollout"] is None else {k: int(v) for k, v in state["rollout"].items()}
        model._current_progress_remaining = float(state["progress_remaining"])
        start, total = state.get("start_timesteps"), state.get("total_timesteps")
        if start is not None and total is not None:
            model._start_timesteps, model._total_timesteps = start, total
        model.torch_num_threads = state.get("torch_num_threads")
        model._env_seeded = bool(state["env_seeded"])
        model._saved_episode_infos = [(float(r), int(n)) for r, n in state["episode_infos"]]
        set_rng_state(model._warmup_rng, state["warmup_rng"])
        restore_smoothing_rng(model._smoothing_rng, state["smoothing_rng"])


class _NoiseState:
    """The model's exploration noise under ``action_noise`` (the noise's own protocol; ``None`` without one).

    A state saved on one env (a single noise) and loaded onto several (``load(env=...)`` with a vector env, whose
    noise is a `VectorizedActionNoise`) continues in env 0; the other envs' copies start fresh, as their episodes
    do. A vectorized state of another number of envs is restored as saved and then resized with the envs (the
    first copies kept).
    """

    def __init__(self, model: Any) -> None:
        self.model = model

    def state_dict(self) -> Any:
        noise = self.model.action_noise
        return None if noise is None else noise.state_dict()

    def _fitted(self, state: Any) -> Any:
        noise = self.model.action_noise
        if isinstance(noise, VectorizedActionNoise) and isinstance(state, dict) and "noises" not in state:
            return {"noises": [state] + [copy.state_dict() for copy in noise.noises[1:]]}
        return state

    def check_state(self, state: Any) -> None:
        check_noise_state("training_state.action_noise", self._fitted(state), self.model.action_noise)

    def load_state_dict(self, state: Any) -> None:
        if self.model.action_noise is not None and state is not None:
            self.model.action_noise.load_state_dict(self._fitted(state))


def _is_tensors(value: Any) -> bool:
    """A tensor, or a non-empty dict of tensors (Dict observations)."""
    if isinstance(value, dict):
        return bool(value) and all(isinstance(v, torch.Tensor) for v in value.values())
    return isinstance(value, torch.Tensor)


def split_tensors(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(JSON entries, tensor entries)`` of a flat state: what a model file keeps in its metadata and in
    ``training_state.pth``."""
    tensors = {key: value for key, value in state.items() if _is_tensors(value)}
    return {key: value for key, value in state.items() if key not in tensors}, tensors


class TrainingState:
    """A model's training state as one component of the state protocol (see the module's docstring).

    Parts whose entries sit at the top of the state (`RunState`, `EnvRecords`, `FusedUpdateState`) and parts
    nested under a name (``action_noise``, ``schedules``). `load_state_dict` checks every part before it restores
    any, in an order that restores the envs last (they use the restored episode records).

    Args:
        model: the model (an ``OffPolicyAlgorithm``).
        saved_n_envs: the number of envs the state was saved with (default: the model's).
        force_reset: ``False`` keeps the envs as they stand (see `rlkit_td3.persistence.env_state.EnvRecords`).
    """

    def __init__(self, model: Any, saved_n_envs: int | None = None, force_reset: bool = True) -> None:
        self.flat: list[Any] = [RunState(model), FusedUpdateState(model), EnvRecords(model, saved_n_envs, force_reset)]
        self.nested: dict[str, Any] = {
            "action_noise": _NoiseState(model),
            "schedules": ScheduleStates(model),
        }
        # an algorithm's own components (TD7's value bounds and policy checkpoints), required in its files
        self.own: dict[str, Any] = model.training_state_parts() if hasattr(model, "training_state_parts") else {}
        self.nested.update(self.own)

    def state_dict(self) -> dict[str, Any]:
        """Every part's state, in one flat dict of JSON values and tensors."""
        state: dict[str, Any] = {}
        for part in self.flat:
            state.update(part.state_dict())
        state.update({name: part.state_dict() for name, part in self.nested.items()})
        return state

    def load_state_dict(self, state: Any) -> None:
        """Check every part's state, then restore them.

        Raises:
            ModelFileError: (a ``ValueError``) naming the entry that is missing or wrong, or a tensor entry that no
                part holds.
        """
        if not isinstance(state, dict):
            raise ModelFileError(f"training_state must be a dict, got {type(state).__name__}")
        known = {key for part in self.flat for key in part.keys} | set(self.nested)
        unknown = sorted(str(key) for key, value in state.items() if key not in known and _is_tensors(value))
        if unknown:
            raise ModelFileError(f"training_state.pth has unknown entries {unknown}")
        if "action_noise" not in state:
            raise ModelFileError("training_state lacks 'action_noise'")
        flat = [(part, {key: state[key] for key in part.keys if key in state}) for part in self.flat]
        for part, sub in flat:
            if hasattr(part, "check_state"):
                part.check_state(sub)
        self.nested["action_noise"].check_state(state["action_noise"])
        for name, part in self.own.items():
            if name not in state:
                raise ModelFileError(f"training_state lacks {name!r}")
            part.check_state(state[name])
        for part, sub in flat[:-1]:  # the envs last
            part.load_state_dict(sub)
        self.nested["action_noise"].load_state_dict(state["action_noise"])
        self.nested["schedules"].load_state_dict(state.get("schedules"))
        for name, part in self.own.items():
            part.load_state_dict(state[name])
        flat[-1][0].load_state_dict(flat[-1][1])
