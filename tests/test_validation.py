"""Bad input raises ValueError/TypeError naming the parameter."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces

from rlkit_td3 import DDPG, TD3, OffPolicyAlgorithm
from tests.conftest import CounterEnv


class DiscreteActionEnv(CounterEnv):
    def __init__(self, action_space):
        super().__init__()
        self.action_space = action_space


@pytest.mark.parametrize(
    "action_space",
    [spaces.Discrete(3), spaces.MultiDiscrete([2, 3])],
    ids=["Discrete", "MultiDiscrete"],
)
def test_discrete_action_spaces_rejected(action_space):
    with pytest.raises(TypeError, match="action_space"):
        TD3("MlpPolicy", DiscreteActionEnv(action_space))
    with pytest.raises(AssertionError, match="TD3 and DDPG do not support discrete action spaces"):  # SB3's type
        DDPG("MlpPolicy", DiscreteActionEnv(action_space))


def test_infinite_action_bounds_rejected():
    env = CounterEnv()
    env.action_space = spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float32)
    with pytest.raises(ValueError, match="action_space.*finite"):
        TD3("MlpPolicy", env)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"tau": 1.0001}, "tau"),
        ({"tau": 1.5}, "tau"),
        ({"tau": -0.1}, "tau"),
        ({"gamma": -0.01}, "gamma"),
        ({"gamma": 1.01}, "gamma"),
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": -5}, "batch_size"),
        ({"learning_starts": -1}, "learning_starts"),
        ({"learning_rate": -1e-3}, "learning_rate"),
        ({"learning_rate": 1e308}, "learning_rate"),  # finite, but no float32 optimizer holds it (fuzz case 898)
        ({"critic_learning_rate": 3.5e38}, "critic_learning_rate"),
        ({"train_freq": (1, "hour")}, "train_freq"),
        ({"gradient_steps": -2}, "gradient_steps"),
    ],
)
def test_hyperparameters_out_of_range(kwargs, name):
    with pytest.raises(ValueError, match=name):
        TD3("MlpPolicy", "Pendulum-v1", **kwargs)


def test_wrong_types_raise_type_error():
    with pytest.raises(TypeError, match="batch_size"):
        TD3("MlpPolicy", "Pendulum-v1", batch_size=64.5)
    with pytest.raises(TypeError, match="action_noise"):
        TD3("MlpPolicy", "Pendulum-v1", action_noise="gaussian")
    with pytest.raises(TypeError, match="env"):
        TD3("MlpPolicy", 42)


def test_unknown_policy_alias():
    with pytest.raises(ValueError, match="policy 'CnnPolicyX'"):
        TD3("CnnPolicyX", "Pendulum-v1")
    with pytest.raises(TypeError, match="policy"):
        DDPG(dict, "Pendulum-v1")


@pytest.mark.parametrize(
    "net_arch",
    [
        [64, 0],
        [64, -3],
        [64.0, 32],
        "64,64",
        [True, 4],
        {"pi": [64]},
        {"pi": [64], "qf": [64], "vf": [1]},
        64,
    ],
)
def test_bad_net_arch(net_arch):
    with pytest.raises((ValueError, TypeError), match="net_arch"):
        TD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": net_arch})


def test_good_net_arch_dict_builds_separate_sizes():
    model = TD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": {"pi": [8], "qf": [16, 4]}})
    assert model.policy.actor.mu[0].out_features == 8
    assert [w.shape[-1] for w in model.policy.critic.weights] == [16, 4, 1]


def test_base_class_is_abstract():
    with pytest.raises(TypeError, match="abstract"):
        OffPolicyAlgorithm("MlpPolicy", "Pendulum-v1", policy_delay=1, target_policy_noise=0.0, target_noise_clip=0.0)


def test_dict_observation_space_rejected():
    env = CounterEnv()
    env.observation_space = spaces.Dict({"a": spaces.Box(-1, 1, (2,))})
    with pytest.raises(TypeError, match="observation_space"):
        TD3("MlpPolicy", env)


def test_predict_rejects_reset_tuple_and_bad_shapes():
    model = TD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]})
    obs, info = gym.make("Pendulum-v1").reset(seed=0)
    with pytest.raises(TypeError, match="tuple"):
        model.predict((obs, info))
    with pytest.raises(ValueError, match="shape"):
        model.predict(np.zeros(4, dtype=np.float32))


def test_observation_of_wrong_shape_or_kind_raises_clearly():
    class BadObs(gym.Env):
        observation_space = spaces.Box(-1, 1, (3,), np.float32)
        action_space = spaces.Box(-1, 1, (1,), np.float32)

        def __init__(self, obs):
            self.obs = obs

        def reset(self, *, seed=None, options=None):
            return np.zeros(3, np.float32), {}

        def step(self, action):
            return self.obs, 0.0, False, False, {}

    for obs, what in ((np.zeros(4, np.float32), r"shape \(4,\)"), (np.array(["a", "b", "c"]), "dtype <U1")):
        model = TD3("MlpPolicy", BadObs(obs), learning_starts=10, policy_kwargs={"net_arch": [4]})
        message = (
            rf"BadObs returned an observation of .*{what}.* from step\(\) \(its step 1 since creation\); "
            r"its observation_space has shape \(3,\)"
        )
        with pytest.raises(ValueError, match=message):
            model.learn(5)
    # float64 observations for a float32 space are fine (the buffer stores float32)
    TD3("MlpPolicy", BadObs(np.zeros(3)), learning_starts=10, policy_kwargs={"net_arch": [4]}).learn(5)


# ---------------------------------------------------------------- NumPy scalars wherever a Python number goes


def test_numpy_scalars_accepted_everywhere_and_saved_as_plain_json(tmp_path):
    import json
    import zipfile

    from rlkit_td3.noise import NormalActionNoise, VectorizedActionNoise
    from rlkit_td3.schedules import ConstantSchedule, LinearSchedule

    f32, i64 = np.float32, np.int64
    model = TD3(
        "MlpPolicy",
        "Pendulum-v1",
        learning_rate=LinearSchedule(f32(1e-3), f32(1e-4), f32(0.5)),
        actor_learning_rate=f32(2e-3),
        critic_learning_rate=ConstantSchedule(np.float64(3e-3)),
        buffer_size=i64(500),
        learning_starts=np.int32(10),
        batch_size=np.uint8(8),
        tau=f32(0.01),
        gamma=f32(0.9),
        train_freq=(i64(2), "step"),
        gradient_steps=i64(1),
        action_noise=NormalActionNoise(np.zeros(1, f32), np.full(1, 0.2, f32), decay=f32(0.999), min_sigma=f32(0.01)),
        replay_buffer_kwargs={},
        policy_delay=i64(2),
        target_policy_noise=f32(0.2),
        target_noise_clip=f32(0.5),
        policy_kwargs={
            "net_arch": {"pi": [i64(8)], "qf": [np.int16(6), np.uint32(4)]},
            "n_critics": i64(3),
            "optimizer_kwargs": {"eps": f32(1e-7), "betas": (f32(0.8), np.float64(0.99)), "weight_decay": f32(0)},
        },
        verbose=np.int8(0),
        seed=np.uint32(3),
    )
    model.learn(total_timesteps=i64(20), log_interval=i64(1))
    assert model.num_timesteps == 20 and model.policy.critic.n_critics == 3
    path = tmp_path / "np.zip"
    model.save(path)
    with zipfile.ZipFile(path) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".json"))
        meta = json.loads(zf.read(name))
    assert meta["policy"]["kwargs"]["net_arch"] == {"pi": [8], "qf": [6, 4]}
    assert meta["policy"]["kwargs"]["n_critics"] == 3
    assert meta["schedules"]["learning_rate"] == {
        "type": "linear",
        "start": float(f32(1e-3)),
        "end": float(f32(1e-4)),
        "end_fraction": 0.5,
    }
    loaded = TD3.load(path, env="Pendulum-v1")
    assert loaded.learning_rate == model.learning_rate and loaded.critic_learning_rate(0.3) == 3e-3
    assert loaded.actor_learning_rate(1.0) == float(f32(2e-3))
    kwargs = loaded.policy.optimizer_kwargs
    assert (kwargs["eps"], list(kwargs["betas"])) == (float(f32(1e-7)), [float(f32(0.8)), 0.99])
    assert (loaded.tau, loaded.gamma, loaded.batch_size, loaded.seed) == (float(f32(0.01)), float(f32(0.9)), 8, 3)
    assert loaded.action_noise.to_dict() == model.action_noise.to_dict()
    loaded.learn(i64(4), reset_num_timesteps=False)
    vec_noise = VectorizedActionNoise(NormalActionNoise([0.0], [0.1]), n_envs=i64(2), seed=i64(1))
    assert vec_noise.n_envs == 2 and vec_noise().shape == (2, 1)


def test_numpy_scalars_in_the_replay_buffer_and_its_switch(tmp_path):
    from rlkit_td3.buffers import ReplayBuffer

    obs, act = spaces.Box(-1, 1, (2,), np.float32), spaces.Box(-1, 1, (1,), np.float32)
    buffer = ReplayBuffer(
        np.int64(10), obs, act, n_envs=np.int64(2), seed=np.int64(0), optimize_memory_usage=np.bool_(1)
    )
    assert (buffer.n_envs, buffer.optimize_memory_usage) == (2, True) and type(buffer.n_envs) is int
    model = TD3(
        "MlpPolicy",
        "Pendulum-v1",
        buffer_size=500,
        optimize_memory_usage=np.bool_(True),
        policy_kwargs={"net_arch": [4]},
    )
    model.save(tmp_path / "m.zip")
    assert TD3.load(tmp_path / "m.zip").optimize_memory_usage is True


def test_numpy_scalars_in_evaluate_policy():
    from rlkit_td3.evaluation import evaluate_policy

    model = TD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [4]}, seed=0)
    returns, lengths = evaluate_policy(
        model, "Pendulum-v1", n_eval_episodes=np.int64(2), seed=np.int64(4), return_episode_rewards=True
    )
    again, _ = evaluate_policy(model, "Pendulum-v1", n_eval_episodes=2, seed=4, return_episode_rewards=True)
    assert lengths == [200, 200] and returns == again


def test_schedules_take_numpy_scalars_and_refuse_non_numbers():
    import json

    from rlkit_td3.schedules import ConstantSchedule, LinearSchedule, as_schedule

    schedule = LinearSchedule(np.float32(1e-3))
    assert json.dumps(schedule.to_dict()) and type(schedule.start) is float
    assert as_schedule(np.float32(0.5)) == ConstantSchedule(0.5)
    assert json.dumps(ConstantSchedule(np.float64(2.0)).to_dict()) == '{"type": "constant", "value": 2.0}'
    with pytest.raises(TypeError, match="start"):
        LinearSchedule("1e-3")
    with pytest.raises(ValueError, match="end"):
        LinearSchedule(1e-3, float("nan"))


def test_schedule_values_keep_the_bound_a_model_file_keeps():
    """The constructor refuses what loading refuses: a schedule value beyond float32 (the file bound of
    `check_schedule_spec`), so no model can be built, trained to NaN and then saved unloadable."""
    from rlkit_td3.fileio.serialization import ModelFileError
    from rlkit_td3.schedules import LinearSchedule, as_schedule, check_schedule_spec

    top = float(np.finfo(np.float32).max)
    assert as_schedule(top)(1.0) == top
    check_schedule_spec("learning_rate", {"type": "constant", "value": top})
    with pytest.raises(ValueError, match=r"learning_rate must be .*float32.*1e\+308"):
        as_schedule(1e308)
    with pytest.raises(ModelFileError):
        check_schedule_spec("learning_rate", {"type": "constant", "value": 1e308})
    with pytest.raises(ValueError, match=r"actor_learning_rate\.start must fit a float32"):
        TD3("MlpPolicy", "Pendulum-v1", actor_learning_rate=LinearSchedule(1e39, 1e-4))


def test_lr_in_optimizer_kwargs_is_refused_clearly():
    with pytest.raises(ValueError, match="optimizer_kwargs.*'lr'.*learning_rate"):
        TD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"optimizer_kwargs": {"lr": np.float32(1e-3)}})


# ---------------------------------------------------------------- messages name the user's env


def test_space_mismatch_messages_name_the_users_env():
    from gymnasium.vector import SyncVectorEnv

    from tests.conftest import make_counter

    model = TD3("MlpPolicy", make_counter(5), policy_kwargs={"net_arch": [4]})
    other = make_counter(5, act_low=(-2.0,), act_high=(2.0,))
    with pytest.raises(ValueError, match=r"^CounterEnv: the env's action_space"):
        model.set_env(other)
    with pytest.raises(ValueError, match=r"^Pendulum-v1: the env's observation_space"):
        model.set_env("Pendulum-v1")
    with pytest.raises(ValueError, match=r"^CounterEnv: the env's action_space"):
        model.set_env(SyncVectorEnv([lambda: other]))
    with pytest.raises(TypeError, match=r"^DiscreteActionEnv: action_space must be a continuous"):
        TD3("MlpPolicy", DiscreteActionEnv(spaces.Discrete(2)))
    env = CounterEnv()
    env.observation_space = spaces.Tuple((spaces.Discrete(3), spaces.Discrete(2)))
    with pytest.raises(TypeError, match=r"^CounterEnv: observation_space must be a gymnasium.spaces.Box"):
        TD3("MlpPolicy", env)


def test_tau_zero_keeps_the_targets_and_gradient_steps_zero_does_not_train():
    # SB3 accepts both: tau=0 never moves the target networks, gradient_steps=0 collects without updating.
    model = TD3("MlpPolicy", "Pendulum-v1", tau=0.0, learning_starts=10, seed=0, policy_kwargs={"net_arch": [8]})
    before = [p.detach().clone() for p in model.policy.actor_target.parameters()]
    model.learn(30)
    assert model._n_updates > 0
    assert all(torch.equal(a, b) for a, b in zip(before, model.policy.actor_target.parameters()))
    idle = DDPG("MlpPolicy", "Pendulum-v1", gradient_steps=0, learning_starts=10, policy_kwargs={"net_arch": [8]})
    idle.learn(30)
    assert idle._n_updates == 0 and idle.num_timesteps == 30
