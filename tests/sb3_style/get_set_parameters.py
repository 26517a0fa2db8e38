"""Read a model's parameters, change them, and load them back (or into another model)."""

import tempfile

import numpy as np
import torch

from rlkit_td3 import TD3

model = TD3("MlpPolicy", "Pendulum-v1", policy_kwargs=dict(net_arch=[32]), seed=0)
params = model.get_parameters()  # copies of the state dicts
print(sorted(params))  # ['actor.optimizer', 'critic.optimizer', 'policy']

obs = np.zeros((1, 3), dtype=np.float32)
before = model.predict(obs)[0]

# Zero the actor's output layer: the deterministic action becomes tanh(0) = 0, the middle of [-2, 2].
policy = dict(params["policy"])
for key in policy:
    if key.startswith("actor.mu.2."):
        policy[key] = torch.zeros_like(policy[key])
model.set_parameters({"policy": policy}, exact_match=False)
assert np.allclose(model.predict(obs)[0], 0.0)

# Put everything back, the optimizers included.
model.set_parameters(params)
assert np.array_equal(model.predict(obs)[0], before)

# Copy the weights of a saved model into another one built with the same settings.
with tempfile.TemporaryDirectory() as folder:
    model.save(f"{folder}/td3_pendulum.zip")
    other = TD3("MlpPolicy", "Pendulum-v1", policy_kwargs=dict(net_arch=[32]), seed=1)
    other.set_parameters(f"{folder}/td3_pendulum.zip")
    assert np.array_equal(other.predict(obs)[0], before)
print("get_parameters / set_parameters round trip: OK")
