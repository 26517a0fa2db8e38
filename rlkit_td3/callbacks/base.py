"""The callback protocol, with Stable-Baselines3's names and hook order: `BaseCallback` and what composes callbacks
(`CallbackList`, `ConvertCallback`, `EventCallback`, `EveryNTimesteps`, `LogEveryNTimesteps`).

During ``learn()`` the algorithm calls, in this order:

1. ``init_callback(model)`` → ``_init_callback()``
2. ``on_training_start(locals, globals)`` → ``_on_training_start()``
3. per rollout: ``on_rollout_start()``, then ``on_step()`` after every env step (return False to stop
   training), then ``on_rollout_end()``
4. ``on_training_end()``

Subclasses override the underscored hooks. Inside them ``self.model``, ``self.num_timesteps``,
``self.n_calls``, ``self.locals`` (the loop's variables: ``actions``, ``new_obs``, ``rewards``,
``dones``, ``infos``, ...), ``self.logger`` and ``self.training_env`` are available. Import these names from
`rlkit_td3.callbacks` (SB3's module), which also holds the built-in callbacks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from rlkit_td3.logger import Logger


class CallbackModel(Protocol):
    """What the callbacks use of the model they are attached to (an ``OffPolicyAlgorithm`` is one).

    Callbacks see the model through this protocol rather than through the algorithm class, so that this module
    sits below the training loop: any object with these members can drive them (a test double included).
    """

    num_timesteps: int
    logger: Logger

    def get_env(self) -> Any:
        """The vector env the model trains on (``None`` when it has none)."""

    def get_vec_normalize_env(self) -> Any:
        """The ``VecNormalize`` wrapper of the training env, or ``None``."""

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, Any]:
        """The model's action for ``observation`` (what `evaluate_policy` calls)."""

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model to ``path``."""

    def save_replay_buffer(self, path: str | os.PathLike[str]) -> None:
        """Write the replay buffer to ``path``."""

    def _dump_logs(self) -> None:
        """Write the model's log row now."""

    def _exact_resume_problem(self) -> str | None:
        """Why no checkpoint of this run could resume exactly, or ``None`` when one can."""


