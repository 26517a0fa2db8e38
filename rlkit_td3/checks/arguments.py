"""The argument checks every public call shares: one rule for switches, one for seeds.

A switch (a ``bool`` parameter or settable attribute) takes ``True`` or ``False`` only, NumPy's ``np.True_`` and
``np.False_`` included: a string such as ``"False"`` is truthy and an int ``0``/``1`` hides a mistake, so both are
a ``TypeError`` naming the parameter. A number takes a Python ``int``/``float`` or a NumPy scalar, never a bool.
This module imports no component of the library, so every floor can use it.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def check_bool(name: str, value: Any) -> bool:
    """``value`` as a Python ``bool`` if it is ``True``/``False`` (or a NumPy bool); anything else is a ``TypeError``.

    Args:
        name: the parameter's name, for the message.
        value: what the caller passed.

    Raises:
        TypeError: ``value`` is not a bool (``"False"``, ``0``, ``1``, ``None``, ...).
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {value!r} of type {type(value).__name__} (True or False only)")
    return bool(value)


MAX_SEED = 2**64 - 1
"""Largest seed: torch's generators take 64 bits."""


def check_seed(name: str, value: Any) -> int:
    """``value`` as a Python ``int`` if it is an int (Python or NumPy, not a bool) in ``[0, MAX_SEED]``.

    Raises:
        TypeError: ``value`` is not an int.
        ValueError: ``value`` is negative or above `MAX_SEED` (2**64 - 1, what torch's generators take).
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r} of type {type(value).__name__}")
    if not 0 <= value <= MAX_SEED:
        raise ValueError(f"{name} must be an int in [0, 2**64 - 1] (torch's generators take 64 bits), got {value!r}")
    return int(value)


class ValueAssertionError(ValueError, AssertionError):
    """A bad argument: a ``ValueError``, and also an ``AssertionError`` because Stable-Baselines3 refuses the same
    argument with an ``assert`` (code written for it may catch that). Importable from `rlkit_td3.utils` too."""


class StateDictMismatchError(ValueError, RuntimeError):
    """A ``ValueError`` that is also a ``RuntimeError``: a state dict whose keys do not match a module's, raised
    where SB3 lets ``torch.nn.Module.load_state_dict`` raise its ``RuntimeError`` (``set_parameters``)."""
