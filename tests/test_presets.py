"""Presets: shipped data, resolution order with origins, validation with close matches."""

from __future__ import annotations

import numpy as np
import pytest

from rlkit_td3 import DDPG, TD3
from rlkit_td3.buffers import LAPReplayBuffer, NStepReplayBuffer, PrioritizedReplayBuffer
from rlkit_td3.envs import BULLET_ENV_IDS
from rlkit_td3.experiments import ConfigError, load_presets, make_model, parse_override, resolve_config
from rlkit_td3.noise import OrnsteinUhlenbeckActionNoise
from rlkit_td3.schedules import LinearSchedule

BULLET = BULLET_ENV_IDS


def test_shipped_presets_name_their_source_and_cover_the_zoo_envs():
    presets = load_presets()
    assert {"zoo", "paper"} <= set(presets)
    assert all(presets[name]["source"] for name in presets)
    zoo_envs = set(presets["zoo"]["td3"])
    extra = {"Pendulum-v1", "MountainCarContinuous-v0", "LunarLanderContinuous-v3", "BipedalWalker-v3"}
    assert extra | {"BipedalWalkerHardcore-v3"} <= zoo_envs
    # every Bullet id resolves (InvertedPendulumBulletEnv has no zoo entry: the zoo's default table applies)
    for env_id in BULLET:
        for algo in ("td3", "ddpg"):
            resolve_config(algo, env_id, "zoo")


def test_resolution_order_and_origins():
    cfg = resolve_config("td3", "HalfCheetahBulletEnv-v0", "zoo", {"gamma": 0.95})
    hp, origins = cfg["hyperparameters"], cfg["origins"]
    assert hp["learning_rate"] == 7e-4 and origins["learning_rate"] == "preset:zoo"
    assert hp["gamma"] == 0.95 and origins["gamma"] == "override"
    assert hp["tau"] == 0.005 and origins["tau"] == "default"
    assert hp["policy_delay"] == 2 and origins["policy_delay"] == "default"
    ddpg = resolve_config("ddpg", "HumanoidBulletEnv-v0", "zoo")["hyperparameters"]
    assert ddpg["train_freq"] == (1, "episode") and ddpg["gradient_steps"] == -1 and ddpg["policy_delay"] == 1
    paper = resolve_config("ddpg", "ReacherBulletEnv-v0", "paper")["hyperparameters"]
    assert (paper["batch_size"], paper["learning_starts"], paper["policy_delay"]) == (100, 1000, 1)
    assert paper["target_policy_noise"] == 0.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: resolve_config("td4", "Pendulum-v1"), r"unknown algo 'td4'; did you mean 'td7' or 'td3'\?"),
        (lambda: resolve_config("td3", "Pendulum-v1", "zooo"), r"unknown preset 'zooo'; did you mean 'zoo'"),
        (lambda: resolve_config("td3", "Pendulum-v1", None, {"gama": 0.9}), r"'gama'.*did you mean 'gamma'"),
        (lambda: resolve_config("td3", "Pendulum-v1", None, {"noise_type": "pink"}), "noise_type must be"),
        (lambda: resolve_config("td3", "Pendulum-v1", None, {"n_timesteps": 0}), "n_timesteps must be"),
        (lambda: parse_override("gamma"), "key=value"),
    ],
)
def test_bad_input_names_it(call, message):
    with pytest.raises(ConfigError, match=message):
        call()


def test_parse_override_reads_literals():
    assert parse_override("net_arch=[64, 64]") == ("net_arch", [64, 64])
    assert parse_override("train_freq=(1,'episode')") == ("train_freq", (1, "episode"))
    assert parse_override("noise_type=none") == ("noise_type", "none")


def test_make_model_applies_the_config():
    cfg = resolve_config("td3", "MountainCarContinuous-v0", "zoo", {"net_arch": [16], "buffer_size": 1000})
    model = make_model(cfg, "MountainCarContinuous-v0", seed=0)
    assert isinstance(model, TD3) and isinstance(model.action_noise, OrnsteinUhlenbeckActionNoise)
    assert np.allclose(model.action_noise.sigma, 0.5) and model.policy.net_arch == [16]
    hardcore = resolve_config("ddpg", "Pendulum-v1", None, {"learning_rate": "lin_7e-4", "noise_type": "none"})
    model = make_model(hardcore, "Pendulum-v1")
    assert isinstance(model, DDPG) and model.action_noise is None
    assert model.learning_rate == LinearSchedule(7e-4, 0.0)
    with pytest.raises(ValueError, match="gamma"):
        make_model(resolve_config("td3", "Pendulum-v1", None, {"gamma": 2.0}), "Pendulum-v1")


def test_ddpg_switches_are_fixed():
    with pytest.raises(ConfigError, match="DDPG fixes policy_delay=1"):
        resolve_config("ddpg", "Pendulum-v1", None, {"policy_delay": 2})
    # the paper preset's TD3 smoothing/delay values do not leak into DDPG
    hp = resolve_config("ddpg", "HopperBulletEnv-v0", "paper")["hyperparameters"]
    assert (hp["policy_delay"], hp["target_policy_noise"], hp["target_noise_clip"]) == (1, 0.0, 0.0)


def test_plus_preset_is_the_zoo_with_three_step_returns_and_lap():
    zoo = resolve_config("td3", "HalfCheetahBulletEnv-v0", "zoo")["hyperparameters"]
    plus = resolve_config("td3", "HalfCheetahBulletEnv-v0", "plus")
    hp = plus["hyperparameters"]
    assert {k: v for k, v in hp.items() if k not in ("n_steps", "replay_buffer")} == {
        k: v for k, v in zoo.items() if k not in ("n_steps", "replay_buffer")
    }
    assert (hp["n_steps"], hp["replay_buffer"], hp["critic_layer_norm"]) == (3, "lap", False)
    assert (zoo["n_steps"], zoo["replay_buffer"]) == (1, "uniform")
    assert plus["origins"]["learning_rate"] == "preset:plus" and "LAP" in plus["source"]
    model = make_model(plus, "Pendulum-v1", seed=0)
    assert isinstance(model.replay_buffer, LAPReplayBuffer) and model.replay_buffer.n_steps == 3
    ddpg = resolve_config("ddpg", "HopperBulletEnv-v0", "plus")["hyperparameters"]
    assert (ddpg["n_steps"], ddpg["replay_buffer"], ddpg["policy_delay"], ddpg["target_policy_noise"]) == (
        3,
        "lap",
        1,
        0.0,
    )


def test_replay_buffer_and_layer_norm_keys():
    per = make_model(resolve_config("td3", "Pendulum-v1", None, {"replay_buffer": "prioritized"}), "Pendulum-v1")
    assert type(per.replay_buffer) is PrioritizedReplayBuffer and per.policy.critic_layer_norm is False
    config = resolve_config("td3", "Pendulum-v1", None, {"critic_layer_norm": True, "n_steps": 2})
    model = make_model(config, "Pendulum-v1")
    assert model.policy.critic_layer_norm is True and type(model.replay_buffer) is NStepReplayBuffer
    with pytest.raises(ConfigError, match="replay_buffer must be one of .*'lap'.*got 'rank'"):
        resolve_config("td3", "Pendulum-v1", None, {"replay_buffer": "rank"})
    with pytest.raises(ConfigError, match="critic_layer_norm must be true or false, got 1"):
        resolve_config("td3", "Pendulum-v1", None, {"critic_layer_norm": 1})
