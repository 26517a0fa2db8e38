"""The callback protocol, with Stable-Baselines3's names and hook order.

During ``learn()`` the algorithm calls, in this order:

1. ``init_callback(model)`` → ``_init_callback()``
2. ``on_training_start(locals, globals)`` → ``_on_training_start()``
3. per rollout: ``on_rollout_start()``, then ``on_step()`` after every env step (return False to stop
   training), then ``on_rollout_end()``
4. ``on_training_end()``

Subclasses override the underscored hooks. Inside them ``self.model``, ``self.num_timesteps``,
``self.n_calls``, ``self.locals`` (the loop's variables: ``actions``, ``new_obs``, ``rewards``,
``dones``, ``infos``, ...), ``self.logger`` and ``self.training_env`` are available.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlkit_td3.off_policy import OffPolicyAlgorithm


class BaseCallback:
    """Base class of callbacks: override ``_on_step`` (and any other ``_on_*`` hook) in a subclass.

    Args:
        verbose: 0 for no output, 1 for info messages.
    """

    def __init__(self, verbose: int = 0) -> None:
        self.verbose = verbose
        self.model: OffPolicyAlgorithm | None = None
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
    def init_callback(self, model: OffPolicyAlgorithm) -> None:
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


MaybeCallback = BaseCallback | Callable[[dict[str, Any], dict[str, Any]], bool] | Sequence[Any] | None


def convert_callback(callback: MaybeCallback) -> BaseCallback:
    """Turn ``None``, a list, a function or a callback into one :class:`BaseCallback`.

    Raises:
        TypeError: anything else.
    """
    if callback is None:
        return BaseCallback()
    if isinstance(callback, BaseCallback):
        return callback
    if isinstance(callback, (list, tuple)):
        return CallbackList([convert_callback(cb) for cb in callback])
    if callable(callback):
        return ConvertCallback(callback)
    raise TypeError(f"callback must be a BaseCallback, a list of them, or a function, got {callback!r}")


__all__ = ["BaseCallback", "CallbackList", "ConvertCallback", "MaybeCallback", "convert_callback"]
