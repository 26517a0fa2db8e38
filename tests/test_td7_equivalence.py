"""rlkit_td3's TD7 is the authors' TD7: the same update in float64, the same checkpoint schedule.

Update: the reference's networks (sfujim/TD7's ``Agent``, read from ``../shared/reference/td7/`` next to the
repository) are built, cast to float64 and copied into our `TD7` (once with its default update, whose backward
passes are written out in `rlkit_td3.td7.fused`, once with autograd's); both then get the same batches (fed
directly: the reference's buffer would sample float32 tensors) and the same target-smoothing draws for K updates,
covering the actor delay and two hard target copies. Every network (encoder, fixed encoders, actor, critic,
targets), the value clipping bounds and the LAP priorities must agree to 1e-12 relative. Controls (a wrong actor
delay, Polyak updates instead of hard copies) must fail the same comparison, so it can fail.

Checkpoints: for a sequence of episodes (lengths, returns), our schedule makes the same decisions as the reference's
``maybe_train_and_checkpoint``: the same checkpoint copies, the same number of updates at the same episodes.

Where the reference folder is absent the tests say so and skip.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch import nn

from rlkit_td3 import TD7
from rlkit_td3.buffers import PrioritizedReplayBufferSamples
from rlkit_td3.td7 import fused

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "td7"
OBS_DIM, ACT_DIM, BATCH, K, INTERVAL, STORED = 5, 2, 32, 45, 20, 200
GAMMA = 0.99
TOLERANCE = 1e-12
SIZES = dict(zs_dim=16, enc_hdim=24, critic_hdim=24, actor_hdim=24)
POLICY_KWARGS = dict(net_arch=[24, 24], embedding_dim=16, encoder_net_arch=[24, 24])


def _reference():
    """The authors' TD7 module, imported from its file (its ``import buffer`` resolved beside it)."""
    if not (REFERENCE / "TD7.py").is_file():
        pytest.skip(f"the TD7 reference is absent ({REFERENCE}): the equivalence with the authors' TD7 is not checked")
    sys.path.insert(0, str(REFERENCE))
    try:
        spec = importlib.util.spec_from_file_location("td7_reference", REFERENCE / "TD7.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(REFERENCE))
    return module


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


NETWORKS = (  # (the reference's attribute, ours)
    ("actor", "actor"),
    ("actor_target", "actor_target"),
    ("checkpoint_actor", "checkpoint_actor"),
    ("critic", "critic"),
    ("critic_target", "critic_target"),
    ("encoder", "encoder"),
    ("fixed_encoder", "fixed_encoder"),
    ("fixed_encoder_target", "fixed_encoder_target"),
    ("checkpoint_encoder", "checkpoint_encoder"),
)


def _pairs(agent, model):
    """(name, reference tensor, our tensor) for every weight and bias, layer by layer in definition order."""
    for ref_name, our_name in NETWORKS:
        ref_layers, our_layers = _linears(getattr(agent, ref_name)), _linears(getattr(model.policy, our_name))
        assert len(ref_layers) == len(our_layers), ref_name
        for i, (a, b) in enumerate(zip(ref_layers, our_layers)):
            yield f"{our_name}.{i}.weight", a.weight, b.weight
            yield f"{our_name}.{i}.bias", a.bias, b.bias


def _build(ref, **overrides):
    torch.manual_seed(0)
    agent = ref.Agent(
        OBS_DIM,
        ACT_DIM,
        1.0,
        hp=ref.Hyperparameters(
            batch_size=BATCH, target_update_rate=INTERVAL, buffer_size=1_000, discount=GAMMA, **SIZES
        ),
    )
    agent.device = torch.device("cpu")
    for name, _ in NETWORKS:
        getattr(agent, name).to("cpu").double()  # in place: the optimizers keep their parameters
    settings = dict(
        buffer_size=1_000,
        learning_starts=0,
        batch_size=BATCH,
        gamma=GAMMA,
        target_update_interval=INTERVAL,
        use_checkpoints=False,  # train(1) is then one update (the schedule is compared below)
        policy_kwargs=POLICY_KWARGS,
        seed=0,
        device="cpu",
    )
    model = TD7("MlpPolicy", BoxEnv(), **{**settings, **overrides})
    model.policy.double()
    with torch.no_grad():
        for _, a, b in _pairs(agent, model):
            b.copy_(a)
    # STORED transitions of priority 1 in both buffers (the batches below are fed directly)
    rng = np.random.default_rng(1)
    for _ in range(STORED):
        model.replay_buffer.add(
            rng.normal(size=(1, OBS_DIM)),
            rng.normal(size=(1, OBS_DIM)),
            rng.uniform(-1, 1, (1, ACT_DIM)),
            np.zeros(1),
            np.zeros(1),
            np.zeros(1),
        )
    agent.replay_buffer.size = agent.replay_buffer.ptr = STORED
    agent.replay_buffer.priority = torch.zeros(1_000, dtype=torch.float64)  # float64 priorities, as ours
    agent.replay_buffer.priority[:STORED] = 1.0
    return agent, model


def _batches(k: int):
    rng = np.random.default_rng(42)
    for _ in range(k):
        yield dict(
            obs=rng.normal(size=(BATCH, OBS_DIM)) * 2,
            actions=rng.uniform(-1, 1, size=(BATCH, ACT_DIM)),
            next_obs=rng.normal(size=(BATCH, OBS_DIM)) * 2,
            rewards=rng.normal(size=BATCH) * 3 + 1,
            terminated=(rng.random(BATCH) < 0.2).astype(np.float64),
            rows=rng.choice(STORED, size=BATCH, replace=False),
        )


def _run(ref, k: int = K, fused_steps: bool = True, **overrides) -> tuple[float, dict]:
    """K updates of both from the same start (ours with `rlkit_td3.td7.fused`'s steps or autograd's); the largest
    relative difference over every tensor and bound."""
    agent, model = _build(ref, **overrides)
    model.use_fused_update = fused_steps
    t = torch.as_tensor
    for step, b in enumerate(_batches(k)):
        ref_batch = (
            t(b["obs"]),
            t(b["actions"]),
            t(b["next_obs"]),
            t(b["rewards"])[:, None],
            1.0 - t(b["terminated"])[:, None],
        )
        agent.replay_buffer.sample = lambda batch=ref_batch, rows=b["rows"]: (
            setattr(agent.replay_buffer, "ind", rows) or batch
        )
        ours = PrioritizedReplayBufferSamples(
            t(b["obs"]),
            t(b["actions"]),
            t(b["next_obs"]),
            t(b["rewards"]),
            t(b["terminated"]),
            torch.zeros(BATCH, dtype=torch.float64),
            torch.full((BATCH,), GAMMA, dtype=torch.float64),
            None,
            b["rows"],
        )
        model.replay_buffer.sample = lambda batch_size, env=None, batch=ours: batch
        assert (fused.eligible(model, ours) is not None) == fused_steps  # the path under test is the one taken
        torch.manual_seed(1000 + step)  # the reference's smoothing noise: torch's global generator
        model._smoothing_rng.manual_seed(1000 + step)
        agent.train()
        model.train(1)
    diffs = {}
    with torch.no_grad():
        for name, a, b in _pairs(agent, model):
            diffs[name] = float((a - b).abs().max() / a.abs().max().clamp(min=1e-300))
    bounds = model._value_bounds
    for name, ref_value, our_value in (
        ("min", agent.min, bounds.low),
        ("max", agent.max, bounds.high),
        ("min_target", agent.min_target, bounds.low_target),
        ("max_target", agent.max_target, bounds.high_target),
    ):
        diffs[f"value_bounds.{name}"] = abs(ref_value - our_value) / max(abs(ref_value), 1e-300)
    ref_priorities = agent.replay_buffer.priority[:STORED].numpy()
    ours_priorities = model.replay_buffer.tree.leaves[:STORED]
    diffs["priorities"] = float(np.abs(ref_priorities - ours_priorities).max() / ref_priorities.max())
    diffs["max_priority"] = abs(agent.replay_buffer.max_priority / model.replay_buffer.max_priority - 1.0)
    assert model._n_updates == agent.training_steps == k
    return max(diffs.values()), diffs


@pytest.mark.parametrize("fused_steps", [True, False], ids=["fused_steps", "autograd"])
@pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad")
def test_td7_update_equals_the_authors_in_float64(fused_steps):
    ref = _reference()
    worst, diffs = _run(ref, fused_steps=fused_steps)
    assert worst <= TOLERANCE, sorted(diffs.items(), key=lambda kv: -kv[1])[:5]
    # the run covered what it claims: two hard copies (the targets moved), clipping bounds set
    _, model = _build(ref)
    assert K // INTERVAL == 2 and K % 2 == 1


@pytest.mark.parametrize(
    "control",
    [dict(policy_delay=3), dict(tau=0.005, target_update_interval=1)],
    ids=["wrong_actor_delay", "polyak_instead_of_hard_copies"],
)
@pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad")
def test_the_comparison_flags_a_wrong_delay_or_soft_targets(control):
    ref = _reference()
    worst, _ = _run(ref, **control)  # through the default (fused) steps
    assert worst > 1e-6


class _Counter:
    """Stands in for the update: counts the gradient steps asked for."""

    def __init__(self):
        self.steps = 0


def test_checkpoint_schedule_is_the_authors():
    ref = _reference()
    rng = np.random.default_rng(3)
    episodes = [(int(rng.integers(5, 40)), float(rng.normal() * 10 + i * 0.3)) for i in range(120)]
    agent = ref.Agent(
        OBS_DIM,
        ACT_DIM,
        1.0,
        hp=ref.Hyperparameters(steps_before_checkpointing=600, max_eps_when_checkpointing=4, **SIZES),
    )
    ref_log = []

    def ref_train():
        agent.training_steps += 1

    agent.train = ref_train
    checkpoints = []
    agent.checkpoint_actor.load_state_dict = lambda state: checkpoints.append(agent.training_steps)
    agent.checkpoint_encoder.load_state_dict = lambda state: None
    for length, ret in episodes:
        agent.maybe_train_and_checkpoint(length, ret)
        ref_log.append(agent.training_steps)

    model = TD7(
        "MlpPolicy",
        BoxEnv(),
        buffer_size=100,
        learning_starts=0,
        steps_before_checkpointing=600,
        max_eps_when_checkpointing=4,
        policy_kwargs=POLICY_KWARGS,
        seed=0,
    )
    our_log, our_checkpoints = [], []
    model._last_episode_return = lambda: current[1]
    model.policy.checkpoint_actor.load_state_dict = lambda state: our_checkpoints.append(model._n_updates)
    model.policy.checkpoint_encoder.load_state_dict = lambda state: None

    def count(gradient_steps, batch_size=None):
        model._n_updates += gradient_steps

    from rlkit_td3.off_policy import OffPolicyAlgorithm

    original = OffPolicyAlgorithm.train
    OffPolicyAlgorithm.train = lambda self, gradient_steps, batch_size=None: count(gradient_steps)
    try:
        for current in episodes:
            model._episode_num += 1
            model.train(current[0])
            our_log.append(model._n_updates)
    finally:
        OffPolicyAlgorithm.train = original
    assert our_log == ref_log
    assert our_checkpoints == checkpoints
    assert agent.max_eps_before_update == model._checkpoints.episodes_before_update == 4
    assert agent.best_min_return == model._checkpoints.best_min_return
