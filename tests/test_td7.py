"""TD7 has the API every algorithm has (predict, save/load, callbacks, evaluate_policy, get/set_parameters), acts with
its checkpoint policy when deterministic, is never given the fused update, and refuses settings it cannot honour."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlkit_td3 import TD3, TD7
from rlkit_td3.buffers import LAPReplayBuffer
from rlkit_td3.callbacks import BaseCallback
from rlkit_td3.evaluation import evaluate_policy
from rlkit_td3.policies import TD3Policy, TD7Policy
from rlkit_td3.policies.sale import SALEEncoder, avg_l1_norm
from rlkit_td3.update.fused_update import FusedUpdate

TINY = dict(
    learning_starts=200,
    buffer_size=2_000,
    batch_size=16,
    target_update_interval=20,
    policy_kwargs=dict(net_arch=[16, 16], embedding_dim=8, encoder_net_arch=[16, 16]),
    seed=0,
)


@pytest.fixture(scope="module")
def trained():
    model = TD7("MlpPolicy", "Pendulum-v1", **TINY)
    model.learn(800)
    return model


def test_defaults_are_the_authors():
    model = TD7("MlpPolicy", "Pendulum-v1", buffer_size=1_000)
    assert (model.learning_starts, model.batch_size, model.gamma, model.policy_delay) == (25_000, 256, 0.99, 2)
    assert (model.target_policy_noise, model.target_noise_clip, model.target_update_interval) == (0.2, 0.5, 250)
    assert model.train_freq == (1, "episode") and model.gradient_steps == -1 and model.tau == 1.0
    assert (model.max_eps_when_checkpointing, model.steps_before_checkpointing, model.reset_weight) == (
        20,
        750_000,
        0.9,
    )
    assert isinstance(model.replay_buffer, LAPReplayBuffer) and model.replay_buffer.alpha == 0.4
    assert model.learning_rate(1.0) == 3e-4 and not model.warmup_action_noise
    policy = model.policy
    assert isinstance(policy, TD7Policy) and policy.embedding_dim == 256 and policy.encoder_net_arch == [256, 256]
    assert policy.critic.n_critics == 2
    assert isinstance(policy.critic.q_networks[0].q[1], torch.nn.ELU) and isinstance(policy.actor.mu[1], torch.nn.ReLU)
    assert policy.encoder_optimizer.param_groups[0]["lr"] == 3e-4


def test_avg_l1_norm_and_the_encoder_loss():
    x = torch.tensor([[1.0, -3.0], [0.0, 0.0]])
    assert torch.allclose(avg_l1_norm(x), torch.tensor([[0.5, -1.5], [0.0, 0.0]]))
    encoder = SALEEncoder(3, 1, embedding_dim=4, net_arch=[8])
    obs = torch.randn(5, 3)
    assert torch.allclose(encoder.zs(obs).abs().mean(dim=1), torch.ones(5))
    loss = encoder.loss(obs, torch.zeros(5, 1), obs)
    loss.backward()
    assert all(p.grad is not None for p in encoder.parameters())


def test_deterministic_predict_uses_the_checkpoint_policy(trained):
    policy = trained.policy
    obs = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    assert trained._n_updates > 0
    with torch.no_grad():
        checkpoint = policy.checkpoint_actor(torch.as_tensor(obs)).numpy()
        current = policy.actor(torch.as_tensor(obs)).numpy()
    assert not np.allclose(checkpoint, current)  # the actor trained on after the last checkpoint
    np.testing.assert_array_equal(trained.predict(obs, deterministic=True)[0], policy.unscale_action(checkpoint))
    policy.use_checkpoint = False
    try:
        np.testing.assert_array_equal(trained.predict(obs, deterministic=True)[0], policy.unscale_action(current))
    finally:
        policy.use_checkpoint = True


def test_the_fused_update_is_never_used_for_td7(trained):
    assert FusedUpdate.ineligibility(trained) == "_train_step is overridden"
    assert trained._fused_update_for(trained.batch_size) is None


def test_save_load_parameters_callbacks_and_evaluation(trained, tmp_path):
    trained.save(tmp_path / "td7.zip")
    loaded = TD7.load(tmp_path / "td7.zip", env="Pendulum-v1")
    obs = np.zeros((2, 3), dtype=np.float32)
    np.testing.assert_array_equal(loaded.predict(obs)[0], trained.predict(obs)[0])
    params = trained.get_parameters()
    assert set(params) == {"policy", "actor.optimizer", "critic.optimizer", "encoder.optimizer"}
    fresh = TD7("MlpPolicy", "Pendulum-v1", **{**TINY, "seed": 1})
    fresh.set_parameters(params)
    np.testing.assert_array_equal(fresh.predict(obs)[0], trained.predict(obs)[0])
    mean, _ = evaluate_policy(loaded, gym.make("Pendulum-v1"), n_eval_episodes=1)
    assert np.isfinite(mean)

    class Count(BaseCallback):
        steps = 0

        def _on_step(self) -> bool:
            Count.steps += 1
            return Count.steps < 50

    loaded.learn(300, callback=Count(), reset_num_timesteps=False)
    assert Count.steps == 50


def test_without_checkpoints_td7_trains_every_step_and_predicts_with_the_actor():
    model = TD7("MlpPolicy", "Pendulum-v1", **TINY, use_checkpoints=False, train_freq=1, gradient_steps=1)
    model.learn(260)
    assert model._n_updates == 60
    obs = np.zeros((1, 3), dtype=np.float32)
    with torch.no_grad():
        actor = model.policy.actor(torch.as_tensor(obs)).numpy()
    np.testing.assert_array_equal(model.predict(obs)[0], model.policy.unscale_action(actor))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(train_freq=1), "train_freq"),
        (dict(gradient_steps=4), "gradient_steps=-1"),
        (dict(target_update_interval=0), "target_update_interval"),
        (dict(reset_weight=1.5), "reset_weight"),
        (dict(use_checkpoints=1), "use_checkpoints must be a bool"),
        (dict(policy=TD3Policy), "TD7 needs a TD7Policy"),
        (dict(policy_kwargs=dict(embedding_dim=0)), "embedding_dim"),
    ],
)
def test_bad_settings_are_refused(kwargs, message):
    policy = kwargs.pop("policy", "MlpPolicy")
    with pytest.raises((ValueError, TypeError), match=message):
        TD7(policy, "Pendulum-v1", buffer_size=1_000, **kwargs)


def test_checkpoints_need_one_env():
    env = gym.make_vec("Pendulum-v1", num_envs=2)
    with pytest.raises(ValueError, match="needs one env"):
        TD7("MlpPolicy", env, buffer_size=1_000)


def test_td3_keeps_its_policy_and_td7_its_own():
    assert type(TD3("MlpPolicy", "Pendulum-v1", buffer_size=1_000).policy).__name__ == "TD3Policy"
    assert type(TD7("MlpPolicy", "Pendulum-v1", buffer_size=1_000).policy) is TD7Policy
