"""The warm-up is described in one set of words (``WARMUP_ACTIONS``), and those words say what the code does.

The ``learning_starts`` docstring (the API reference and the parameter tables of the TD3 and DDPG pages) and the
Tips page name the default warm-up with ``WARMUP_ACTIONS[default of warmup_action_noise]``; the actions a model
draws during warm-up are uniform plus noise exactly when the flag is on.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

from docs_hooks.parameters import docstring_args
from rlkit_td3 import DDPG, TD3
from rlkit_td3.off_policy import WARMUP_ACTIONS, OffPolicyAlgorithm

ROOT = Path(__file__).resolve().parents[1]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _default_flag() -> bool:
    return inspect.signature(OffPolicyAlgorithm.__init__).parameters["warmup_action_noise"].default


@pytest.mark.parametrize("cls", [TD3, DDPG])
def test_every_algorithm_defaults_to_the_same_warm_up(cls):
    assert inspect.signature(cls.__init__).parameters["warmup_action_noise"].default is _default_flag()


def test_the_learning_starts_docstring_names_the_default_warm_up():
    text = _one_line(docstring_args(OffPolicyAlgorithm.__doc__)["learning_starts"])
    assert WARMUP_ACTIONS[_default_flag()] in text
    assert WARMUP_ACTIONS[not _default_flag()] not in text


def test_the_tips_page_names_the_default_warm_up():
    tips = _one_line((ROOT / "docs" / "tips.md").read_text(encoding="utf-8"))
    warm_up = tips[tips.index("## Warm-up") :].split(" ## ")[0]
    assert WARMUP_ACTIONS[_default_flag()] in warm_up
    assert WARMUP_ACTIONS[False] in warm_up  # what the switch gives instead, named once, there


@pytest.mark.parametrize("flag", [True, False])
def test_the_warm_up_draws_what_its_name_says(flag):
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=50, warmup_action_noise=flag, seed=3)
    uniform = np.random.default_rng(0)
    model._warmup_rng = np.random.default_rng(0)
    drawn = np.concatenate([model._sample_action(None) for _ in range(50)])
    expected = uniform.uniform(-1.0, 1.0, size=drawn.shape).astype(np.float32)
    if flag:  # plus the exploration noise, clipped to the bounds
        assert not np.array_equal(drawn, expected)
        assert np.all(np.abs(drawn - expected) < 0.6) and drawn.min() >= -1.0 and drawn.max() <= 1.0
        assert "plus the exploration noise, clipped" in WARMUP_ACTIONS[flag]
    else:
        np.testing.assert_array_equal(drawn, expected)
        assert "only" in WARMUP_ACTIONS[flag]
