"""rlkit_td3's TD3 and DDPG are Stable-Baselines3's algorithms: the same updates in float64, the same loop.

Update: SB3's weights are copied into rlkit_td3, both policies are cast to float64, both libraries get the same
batches and the same smoothing-noise draws, and after K updates every actor, critic and target tensor agrees to
1e-6 relative (rounding alone reaches ~1e-14). Controls with a wrong discount or a shifted delay phase must
disagree, so the comparison can fail. In float32 the two runs separate after a few updates from summation order
alone (SB3 against itself with reversed batches does the same): see docs/results_runs.md.

Loop: on an env whose observations do not depend on the actions, both libraries store the same transitions
(truncation bootstraps, termination does not), start training at the same step and make the same number of
gradient steps.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import stable_baselines3 as sb3
import stable_baselines3.common.noise as sb3_noise
import stable_baselines3.common.policies as sb3_policies
import torch
from gymnasium import spaces
from stable_baselines3.common.logger import configure as sb3_configure
from stable_baselines3.common.type_aliases import ReplayBufferSamples as SB3Samples
from torch import nn

from rlkit_td3 import DDPG, TD3
from rlkit_td3.buffers import ReplayBufferSamples
from rlkit_td3.noise import ActionNoise

OBS_DIM, ACT_DIM, BATCH, K = 6, 2, 64, 40
SETTINGS = dict(
    learning_rate=7e-4,
    buffer_size=1_000,
    learning_starts=0,
    batch_size=BATCH,
    tau=0.005,
    gamma=0.98,
    policy_kwargs=dict(net_arch=[32, 24]),
)


class BoxEnv(gym.Env):
    """Random observations; only the spaces matter for the update comparison."""

    observation_space = spaces.Box(-5.0, 5.0, shape=(OBS_DIM,), dtype=np.float32)
    action_space = spaces.Box(-1.0, 1.0, shape=(ACT_DIM,), dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


def _linears(module: nn.Module) -> list[nn.Linear]:
    return [m for m in module.modules() if isinstance(m, nn.Linear)]


def _pairs(sb3_model, ours):
    """(name, SB3 tensor, rlkit_td3 tensor) for every weight and bias of the four networks, in SB3's layout."""
    for name in ("actor", "actor_target"):
        for layer, (a, b) in enumerate(zip(_linears(getattr(sb3_model, name)), _linears(getattr(ours.policy, name)))):
            yield f"{name}.{layer}.weight", a.weight, b.weight
            yield f"{name}.{layer}.bias", a.bias, b.bias
    for name in ("critic", "critic_target"):
        ensemble = getattr(ours.policy, name)
        for i, qf in enumerate(getattr(sb3_model, name).q_networks):
            for layer, lin in enumerate(_linears(qf)):
                yield f"{name}.q{i}.{layer}.weight", lin.weight, ensemble.weights[layer][i].T
                yield f"{name}.q{i}.{layer}.bias", lin.bias, ensemble.biases[layer][i, 0]


def _max_relative_difference(sb3_model, ours) -> float:
    with torch.no_grad():
        return max(float((a - b).abs().max() / a.abs().max()) for _, a, b in _pairs(sb3_model, ours))


