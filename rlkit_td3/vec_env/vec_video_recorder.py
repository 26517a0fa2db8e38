"""``VecVideoRecorder``: record videos of a ``VecEnv`` while it runs (SB3's ``VecVideoRecorder``).

The frames are the envs' ``render()`` images, tiled into one frame when there are several envs; they are
written with `rlkit_td3.video`'s writer (MP4 through imageio-ffmpeg, or a GIF when ffmpeg is missing),
atomically. Install the writer with the ``video`` extra (``pip install -e ".[video]"`` in the clone).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from rlkit_td3.vec_env.base_vec_env import VecEnv, VecEnvObs, VecEnvStepReturn, VecEnvWrapper
from rlkit_td3.video import _write_atomically, ffmpeg_available


class VecVideoRecorder(VecEnvWrapper):
    """Records ``video_length`` steps each time ``record_video_trigger(step)`` is true.

    Steps count calls to ``step`` (each is ``num_envs`` env steps) from 0. A video starts with the frame of
    the step (or reset) that triggered it and is written once it has ``video_length`` more frames, or at
    `close()`. Files are named ``{name_prefix}-step-{start}-to-step-{start + video_length}.mp4`` in
    ``video_folder`` (``.gif`` when ffmpeg is missing).

    Args:
        venv: the vectorized env; its envs must have ``render_mode="rgb_array"``.
        video_folder: where to write the videos (created if needed).
        record_video_trigger: ``step -> bool``, e.g. ``lambda step: step % 10_000 == 0``.
        video_length: number of steps per video.
        name_prefix: start of the file names.

    Raises:
        ValueError: the envs do not render RGB arrays, or ``video_length`` is not a positive int.
    """

    def __init__(
        self,
        venv: VecEnv,
        video_folder: str | os.PathLike[str],
        record_video_trigger: Callable[[int], bool],
        video_length: int = 200,
        name_prefix: str = "rl-agent-video",
    ) -> None:
        super().__init__(venv)
        if self.render_mode != "rgb_array":
            raise ValueError(
                f"VecVideoRecorder needs envs made with render_mode='rgb_array', these have {self.render_mode!r}"
            )
        if isinstance(video_length, bool) or not isinstance(video_length, (int, np.integer)) or video_length < 1:
            raise ValueError(f"video_length must be a positive int, got {video_length!r}")
        if not callable(record_video_trigger):
            raise TypeError(f"record_video_trigger must be a function of the step, got {record_video_trigger!r}")
        self.env = venv
        self.record_video_trigger = record_video_trigger
        self.video_folder = os.path.abspath(video_folder)
        Path(self.video_folder).mkdir(parents=True, exist_ok=True)
        self.video_length = int(video_length)
        self.name_prefix = name_prefix
        self.frames_per_sec = int(venv.metadata.get("render_fps") or 30)
        self.step_id = 0
        self.recording = False
        self.recorded_frames: list[np.ndarray] = []
        self.video_path = ""
        self.video_paths: list[str] = []
        """The videos written so far."""

    def reset(self) -> VecEnvObs:
        obs = self.venv.reset()
        if self._video_enabled():
            self._start_video_recorder()
        return obs

    def _video_enabled(self) -> bool:
        return bool(self.record_video_trigger(self.step_id))

    def _start_video_recorder(self) -> None:
        suffix = ".mp4" if ffmpeg_available() else ".gif"
        name = f"{self.name_prefix}-step-{self.step_id}-to-step-{self.step_id + self.video_length}{suffix}"
        self.video_path = os.path.join(self.video_folder, name)
        self.recording = True
        self.recorded_frames = []
        self._capture_frame()

    def _capture_frame(self) -> None:
        frame = self.venv.render()
        if isinstance(frame, np.ndarray):
            self.recorded_frames.append(frame)
        else:
            warnings.warn(f"render() returned {type(frame).__name__}, not an image; recording stops", stacklevel=2)
            self._stop_recording()

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        self.step_id += 1
        if self.recording:
            self._capture_frame()
            if len(self.recorded_frames) > self.video_length:
                self._stop_recording()
        elif self._video_enabled():
            self._start_video_recorder()
        return obs, rewards, dones, infos

    def _stop_recording(self) -> None:
        if self.recorded_frames:
            _write_atomically(Path(self.video_path), iter(self.recorded_frames), self.frames_per_sec)
            self.video_paths.append(self.video_path)
        self.recorded_frames = []
        self.recording = False

    def close(self) -> None:
        if self.recording:
            self._stop_recording()
        super().close()


__all__ = ["VecVideoRecorder"]
