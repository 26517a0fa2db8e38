"""SB3's TorchScript recipe for TD3, with only the imports changed: trace the wrapped actor, save it, load it
back with ``torch.jit.load`` and compare with ``model.predict``."""

import numpy as np
import torch as th

from rlkit_td3 import TD3


class ScriptableTD3Policy(th.nn.Module):
    def __init__(self, actor: th.nn.Module):
        super().__init__()
        self.actor = actor

    def forward(self, observation: th.Tensor) -> th.Tensor:
        return self.actor(observation)  # in [-1, 1]


model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=50, policy_kwargs=dict(net_arch=[64, 64]), seed=0)
model.learn(100)

dummy_input = th.randn(1, *model.observation_space.shape)
traced = th.jit.trace(ScriptableTD3Policy(model.policy.actor).eval(), dummy_input)
th.jit.save(traced, "td3_actor_traced.pt")

loaded = th.jit.load("td3_actor_traced.pt")
observations = np.random.default_rng(0).uniform(-1.0, 1.0, size=(16, 3)).astype(np.float32)
with th.no_grad():
    scaled = loaded(th.as_tensor(observations)).numpy()
actions = model.policy.unscale_action(scaled)

expected, _ = model.predict(observations, deterministic=True)
print("max |torchscript - predict|:", np.abs(actions - expected).max())
assert np.allclose(actions, expected, atol=1e-5)
