"""Learning-rate schedules.

A schedule maps the *remaining progress* of a ``learn()`` call (1 at the start, 0 at the end,
as in Stable-Baselines3) to a value; a call that finishes an unfinished one, such as a run resumed from a
checkpoint, continues its progress (see ``OffPolicyAlgorithm.learn``). A plain float is a constant schedule.
The two classes here can be described in JSON, so a saved model stores them declaratively; any other callable
works while training but is only saved through the pickle fallback (see `rlkit_td3.fileio.serialization`).

A schedule may keep state of its own (a count of calls, a plateau detector): give it the component state
protocol, ``state_dict()`` returning JSON-serialisable data and ``load_state_dict(state)`` checking and
restoring it (or the older names ``get_state()`` / ``set_state(state)``, see `StatefulSchedule`). Every model
file then stores that state, and ``load`` gives it back to the schedule, also to one passed through
``custom_objects``, so that a resumed run continues it exactly. `ScheduleStates` is the model's schedules as
one component.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rlkit_td3.checks.state import _number
from rlkit_td3.fileio.serialization import ModelFileError

_FLOAT32_MAX = float(np.finfo(np.float32).max)  # a value the float32 optimizers can hold

Schedule = Callable[[float], float]
"""A function of the remaining progress (1 → 0) returning a value."""

ScheduleLike = float | Schedule


@runtime_checkable
class StatefulSchedule(Protocol):
    """A schedule with state of its own, which model files save and ``load`` restores.

    ``get_state`` must return JSON-serialisable data (dicts, lists, numbers, strings); ``set_state`` receives
    it back. The built-in schedules are stateless and need neither.
    """

    def __call__(self, progress_remaining: float) -> float:
        """The value at this remaining progress."""

    def get_state(self) -> Any:
        """The schedule's changing state, as JSON-serialisable data."""

    def set_state(self, state: Any) -> None:
        """Restore what `get_state()` returned."""


