"""SB3's import paths for TD3/DDPG users exist here with the package name changed (the import rule)."""

from __future__ import annotations

import importlib

import pytest

# (SB3 module with "stable_baselines3" replaced by "rlkit_td3" and ".common" dropped, names imported from it)
SB3_IMPORTS = [
    ("rlkit_td3", ["TD3", "DDPG"]),
    ("rlkit_td3.td3", ["TD3", "MlpPolicy", "CnnPolicy", "MultiInputPolicy"]),
    ("rlkit_td3.td3.policies", ["MlpPolicy", "CnnPolicy", "MultiInputPolicy", "TD3Policy", "Actor"]),
    ("rlkit_td3.ddpg", ["DDPG", "MlpPolicy", "CnnPolicy", "MultiInputPolicy"]),
    ("rlkit_td3.ddpg.policies", ["MlpPolicy", "CnnPolicy", "MultiInputPolicy", "TD3Policy"]),
    ("rlkit_td3.torch_layers", ["BaseFeaturesExtractor", "FlattenExtractor", "NatureCNN", "CombinedExtractor"]),
    ("rlkit_td3.preprocessing", ["is_image_space", "is_image_space_channels_first", "preprocess_obs"]),
    ("rlkit_td3.preprocessing", ["get_flattened_obs_dim"]),
    ("rlkit_td3.noise", ["NormalActionNoise", "OrnsteinUhlenbeckActionNoise", "VectorizedActionNoise"]),
    ("rlkit_td3.callbacks", ["BaseCallback", "CallbackList", "CheckpointCallback", "EvalCallback"]),
    ("rlkit_td3.callbacks", ["EveryNTimesteps", "LogEveryNTimesteps", "StopTrainingOnRewardThreshold"]),
    ("rlkit_td3.evaluation", ["evaluate_policy"]),
    ("rlkit_td3.logger", ["configure", "Logger", "Image", "Figure", "Video", "HParam", "TensorBoardOutputFormat"]),
    ("rlkit_td3.monitor", ["Monitor", "load_results"]),
    ("rlkit_td3.results_plotter", ["plot_results", "ts2xy", "window_func", "X_TIMESTEPS", "X_EPISODES"]),
    ("rlkit_td3.vec_env", ["DummyVecEnv", "SubprocVecEnv", "VecNormalize", "VecMonitor", "VecFrameStack"]),
    ("rlkit_td3.vec_env", ["VecVideoRecorder", "VecCheckNan", "VecEnvWrapper", "VecEnv"]),
    ("rlkit_td3.env_util", ["make_vec_env"]),
    ("rlkit_td3.env_checker", ["check_env"]),
    ("rlkit_td3.running_mean_std", ["RunningMeanStd"]),
    ("rlkit_td3.utils", ["set_random_seed", "polyak_update", "get_linear_fn", "constant_fn", "get_schedule_fn"]),
    ("rlkit_td3.utils", ["safe_mean", "get_device"]),
    ("rlkit_td3.buffers", ["ReplayBuffer", "DictReplayBuffer"]),
    ("rlkit_td3", ["HerReplayBuffer"]),
    ("rlkit_td3.her", ["HerReplayBuffer", "GoalSelectionStrategy"]),
    ("rlkit_td3.policies", ["MlpPolicy", "CnnPolicy", "MultiInputPolicy"]),
    ("rlkit_td3.policies", ["BasePolicy"]),
    ("rlkit_td3.envs", ["BitFlippingEnv", "IdentityEnv", "IdentityEnvBox", "FakeImageEnv", "SimpleMultiObsEnv"]),
    ("rlkit_td3.envs", ["IdentityEnvMultiBinary", "IdentityEnvMultiDiscrete"]),
    ("rlkit_td3.envs.bit_flipping_env", ["BitFlippingEnv"]),
    ("rlkit_td3.envs.identity_env", ["IdentityEnv", "IdentityEnvBox", "FakeImageEnv"]),
    ("rlkit_td3.envs.multi_input_envs", ["SimpleMultiObsEnv"]),
    ("rlkit_td3.buffers", ["NStepReplayBuffer"]),
    ("rlkit_td3.base_class", ["BaseAlgorithm"]),
    ("rlkit_td3.off_policy_algorithm", ["OffPolicyAlgorithm"]),
]


@pytest.mark.parametrize(("module", "names"), SB3_IMPORTS)
def test_sb3_import_paths_exist(module, names):
    imported = importlib.import_module(module)
    missing = [name for name in names if not hasattr(imported, name)]
    assert not missing, f"{module} lacks {missing}"


def test_the_policy_modules_name_the_same_classes():
    from rlkit_td3.ddpg.policies import MlpPolicy as ddpg_mlp
    from rlkit_td3.policies import TD3Policy
    from rlkit_td3.td3.policies import MlpPolicy as td3_mlp

    assert td3_mlp is ddpg_mlp is TD3Policy


def test_the_image_and_dict_aliases_are_the_same_classes_everywhere():
    from rlkit_td3 import TD3
    from rlkit_td3.ddpg.policies import CnnPolicy as ddpg_cnn
    from rlkit_td3.ddpg.policies import MultiInputPolicy as ddpg_multi
    from rlkit_td3.policies import CnnPolicy, MultiInputPolicy, get_policy_class
    from rlkit_td3.td3.policies import CnnPolicy as td3_cnn
    from rlkit_td3.td3.policies import MultiInputPolicy as td3_multi

    assert td3_cnn is ddpg_cnn is CnnPolicy is get_policy_class("CnnPolicy") is TD3.policy_aliases["CnnPolicy"]
    assert td3_multi is ddpg_multi is MultiInputPolicy is get_policy_class("MultiInputPolicy")


def test_every_model_is_a_base_algorithm_and_the_sb3_module_names_the_same_class():
    from rlkit_td3 import DDPG, TD3
    from rlkit_td3.base_class import BaseAlgorithm
    from rlkit_td3.off_policy import OffPolicyAlgorithm
    from rlkit_td3.off_policy_algorithm import OffPolicyAlgorithm as sb3_named

    assert sb3_named is OffPolicyAlgorithm
    assert issubclass(TD3, BaseAlgorithm) and issubclass(DDPG, BaseAlgorithm)
