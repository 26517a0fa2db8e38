"""SB3's ONNX export recipe for TD3, with only the imports changed: wrap the actor, export it with
``torch.onnx.export``, run it with onnxruntime, rescale the [-1, 1] output to the env's bounds."""

import numpy as np
import onnxruntime as ort
import torch as th

from rlkit_td3 import TD3


class OnnxableTD3Policy(th.nn.Module):
    def __init__(self, actor: th.nn.Module):
        super().__init__()
        self.actor = actor

    def forward(self, observation: th.Tensor) -> th.Tensor:
        # The actor's output is in [-1, 1]: the caller rescales it to the action space's bounds.
        return self.actor(observation)


model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=50, policy_kwargs=dict(net_arch=[64, 64]), seed=0)
model.learn(100)

onnx_policy = OnnxableTD3Policy(model.policy.actor)
dummy_input = th.randn(1, *model.observation_space.shape)
th.onnx.export(onnx_policy, dummy_input, "td3_actor.onnx", opset_version=18, input_names=["input"])

observation = np.array([[0.6, -0.8, 1.5]], dtype=np.float32)
session = ort.InferenceSession("td3_actor.onnx")
scaled_action = session.run(None, {"input": observation})[0]
low, high = model.action_space.low, model.action_space.high
action = low + 0.5 * (scaled_action + 1.0) * (high - low)

expected, _ = model.predict(observation, deterministic=True)
print("onnxruntime:", action, "model.predict:", expected)
assert np.abs(scaled_action).max() <= 1.0
assert np.allclose(action, expected, atol=1e-5), (action, expected)
