"""Shared test helpers: tiny deterministic envs with known transitions."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces


class CounterEnv(gym.Env):
    """Observation ``[episode_id, t]``; episodes end by termination at ``terminate_at`` steps (if set),
    otherwise by the TimeLimit truncation the test wraps around it. Rewards are ``t``."""

    metadata: dict = {"render_modes": []}

    def __init__(self, terminate_at: int | None = None, act_low=(-1.0,), act_high=(1.0,)):
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Box(np.array(act_low, np.float32), np.array(act_high, np.float32))
        self.terminate_at = terminate_at
        self.episode = -1
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode += 1
        self.t = 0
        return np.array([self.episode, self.t], dtype=np.float32), {}

    def step(self, action):
        assert self.action_space.contains(np.asarray(action, dtype=np.float32)), action
        self.t += 1
        terminated = self.terminate_at is not None and self.t >= self.terminate_at
        return np.array([self.episode, self.t], dtype=np.float32), float(self.t), terminated, False, {}


def make_counter(max_steps: int = 5, terminate_at: int | None = None, **kwargs) -> gym.Env:
    return gym.wrappers.TimeLimit(CounterEnv(terminate_at=terminate_at, **kwargs), max_episode_steps=max_steps)


# One torch thread from the start, not only per test: module- and session-scoped fixtures run before the autouse
# fixture below, and a model they save records the thread count it trained at. A file saved at 2 threads makes a
# forked child (tests/model_fuzz.py run_isolated) train at 2 threads, and a child's first parallel region after its
# parent already ran one with GNU OpenMP (torch's libgomp) waits forever for the parent's worker threads.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _threads():
    torch.set_num_threads(1)
    yield