class BaseCallback:
    """Base class of callbacks: override ``_on_step`` (and any other ``_on_*`` hook) in a subclass.

    Args:
        verbose: 0 for no output, 1 for info messages.
    """

    def __init__(self, verbose: int = 0) -> None:
        self.verbose = verbose
        self.model: CallbackModel | None = None
        self.n_calls = 0
        self.num_timesteps = 0
        self.locals: dict[str, Any] = {}
        self.globals: dict[str, Any] = {}
        self.parent: BaseCallback | None = None

    @property
    def training_env(self) -> Any:
        """The vector env the model trains on."""
        assert self.model is not None, "callback used before init_callback()"
        return self.model.get_env()

    @property
    def logger(self) -> Any:
        """The model's logger."""
        assert self.model is not None, "callback used before init_callback()"
        return self.model.logger

    # -------------------------------------------------------------- called by the algorithm
    def init_callback(self, model: CallbackModel) -> None:
        """Attach the model; called once at the start of ``learn()``."""
        self.model = model
        self._init_callback()

    def on_training_start(self, locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
        self.locals = locals_
        self.globals = globals_
        self.num_timesteps = self.model.num_timesteps if self.model is not None else 0
        self._on_training_start()

    def on_rollout_start(self) -> None:
        self._on_rollout_start()

    def on_step(self) -> bool:
        """Called after every env step; returning False stops training."""
        self.n_calls += 1
        self.num_timesteps = self.model.num_timesteps if self.model is not None else 0
        return bool(self._on_step())

    def on_rollout_end(self) -> None:
        self._on_rollout_end()

    def on_training_end(self) -> None:
        self._on_training_end()

    def update_locals(self, locals_: dict[str, Any]) -> None:
        """Refresh ``self.locals`` with the loop's variables (and those of child callbacks)."""
        self.locals.update(locals_)
        self.update_child_locals(locals_)

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        """Propagate ``locals`` to child callbacks; containers override this."""

    # -------------------------------------------------------------- hooks for subclasses
    def _init_callback(self) -> None:
        pass

    def _on_training_start(self) -> None:
        pass

    def _on_rollout_start(self) -> None:
        pass

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        pass

    def _on_training_end(self) -> None:
        pass


class CallbackList(BaseCallback):
    """Runs several callbacks in order; training stops as soon as one of them returns False."""

    def __init__(self, callbacks: Sequence[BaseCallback]) -> None:
        super().__init__()
        for cb in callbacks:
            if not isinstance(cb, BaseCallback):
                raise TypeError(f"callbacks must be BaseCallback instances, got {cb!r}")
        self.callbacks = list(callbacks)

    def _init_callback(self) -> None:
        for cb in self.callbacks:
            cb.parent = self
            cb.init_callback(self.model)  # type: ignore[arg-type]

    def _on_training_start(self) -> None:
        for cb in self.callbacks:
            cb.on_training_start(self.locals, self.globals)

    def _on_rollout_start(self) -> None:
        for cb in self.callbacks:
            cb.on_rollout_start()

    def _on_step(self) -> bool:
        keep_going = True
        for cb in self.callbacks:
            keep_going = cb.on_step() and keep_going
        return keep_going

    def _on_rollout_end(self) -> None:
        for cb in self.callbacks:
            cb.on_rollout_end()

    def _on_training_end(self) -> None:
        for cb in self.callbacks:
            cb.on_training_end()

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        for cb in self.callbacks:
            cb.update_locals(locals_)


class ConvertCallback(BaseCallback):
    """Wraps a function ``f(locals, globals) -> bool`` called at every step."""

    def __init__(self, callback: Callable[[dict[str, Any], dict[str, Any]], bool], verbose: int = 0) -> None:
        super().__init__(verbose)
        self.callback = callback

    def _on_step(self) -> bool:
        result = self.callback(self.locals, self.globals)
        return True if result is None else bool(result)


class _EveryTimesteps:
    """Fires each time ``num_timesteps`` crosses a multiple of ``freq``, whatever the number of envs."""

    def __init__(self, name: str, freq: int) -> None:
        if isinstance(freq, bool) or not isinstance(freq, (int, np.integer)) or freq < 1:
            raise ValueError(f"{name} must be a positive int (env timesteps), got {freq!r}")
        self.freq = int(freq)
        self._last = 0

    def start(self, num_timesteps: int) -> None:
        self._last = num_timesteps // self.freq

    def due(self, num_timesteps: int) -> bool:
        k = num_timesteps // self.freq
        if k > self._last:
            self._last = k
            return True
        return False


class EventCallback(BaseCallback):
    """A callback that runs a child callback when an event happens (see `_on_event()`).

    Args:
        callback: the child, run on each event; ``None`` for none.
        verbose: 0 for no output, 1 for info messages.
    """

    def __init__(self, callback: BaseCallback | None = None, verbose: int = 0) -> None:
        super().__init__(verbose)
        if callback is not None and not isinstance(callback, BaseCallback):
            raise TypeError(f"callback must be a BaseCallback or None, got {callback!r}")
        self.callback = callback
        if callback is not None:
            callback.parent = self

    def init_callback(self, model: CallbackModel) -> None:
        super().init_callback(model)
        if self.callback is not None:
            self.callback.init_callback(model)

    def _on_training_start(self) -> None:
        if self.callback is not None:
            self.callback.on_training_start(self.locals, self.globals)

    def _on_event(self) -> bool:
        """Run the child's ``on_step``; returns its answer (True without child)."""
        return self.callback.on_step() if self.callback is not None else True

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        if self.callback is not None:
            self.callback.update_locals(locals_)


class EveryNTimesteps(EventCallback):
    """Runs ``callback`` each time the model's timestep count crosses a multiple of ``n_steps``.

    Args:
        n_steps: the period, in env timesteps (summed over envs).
        callback: the callback to run.
    """

    def __init__(self, n_steps: int, callback: BaseCallback) -> None:
        super().__init__(callback)
        self._every = _EveryTimesteps("n_steps", n_steps)
        self.n_steps = self._every.freq

    def _on_training_start(self) -> None:
        self._every.start(self.num_timesteps)
        super()._on_training_start()

    def _on_step(self) -> bool:
        if self._every.due(self.num_timesteps):
            return self._on_event()
        return True


class LogEveryNTimesteps(EveryNTimesteps):
    """Writes the model's log row (the ``rollout/``, ``time/``, ``train/`` keys) every ``n_steps`` env timesteps.

    Use it with ``learn(..., log_interval=None)`` to log by timesteps instead of by episodes, as in
    Stable-Baselines3. Like `EveryNTimesteps`, it fires each time the model's timestep count crosses a
    multiple of ``n_steps``.

    Args:
        n_steps: the period, in env timesteps (summed over envs).
    """

    def __init__(self, n_steps: int) -> None:
        super().__init__(n_steps, ConvertCallback(self._log_data))

    def _log_data(self, _locals: dict[str, Any], _globals: dict[str, Any]) -> bool:
        assert self.model is not None, "callback used before init_callback()"
        self.model._dump_logs()
        return True
