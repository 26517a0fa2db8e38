"""record_video writes a playable MP4 (or a GIF without ffmpeg) of the deterministic policy."""

from __future__ import annotations

import gymnasium
import imageio.v2 as imageio
import numpy as np
import pytest

import rlkit_td3.video
from rlkit_td3 import TD3
from rlkit_td3.video import ffmpeg_available, record_video

ENV_ID = "HalfCheetahBulletEnv-v0"  # never terminates: n_steps steps give exactly n_steps + 1 frames


@pytest.fixture(scope="module")
def model():
    return TD3("MlpPolicy", ENV_ID, policy_kwargs={"net_arch": [16]}, seed=0)


def _read_frames(path) -> np.ndarray:
    with imageio.get_reader(path) as reader:
        return np.stack([frame for frame in reader])  # not list(reader): its len() is inf for MP4


def test_mp4_is_readable(model, tmp_path):
    assert ffmpeg_available()  # the [video] extra carries the ffmpeg binary
    path = record_video(model, ENV_ID, tmp_path / "sub" / "cheetah.mp4", n_steps=24)
    assert path == tmp_path / "sub" / "cheetah.mp4"
    frames = _read_frames(path)
    assert frames.shape == (25, 240, 320, 3)
    assert frames[0].std() > 10, "a blank frame"
    assert not np.array_equal(frames[0], frames[-1]), "the robot moves"
    assert [p.name for p in path.parent.iterdir()] == ["cheetah.mp4"], "no temporary file left behind"


def test_gif_fallback_without_ffmpeg(model, tmp_path, monkeypatch):
    monkeypatch.setattr(rlkit_td3.video, "ffmpeg_available", lambda: False)
    path = record_video(model, ENV_ID, tmp_path / "cheetah.mp4", n_steps=8)
    assert path == tmp_path / "cheetah.gif" and not (tmp_path / "cheetah.mp4").exists()
    frames = _read_frames(path)
    # 9 frames at 60 fps; the GIF keeps frames 0, 3, 6 and shows each for 50 ms (20 fps, real time).
    assert frames.shape[0] == 3 and frames.shape[1:3] == (240, 320)
    assert imageio.get_reader(path).get_meta_data(index=0)["duration"] == 50


def test_policy_actions_drive_the_video(tmp_path):
    # Two policies that differ only in their weights give different videos from the same seed.
    a = TD3("MlpPolicy", ENV_ID, policy_kwargs={"net_arch": [16]}, seed=1)
    b = TD3("MlpPolicy", ENV_ID, policy_kwargs={"net_arch": [16]}, seed=2)
    fa = _read_frames(record_video(a, ENV_ID, tmp_path / "a.gif", n_steps=8))
    fb = _read_frames(record_video(b, ENV_ID, tmp_path / "b.gif", n_steps=8))
    assert np.array_equal(fa[0], fb[0]) and not np.array_equal(fa[-1], fb[-1])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_steps": 0}, "n_steps must be a positive integer, got 0"),
        ({"n_steps": 2.5}, "n_steps must be a positive integer"),
        ({"fps": 0}, "fps must be a positive integer or None, got 0"),
        ({"path": "video.avi"}, r"path must end in one of \('.mp4', '.gif'\), got 'video.avi'"),
    ],
)
def test_bad_arguments(model, kwargs, match):
    args = {"path": "video.mp4", "n_steps": 3} | kwargs
    with pytest.raises(ValueError, match=match):
        record_video(model, ENV_ID, **args)


def test_video_spans_episodes(tmp_path):
    # An untrained policy drops the pole within a few dozen steps: the video goes on through resets, one extra
    # frame per episode that ends before the last step.
    env_id, n_steps = "InvertedPendulumBulletEnv-v0", 60
    pendulum = TD3("MlpPolicy", env_id, policy_kwargs={"net_arch": [16]}, seed=0)
    env = gymnasium.make(env_id)
    obs, _ = env.reset(seed=0)
    ends = 0
    for i in range(n_steps):
        obs, _, terminated, truncated, _ = env.step(pendulum.predict(obs, deterministic=True)[0])
        if terminated or truncated:
            ends += i < n_steps - 1
            obs, _ = env.reset()
    assert ends >= 1
    frames = _read_frames(record_video(pendulum, env_id, tmp_path / "pendulum.mp4", n_steps=n_steps))
    assert len(frames) == n_steps + 1 + ends