def _batches(seed: int) -> list[dict[str, torch.Tensor]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(K):
        out.append(
            {
                "obs": torch.as_tensor(rng.normal(size=(BATCH, OBS_DIM))),
                "actions": torch.as_tensor(rng.uniform(-1, 1, size=(BATCH, ACT_DIM))),
                "next_obs": torch.as_tensor(rng.normal(size=(BATCH, OBS_DIM))),
                "rewards": torch.as_tensor(rng.normal(size=BATCH)),
                "terminated": torch.as_tensor((rng.random(BATCH) < 0.1).astype(np.float64)),
                "noise": torch.as_tensor(rng.normal(size=(BATCH, ACT_DIM))),  # N(0, 1) smoothing draws
            }
        )
    return out


def _run_pair(algo: str, monkeypatch, our_gamma: float | None = None, delay_shift: int = 0) -> float:
    """K float64 updates in both libraries from the same weights, batches and noise; the largest difference."""
    sb3_cls, our_cls = (sb3.TD3, TD3) if algo == "td3" else (sb3.DDPG, DDPG)
    sb3_model = sb3_cls("MlpPolicy", BoxEnv(), seed=0, device="cpu", **SETTINGS)
    ours = our_cls("MlpPolicy", BoxEnv(), seed=1, **{**SETTINGS, "gamma": our_gamma or SETTINGS["gamma"]})
    sb3_model.set_logger(sb3_configure(None, [""]))
    sb3_model.policy.double()
    ours.policy.double()
    with torch.no_grad():
        for _, a, b in _pairs(sb3_model, ours):
            b.copy_(a)
    assert _max_relative_difference(sb3_model, ours) == 0.0
    # SB3 casts Box observations to float32 in preprocess_obs; keep them float64 (the function is only that cast).
    monkeypatch.setattr(sb3_policies, "preprocess_obs", lambda obs, space, normalize_images=True: obs)

    batches = _batches(seed=2)
    sb3_draws, our_draws = iter(b["noise"] for b in batches), iter(b["noise"] for b in batches)

    def sb3_normal_(tensor, mean=0.0, std=1.0, *, generator=None):  # SB3 draws with Tensor.normal_
        return tensor.copy_(next(sb3_draws) * std + mean)

    def our_randn(*size, generator=None, device=None, dtype=None):  # rlkit_td3 draws with torch.randn(generator=)
        return next(our_draws).clone()

    sb3_iter = iter(batches)
    sb3_model.replay_buffer.sample = lambda batch_size, env=None: (
        lambda b: SB3Samples(b["obs"], b["actions"], b["next_obs"], b["terminated"][:, None], b["rewards"][:, None])
    )(next(sb3_iter))
    our_iter = iter(batches)
    zeros = torch.zeros(BATCH, dtype=torch.float64)  # no truncation flags: the update does not read them
    ours.replay_buffer.sample = lambda batch_size: (
        lambda b: ReplayBufferSamples(b["obs"], b["actions"], b["next_obs"], b["rewards"], b["terminated"], zeros)
    )(next(our_iter))

    with monkeypatch.context() as patch:
        patch.setattr(torch.Tensor, "normal_", sb3_normal_)
        for _ in range(K):
            sb3_model.train(gradient_steps=1, batch_size=BATCH)
    ours._n_updates += delay_shift
    with monkeypatch.context() as patch:
        patch.setattr(torch, "randn", our_randn)
        for _ in range(K):
            ours.train(gradient_steps=1, batch_size=BATCH)
    if algo == "td3":  # both consumed exactly one smoothing draw per update
        assert next(sb3_draws, None) is None and next(our_draws, None) is None
    return _max_relative_difference(sb3_model, ours)


@pytest.mark.parametrize("algo", ["td3", "ddpg"])
def test_updates_equal_sb3_in_float64(algo, monkeypatch):
    difference = _run_pair(algo, monkeypatch)
    assert difference <= 1e-6, f"{algo}: largest relative difference {difference:.2e}"


@pytest.mark.parametrize(
    ("algo", "control"),
    [("td3", {"our_gamma": 0.99}), ("td3", {"delay_shift": 1}), ("ddpg", {"our_gamma": 0.99})],
)
def test_the_comparison_flags_a_wrong_discount_or_delay_phase(algo, control, monkeypatch):
    difference = _run_pair(algo, monkeypatch, **control)
    assert difference > 1e-3, f"{algo} with {control}: the comparison did not flag it ({difference:.2e})"


# ---------------------------------------------------------------------------------------------------------
# the loop


class AlternatingEndsEnv(gym.Env):
    """Observation ``[episode, t]`` whatever the action; even episodes terminate at t = 4, odd ones run into the
    TimeLimit (6) wrapped around it. Rewards are ``t``."""

    observation_space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
    action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)

    def __init__(self):
        self.episode, self.t = -1, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode, self.t = self.episode + 1, 0
        return np.array([self.episode, 0], dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        terminated = self.episode % 2 == 0 and self.t >= 4
        return np.array([self.episode, self.t], dtype=np.float32), float(self.t), terminated, False, {}


def _loop_env() -> gym.Env:
    return gym.wrappers.TimeLimit(AlternatingEndsEnv(), max_episode_steps=6)


def _record_train_calls(model, calls: list) -> None:
    train = model.train

    def recording(gradient_steps, batch_size=None):
        calls.append((model.num_timesteps, gradient_steps))
        return train(gradient_steps=gradient_steps, batch_size=batch_size)

    model.train = recording


@pytest.mark.parametrize("algo", ["td3", "ddpg"])
def test_the_loop_stores_and_trains_as_sb3_does(algo):
    sb3_cls, our_cls = (sb3.TD3, TD3) if algo == "td3" else (sb3.DDPG, DDPG)
    settings = {**SETTINGS, "learning_starts": 20, "batch_size": 8}
    sb3_model = sb3_cls("MlpPolicy", _loop_env(), seed=0, device="cpu", **settings)
    ours = our_cls("MlpPolicy", _loop_env(), seed=0, **settings)
    sb3_calls: list = []
    our_calls: list = []
    _record_train_calls(sb3_model, sb3_calls)
    _record_train_calls(ours, our_calls)
    sb3_model.learn(60)
    ours.learn(60)

    assert our_calls == sb3_calls and sb3_calls[0] == (21, 1)  # first update after learning_starts, one per step
    assert ours._n_updates == sb3_model._n_updates == 40

    size = sb3_model.replay_buffer.size()
    assert len(ours.replay_buffer) == size == 60
    sb3_buffer = sb3_model.replay_buffer
    np.testing.assert_array_equal(ours.replay_buffer.observations[:size], sb3_buffer.observations[:size, 0])
    np.testing.assert_array_equal(ours.replay_buffer.next_observations[:size], sb3_buffer.next_observations[:size, 0])
    np.testing.assert_array_equal(ours.replay_buffer.rewards[:size], sb3_buffer.rewards[:size, 0])
    # SB3 stores done = terminated or truncated and the timeout apart; its target uses done * (1 - timeout).
    sb3_terminated = sb3_buffer.dones[:size, 0] * (1 - sb3_buffer.timeouts[:size, 0])
    np.testing.assert_array_equal(ours.replay_buffer.terminated[:size], sb3_terminated.astype(bool))
    np.testing.assert_array_equal(ours.replay_buffer.truncated[:size], sb3_buffer.timeouts[:size, 0].astype(bool))
    # the env ends both ways: terminations at t = 4 (no bootstrap) and truncations at t = 6 (bootstrap from the
    # true final observation, not the next episode's first)
    assert ours.replay_buffer.terminated[:size].sum() >= 5 and ours.replay_buffer.truncated[:size].sum() >= 5
    ends = ours.replay_buffer.truncated[:size]
    np.testing.assert_array_equal(ours.replay_buffer.next_observations[:size][ends][:, 1], 6.0)


# ---------------------------------------------------------------------------------------------------------
# the warm-up


class _ListNoise(ActionNoise):
    """rlkit_td3 noise returning prepared draws, one per call."""

    def __init__(self, draws):
        super().__init__()
        self.draws = iter(draws)

    def __call__(self):
        return next(self.draws)


class _SB3ListNoise(sb3_noise.ActionNoise):
    """The same prepared draws for SB3."""

    def __init__(self, draws):
        super().__init__()
        self.draws = iter(draws)

    def __call__(self):
        return next(self.draws)


class _PreparedUniform:
    """Stands in for the warm-up generator: ``uniform`` returns the prepared rows."""

    def __init__(self, rows):
        self.rows = iter(rows)

    def uniform(self, low, high, size):
        return next(self.rows).reshape(size)


@pytest.mark.parametrize("algo", ["td3", "ddpg"])
def test_warm_up_actions_are_sb3s_row_by_row(algo):
    """Default warm-up = SB3's: uniform draws plus the exploration noise, clipped, stored row for row the same.

    Both libraries get the same uniform draws (on a grid of eighths, which SB3's scaling to [-1, 1] keeps exact)
    and the same noise draws, large enough that about a third of the components are clipped.
    """
    steps, learning_starts = 40, 30
    rng = np.random.default_rng(5)
    uniform = rng.integers(-8, 9, size=(steps, 1)).astype(np.float32) / 8
    noise = rng.normal(0.0, 0.5, size=(steps, 1))
    settings = {**SETTINGS, "learning_starts": learning_starts, "batch_size": 8}
    sb3_cls, our_cls = (sb3.TD3, TD3) if algo == "td3" else (sb3.DDPG, DDPG)
    sb3_model = sb3_cls("MlpPolicy", _loop_env(), seed=0, device="cpu", action_noise=_SB3ListNoise(noise), **settings)
    ours = our_cls("MlpPolicy", _loop_env(), seed=0, action_noise=_ListNoise(noise), **settings)
    sb3_uniform = iter(uniform)
    sb3_model.action_space.sample = lambda: next(sb3_uniform).copy()
    ours._warmup_rng = _PreparedUniform(uniform)
    sb3_model.learn(learning_starts)
    ours.learn(learning_starts)

    stored = ours.replay_buffer.actions[:learning_starts]
    np.testing.assert_array_equal(stored, sb3_model.replay_buffer.actions[:learning_starts, 0])
    expected = np.clip(uniform[:learning_starts] + noise[:learning_starts], -1, 1).astype(np.float32)
    np.testing.assert_array_equal(stored, expected)
    assert 0 < np.isin(stored, [-1.0, 1.0]).sum() < learning_starts  # some rows were clipped, not all

    # the paper's warm-up: the uniform draws alone, and no noise drawn
    paper = our_cls(
        "MlpPolicy", _loop_env(), seed=0, action_noise=_ListNoise([]), warmup_action_noise=False, **settings
    )
    paper._warmup_rng = _PreparedUniform(uniform)
    paper.learn(learning_starts)
    np.testing.assert_array_equal(paper.replay_buffer.actions[:learning_starts], uniform[:learning_starts])
