"""Record a video of a policy: ``record_video(model, "HopperBulletEnv-v0", "hopper.mp4")``.

Frames come from the env's ``render_mode="rgb_array"`` (headless for the Bullet, Box2D and MuJoCo envs) and are
written with imageio: an MP4 (H.264) through the ffmpeg binary that the ``imageio-ffmpeg`` wheel carries, or a
GIF through Pillow when ffmpeg is missing. Install both with the ``video`` extra (``pip install -e ".[video]"``
in the clone).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

import gymnasium
import numpy as np

from rlkit_td3.fileio.serialization import atomic_path

_SUFFIXES = (".mp4", ".gif")
_GIF_MAX_FPS = 20


class _Predictor(Protocol):
    def predict(self, observation: Any, deterministic: bool = ...) -> tuple[np.ndarray, Any]: ...


def ffmpeg_available() -> bool:
    """Whether imageio can write MP4 files here (``imageio-ffmpeg`` is installed and has its ffmpeg binary)."""
    try:
        import imageio_ffmpeg

        imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError):
        return False
    return True


def record_video(
    model: _Predictor,
    env_id: str,
    path: str | os.PathLike[str],
    n_steps: int = 1000,
    seed: int | None = 0,
    fps: int | None = None,
) -> Path:
    """Run the deterministic policy for ``n_steps`` env steps and write the rendered frames to a video file.

    The env is ``gymnasium.make(env_id, render_mode="rgb_array")``; it is reset with ``seed`` and again whenever
    an episode ends, so the video may hold several episodes. The first frame shows the reset state, then one
    frame per step: ``n_steps + 1`` frames, plus one reset frame per episode that ends before the last step.
    A GIF keeps every k-th of them, with k the smallest that gives at most 20 frames per second (every 3rd at the
    Bullet envs' 60 fps), because GIF frame delays come in 10 ms steps. The file is written atomically.

    Args:
        model: anything with ``predict(obs, deterministic=True)``, such as a TD3 or DDPG model.
        env_id: a registered gymnasium id whose env supports ``render_mode="rgb_array"``.
        path: where to write; must end in ``.mp4`` or ``.gif``. If it ends in ``.mp4`` but ffmpeg is missing,
            a GIF is written beside it instead (same name, ``.gif``).
        n_steps: number of env steps to record (1000 is one full episode of the Bullet locomotion envs).
        seed: seed of the first reset (``None``: unseeded).
        fps: frames per second of the video; by default the env's ``metadata["render_fps"]`` (60 for Bullet).

    Returns:
        The path of the file written (``.gif`` when the MP4 fallback was used).

    Raises:
        ValueError: ``n_steps`` or ``fps`` is not a positive integer, or ``path`` has another suffix.
    """
    if isinstance(n_steps, bool) or not isinstance(n_steps, int | np.integer) or n_steps < 1:
        raise ValueError(f"n_steps must be a positive integer, got {n_steps!r}")
    if fps is not None and (isinstance(fps, bool) or not isinstance(fps, int | np.integer) or fps < 1):
        raise ValueError(f"fps must be a positive integer or None, got {fps!r}")
    target = Path(path)
    if target.suffix.lower() not in _SUFFIXES:
        raise ValueError(f"path must end in one of {_SUFFIXES}, got {str(path)!r}")
    if target.suffix.lower() == ".mp4" and not ffmpeg_available():
        target = target.with_suffix(".gif")

    env = gymnasium.make(env_id, render_mode="rgb_array")
    frame_rate = int(fps or env.metadata.get("render_fps") or 30)
    _write_atomically(target, _rollout_frames(model, env, n_steps, seed), frame_rate)
    return target


def _rollout_frames(model: _Predictor, env: gymnasium.Env, n_steps: int, seed: int | None) -> Iterator[np.ndarray]:
    """Yield the rendered frames one at a time (a long video is never held in memory as MP4), then close env."""
    try:
        obs, _ = env.reset(seed=seed)
        yield env.render()
        for i in range(n_steps):
            action, _ = model.predict(obs, deterministic=True)
            obs, _, terminated, truncated, _ = env.step(action)
            yield env.render()
            if (terminated or truncated) and i < n_steps - 1:
                obs, _ = env.reset()
                yield env.render()
    finally:
        env.close()


def _write_atomically(target: Path, frames: Iterable[np.ndarray], fps: int) -> None:
    import imageio.v2 as imageio

    # imageio picks the format from the suffix, so the temporary file keeps it.
    with atomic_path(target, suffix=target.suffix) as tmp:
        if target.suffix.lower() == ".mp4":
            # 320x240 frames are multiples of ffmpeg's 16-pixel macro blocks; others are padded by imageio.
            with imageio.get_writer(tmp, format="FFMPEG", fps=fps, codec="libx264", quality=7) as writer:
                for frame in frames:
                    writer.append_data(frame)
        else:
            # A GIF frame delay is a whole number of 10 ms and players slow down delays under 20 ms, so keep
            # every k-th frame, k chosen for at most 20 frames per second (60 fps -> 20 fps, 50 ms per frame).
            keep_every = math.ceil(fps / _GIF_MAX_FPS)
            with imageio.get_writer(tmp, format="GIF", mode="I", duration=1000.0 * keep_every / fps, loop=0) as writer:
                for i, frame in enumerate(frames):
                    if i % keep_every == 0:
                        writer.append_data(frame)
