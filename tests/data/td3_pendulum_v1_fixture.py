"""How tests/data/td3_pendulum_v1.zip was made: a model file written by rlkit_td3 before the package's
restructuring (issue 34, main at fd412dc), kept so that files saved by earlier versions stay loadable.

Run from the project root: ``python tests/data/td3_pendulum_v1_fixture.py``. It rewrites the zip and
``td3_pendulum_v1.json``: the deterministic actions the saved model gave for ``OBS`` when it was saved, and those
it gave after being loaded from the file and trained for ``RESUME_STEPS`` more steps. tests/test_old_model_file.py
loads the zip, checks those actions and resumes training from it.
"""

import json
from pathlib import Path

import numpy as np

OBS = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, -1.0], [-0.5, 0.5, 4.0]], dtype=np.float32)
RESUME_STEPS = 100
HERE = Path(__file__).parent

if __name__ == "__main__":
    from rlkit_td3 import TD3

    model = TD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8, 8]}, buffer_size=500, seed=0)
    model.learn(300)
    model.save(HERE / "td3_pendulum_v1.zip", include_buffer=True)
    actions, _ = model.predict(OBS, deterministic=True)
    resumed = TD3.load(HERE / "td3_pendulum_v1.zip", env="Pendulum-v1")
    resumed.learn(RESUME_STEPS, reset_num_timesteps=False)
    resumed_actions, _ = resumed.predict(OBS, deterministic=True)
    record = {"obs": OBS.tolist(), "actions": actions.tolist(), "resumed_actions": resumed_actions.tolist()}
    (HERE / "td3_pendulum_v1.json").write_text(json.dumps(record) + "\n")
