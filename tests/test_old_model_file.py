"""A model file written before the package's restructuring (issue 34) still loads, predicts and resumes.

The file and the actions it must give come from tests/data/td3_pendulum_v1_fixture.py, run at main fd412dc.
"""

import json
from pathlib import Path

import numpy as np

from rlkit_td3 import TD3

DATA = Path(__file__).parent / "data"
RECORD = json.loads((DATA / "td3_pendulum_v1.json").read_text())
OBS = np.array(RECORD["obs"], dtype=np.float32)


def test_old_file_loads_and_predicts_as_when_saved():
    model = TD3.load(DATA / "td3_pendulum_v1.zip")
    actions, _ = model.predict(OBS, deterministic=True)
    np.testing.assert_allclose(actions, RECORD["actions"], rtol=0, atol=1e-6)
    assert model.num_timesteps == 300
    assert model.policy.net_arch == [8, 8]


def test_old_file_resumes_training_with_its_buffer():
    model = TD3.load(DATA / "td3_pendulum_v1.zip", env="Pendulum-v1")
    assert model.replay_buffer.size() == 300
    model.learn(100, reset_num_timesteps=False)
    assert model.num_timesteps == 400
    actions, _ = model.predict(OBS, deterministic=True)
    np.testing.assert_allclose(actions, RECORD["resumed_actions"], rtol=0, atol=1e-5)