def _real(name: str, value: Any) -> float:
    """``value`` as a finite Python float; NumPy scalars are accepted like Python numbers."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


@dataclass(frozen=True, eq=False)
class ConstantSchedule:
    """Always returns ``value``. It compares equal to ``value`` itself, so that SB3 code checking
    ``model.learning_rate == 3e-4`` holds for the constant schedule a number becomes."""

    value: float

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ConstantSchedule):
            return self.value == other.value
        if isinstance(other, (int, float, np.integer, np.floating)) and not isinstance(other, (bool, np.bool_)):
            return self.value == float(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)  # equal to the number's hash, as equality requires

    def __post_init__(self) -> None:
        # a plain float, so that ``to_dict`` is JSON whatever number type was passed (np.float32 included)
        object.__setattr__(self, "value", _real("value", self.value))

    def __call__(self, progress_remaining: float) -> float:
        return self.value

    def to_dict(self) -> dict[str, Any]:
        """JSON description of the schedule."""
        return {"type": "constant", "value": self.value}

    def state_dict(self) -> dict[str, Any]:
        """The state protocol: a built-in schedule has no changing state (``{}``)."""
        return {}

    def load_state_dict(self, state: Any) -> None:
        """Accept only ``{}`` (`_stateless`)."""
        _stateless(type(self).__name__, state)


@dataclass(frozen=True)
class LinearSchedule:
    """Linear interpolation from ``start`` to ``end`` over the first ``end_fraction`` of training.

    After that fraction the value stays at ``end`` (the RL Zoo's ``lin_7e-4`` is
    ``LinearSchedule(7e-4, 0.0)``).
    """

    start: float
    end: float = 0.0
    end_fraction: float = 1.0

    def __post_init__(self) -> None:
        for name in ("start", "end", "end_fraction"):
            object.__setattr__(self, name, _real(name, getattr(self, name)))
        if not 0.0 < self.end_fraction <= 1.0:
            raise ValueError(f"end_fraction must be in (0, 1], got {self.end_fraction!r}")

    def __call__(self, progress_remaining: float) -> float:
        elapsed = 1.0 - progress_remaining
        if elapsed >= self.end_fraction:
            return self.end
        return self.start + (self.end - self.start) * elapsed / self.end_fraction

    def to_dict(self) -> dict[str, Any]:
        """JSON description of the schedule."""
        return {"type": "linear", "start": self.start, "end": self.end, "end_fraction": self.end_fraction}

    def state_dict(self) -> dict[str, Any]:
        """The state protocol: a built-in schedule has no changing state (``{}``)."""
        return {}

    def load_state_dict(self, state: Any) -> None:
        """Accept only ``{}`` (`_stateless`)."""
        _stateless(type(self).__name__, state)


def _stateless(name: str, state: Any) -> None:
    if state != {}:
        raise ModelFileError(f"{name} has no state: its state must be {{}}, got {str(state)[:200]}")


def as_schedule(value: ScheduleLike, name: str = "learning_rate") -> Schedule:
    """Turn a float into a `ConstantSchedule`; return callables unchanged.

    Raises:
        TypeError: ``value`` is neither a number (Python or NumPy) nor callable.
        ValueError: ``value`` is a number that is not positive and finite, or beyond what a float32 holds (the
            same bound a model file's schedule must keep), or a `LinearSchedule` whose ends are.
    """
    if isinstance(value, LinearSchedule):
        for part in ("start", "end"):
            if abs(getattr(value, part)) > _FLOAT32_MAX:
                raise ValueError(
                    f"{name}.{part} must fit a float32 (|value| <= {_FLOAT32_MAX:.6g}), got {getattr(value, part)!r}"
                )
    if callable(value):
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a float or a schedule callable, got {value!r}")
    if not (value > 0.0 and value <= _FLOAT32_MAX):
        raise ValueError(
            f"{name} must be a positive finite number a float32 can hold (0 < value <= {_FLOAT32_MAX:.6g}), "
            f"got {value!r}"
        )
    return ConstantSchedule(float(value))


def schedule_to_dict(schedule: Schedule) -> dict[str, Any] | None:
    """JSON description of a built-in schedule, or ``None`` for an arbitrary callable."""
    if isinstance(schedule, (ConstantSchedule, LinearSchedule)):
        return schedule.to_dict()
    return None


def schedule_from_dict(spec: dict[str, Any]) -> Schedule:
    """Rebuild a schedule from `schedule_to_dict()` output.

    Raises:
        ValueError: the description names an unknown schedule type or lacks fields.
    """
    kind = spec.get("type") if isinstance(spec, dict) else None
    try:
        if kind == "constant":
            return ConstantSchedule(float(spec["value"]))
        if kind == "linear":
            return LinearSchedule(float(spec["start"]), float(spec["end"]), float(spec["end_fraction"]))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed schedule description {spec!r}") from exc
    raise ValueError(f"unknown schedule description {spec!r}; allowed types: 'constant', 'linear'")


def check_schedule_spec(entry: str, spec: Any) -> None:
    """A built-in schedule's JSON: numbers, not strings or booleans; positive finite values a float32 can hold."""
    if spec is None or (isinstance(spec, dict) and spec.get("pickled") is True and len(spec) == 1):
        return
    if not isinstance(spec, dict):
        raise ModelFileError(f"{entry} must be a schedule description, got {spec!r}")
    kind = spec.get("type")
    if kind == "constant" and set(spec) == {"type", "value"}:
        _number(f"{entry}.value", spec["value"], 0.0, _FLOAT32_MAX)
        if spec["value"] <= 0:
            raise ModelFileError(f"{entry}.value must be > 0, got {spec['value']!r}")
        return
    if kind == "linear" and set(spec) == {"type", "start", "end", "end_fraction"}:
        _number(f"{entry}.start", spec["start"], 0.0, _FLOAT32_MAX)
        _number(f"{entry}.end", spec["end"], 0.0, _FLOAT32_MAX)
        _number(f"{entry}.end_fraction", spec["end_fraction"], 0.0, 1.0)
        if spec["end_fraction"] <= 0:
            raise ModelFileError(f"{entry}.end_fraction must be > 0")
        return
    raise ModelFileError(f"{entry} is not a constant or linear schedule: {str(spec)[:200]}")


def _has_state(schedule: Any) -> bool:
    """Whether a schedule keeps state of its own: the state protocol or `StatefulSchedule`, not a built-in."""
    if isinstance(schedule, (ConstantSchedule, LinearSchedule)):
        return False
    return callable(getattr(schedule, "state_dict", None)) or isinstance(schedule, StatefulSchedule)


def _state_of(schedule: Any) -> Any:
    return schedule.state_dict() if callable(getattr(schedule, "state_dict", None)) else schedule.get_state()


def schedule_states(schedules: dict[str, Schedule]) -> dict[str, Any]:
    """The state of each schedule that has one (``state_dict()``, or `StatefulSchedule.get_state`), by name:
    what a checkpoint stores."""
    return {name: _state_of(schedule) for name, schedule in schedules.items() if _has_state(schedule)}


def load_schedule_states(schedules: dict[str, Schedule], states: Any, names: tuple[str, ...], entry: str) -> None:
    """Give each schedule with state the state stored with it (``load_state_dict``, else ``set_state``; schedules
    without state keep none).

    Raises:
        ModelFileError: ``states`` is not a dict whose keys are among ``names`` (named ``entry``).
    """
    if states is None:
        return
    if not isinstance(states, dict) or not set(states) <= set(names):
        raise ModelFileError(f"{entry} must be a dict whose keys are among {', '.join(names)}, got {states!r}")
    for name, spec in states.items():
        schedule = schedules.get(name)
        if not _has_state(schedule):  # a replacement given through custom_objects may be stateless
            continue
        if callable(getattr(schedule, "load_state_dict", None)):
            schedule.load_state_dict(spec)
        else:
            schedule.set_state(spec)


SCHEDULE_NAMES = ("learning_rate", "actor_learning_rate", "critic_learning_rate")
"""A model's schedules, by constructor argument name."""


class ScheduleStates:
    """A model's learning-rate schedules as one component of the state protocol (``schedules`` in a model
    file's training state): ``{name: state}`` of each schedule that keeps state."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def _schedules(self) -> dict[str, Schedule]:
        model = self.model
        return {name: getattr(model, name) for name in SCHEDULE_NAMES if getattr(model, name, None) is not None}

    def state_dict(self) -> dict[str, Any]:
        """Each stateful schedule's state, by constructor argument name."""
        return schedule_states(self._schedules())

    def load_state_dict(self, state: Any) -> None:
        """Give each schedule its state (``None``: files written before schedules kept state).

        Raises:
            ModelFileError: a name that is not one of the model's schedules, or what the schedule refuses.
        """
        load_schedule_states(self._schedules(), state, SCHEDULE_NAMES, "training_state: schedules")
