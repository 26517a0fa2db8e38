"""Training and evaluation modes (issue 32, bug 1): acting (``predict``, collection) runs the actor in evaluation
mode, the updates in training mode, the targets always in evaluation mode, as in Stable-Baselines3."""

from __future__ import annotations

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from rlkit_td3 import DDPG, TD3
from rlkit_td3.torch_layers import BaseFeaturesExtractor


class NormExtractor(BaseFeaturesExtractor):
    """Flatten, then batch norm (needs more than one row in training mode) and dropout (random in training mode)."""

    def __init__(self, observation_space: spaces.Box, features_dim: int = 8) -> None:
        super().__init__(observation_space, features_dim)
        n_in = int(np.prod(observation_space.shape))
        self.net = nn.Sequential(
            nn.Flatten(), nn.Linear(n_in, features_dim), nn.BatchNorm1d(features_dim), nn.Dropout(0.5)
        )

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.net(observations)


KW = dict(
    policy_kwargs={"features_extractor_class": NormExtractor, "net_arch": [16]},
    learning_starts=20,
    batch_size=16,
    seed=0,
)


def test_learn_on_one_env_with_batch_norm_and_dropout():
    model = TD3("MlpPolicy", "Pendulum-v1", **KW)
    model.learn(60)  # crashed in collection: "Expected more than 1 value per channel when training"
    assert model._n_updates > 0
    assert not model.policy.actor_target.training and not model.policy.critic_target.training
    # the targets' batch norm statistics follow the online networks' (copied with each target update)
    for online, target in (
        (model.policy.actor, model.policy.actor_target),
        (model.policy.critic, model.policy.critic_target),
    ):
        stats = [m for m in online.modules() if isinstance(m, nn.BatchNorm1d)]
        target_stats = [m for m in target.modules() if isinstance(m, nn.BatchNorm1d)]
        assert stats and all(torch.equal(a.running_mean, b.running_mean) for a, b in zip(stats, target_stats))
        assert not torch.equal(stats[0].running_mean, torch.zeros_like(stats[0].running_mean))


def test_deterministic_predict_is_deterministic_with_dropout():
    model = DDPG("MlpPolicy", "Pendulum-v1", **KW)
    obs = np.tile(np.array([0.5, -0.5, 0.1], np.float32), (4, 1))
    first, _ = model.predict(obs, deterministic=True)
    for _ in range(3):
        again, _ = model.predict(obs, deterministic=True)
        np.testing.assert_array_equal(again, first)
    one, _ = model.predict(obs[0], deterministic=True)  # one observation: batch norm in evaluation mode
    np.testing.assert_array_equal(one, first[0])


def test_updates_run_in_training_mode():
    model = TD3("MlpPolicy", "Pendulum-v1", **KW)
    seen = []
    model.policy.actor.features_extractor.register_forward_hook(lambda m, i, o: seen.append(m.training))
    model.learn(40)
    assert True in seen and False in seen  # training mode in the updates, evaluation mode while acting


def test_plain_mlp_policy_does_not_switch_modes():
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=10, batch_size=8, seed=0)
    assert not model.policy.mode_dependent()
    model.learn(30)
    assert not model.policy.actor.training  # set once for acting, never switched back for the updates
