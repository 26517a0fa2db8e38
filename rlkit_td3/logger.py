"""A key-value logger: ``record`` values, ``dump`` them as one row to every writer.

Writers (format names as in Stable-Baselines3): ``"stdout"`` (an aligned table), ``"log"`` (the same
table in ``log.txt``), ``"csv"`` (``progress.csv``), ``"json"`` (``progress.json``, one JSON object per
line) and ``"tensorboard"`` (event files through ``torch.utils.tensorboard``; needs the ``tensorboard``
extra). File writers need a folder: nothing is written to disk, and no directory is created, unless
one is given.

Standard keys written by the algorithms: ``rollout/ep_rew_mean``, ``rollout/ep_len_mean``,
``time/episodes``, ``time/fps``, ``time/time_elapsed``, ``time/total_timesteps``, ``train/actor_loss``,
``train/critic_loss``, ``train/n_updates``, ``train/learning_rate``; ``EvalCallback`` adds
``eval/mean_reward`` and ``eval/mean_ep_length``.

Besides numbers and strings, `Logger.record()` takes the value types of Stable-Baselines3:
`Image`, `Figure`, `Video` and `HParam`. Only the TensorBoard writer shows them;
the other writers raise `FormatUnsupportedError` unless the key excludes them (``exclude=("stdout",
"log", "json", "csv")``), as in SB3.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from numbers import Number
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from rlkit_td3.serialization import atomic_write

if TYPE_CHECKING:
    import matplotlib.figure
    import torch

FORMATS = ("stdout", "log", "csv", "json", "tensorboard")
"""The writer names `configure()` accepts."""


def _to_python(value: Any) -> Any:
    """numpy / torch scalars → Python numbers, so every writer sees plain values."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        return value.item()
    return value


# --------------------------------------------------------------------------- value types
# Names and constructor arguments follow stable_baselines3.common.logger (SB3 2.9): Video(frames, fps),
# Figure(figure, close), Image(image, dataformats), HParam(hparam_dict, metric_dict).


class Video:
    """A video for `Logger.record()`, shown by TensorBoard as an animated GIF in its images tab.

    The frames are encoded with Pillow (a matplotlib dependency), so unlike Stable-Baselines3 no ``moviepy``
    is needed. Several videos in one value are tiled into a grid, as ``SummaryWriter.add_video`` does.

    Args:
        frames: shape ``(N, T, C, H, W)`` (videos, frames, channels 1, 3 or 4, height, width): ``uint8``
            in [0, 255] or floats in [0, 1]; a torch tensor or a numpy array.
        fps: frames per second (> 0).

    Raises:
        ValueError: ``frames`` is not 5-dimensional with 1, 3 or 4 channels, or ``fps`` is not positive.
    """

    def __init__(self, frames: torch.Tensor | np.ndarray, fps: float) -> None:
        shape = tuple(getattr(frames, "shape", ()))
        if len(shape) != 5 or shape[2] not in (1, 3, 4) or min(shape) < 1:
            raise ValueError(
                f"Video frames must have shape (N, T, C, H, W) with C in (1, 3, 4) and no empty axis, got shape {shape}"
            )
        if isinstance(fps, bool) or not isinstance(fps, Number) or not fps > 0:
            raise ValueError(f"Video fps must be a positive number, got {fps!r}")
        self.frames = frames
        self.fps = fps


class Figure:
    """A matplotlib figure for `Logger.record()`, rendered by TensorBoard's ``add_figure``.

    Args:
        figure: the figure.
        close: close the figure (``matplotlib.pyplot.close``) once it is written.

    Raises:
        TypeError: ``figure`` is not a matplotlib figure.
    """

    def __init__(self, figure: matplotlib.figure.Figure, close: bool) -> None:
        if not hasattr(figure, "canvas"):
            raise TypeError(f"Figure figure must be a matplotlib Figure, got {figure!r}")
        self.figure = figure
        self.close = close


_IMAGE_AXES = "NCHW"


class Image:
    """An image for `Logger.record()`, written with TensorBoard's ``add_image``.

    Args:
        image: a torch tensor or numpy array: ``uint8`` in [0, 255] or floats in [0, 1].
        dataformats: the meaning of ``image``'s axes, one letter per axis among ``N``, ``C``, ``H``, ``W``:
            ``"HWC"`` for a gymnasium ``render()`` frame, ``"CHW"`` (torch's default), ``"HW"``, ``"NCHW"``...

    Raises:
        ValueError: ``dataformats`` has a letter outside ``NCHW``, a repeated letter, or not one letter per
            axis of ``image``.
    """

    def __init__(self, image: torch.Tensor | np.ndarray | str, dataformats: str) -> None:
        if (
            not isinstance(dataformats, str)
            or not dataformats
            or set(dataformats) - set(_IMAGE_AXES)
            or len(set(dataformats)) != len(dataformats)
        ):
            raise ValueError(
                f"Image dataformats must be distinct letters among N, C, H, W (e.g. 'HWC'), got {dataformats!r}"
            )
        ndim = len(getattr(image, "shape", ()))
        if not isinstance(image, str) and ndim != len(dataformats):
            raise ValueError(
                f"Image dataformats={dataformats!r} names {len(dataformats)} axes but the image has {ndim}"
            )
        self.image = image
        self.dataformats = dataformats


class HParam:
    """Hyperparameters and the metrics to compare them on, for TensorBoard's HPARAMS tab.

    Args:
        hparam_dict: name → value: a bool, int, float or str; ``None`` entries are left out and any other
            value (a list, a schedule object...) is shown as its ``str()``.
        metric_dict: the metrics' tags → an initial value; TensorBoard shows each tag's logged scalars
            (e.g. ``"rollout/ep_rew_mean"``). Must not be empty: the HPARAMS tab needs a metric.

    Raises:
        ValueError: ``metric_dict`` is empty, or one of its values is not a number.
    """

    def __init__(self, hparam_dict: Mapping[str, bool | str | float | None], metric_dict: Mapping[str, float]) -> None:
        if not metric_dict:
            raise ValueError(
                "HParam metric_dict must not be empty: TensorBoard's HPARAMS tab needs at least one metric"
            )
        for key, val in metric_dict.items():
            if isinstance(_to_python(val), bool) or not isinstance(_to_python(val), (int, float)):
                raise ValueError(f"HParam metric_dict[{key!r}] must be a number, got {val!r}")
        self.hparam_dict = hparam_dict
        self.metric_dict = metric_dict


def _hparam_value(value: Any) -> bool | int | float | str | None:
    """What TensorBoard's HPARAMS tab can show: numbers, strings, bools; anything else as its ``str()``."""
    value = _to_python(value)
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


_VALUE_TYPES: dict[type, str] = {Video: "video", Figure: "figure", Image: "image", HParam: "hparam"}


class FormatUnsupportedError(NotImplementedError):
    """A writer was given a value it cannot show (e.g. an `Image` for ``"csv"``).

    Args:
        unsupported_formats: the format names, e.g. ``["stdout", "log"]``.
        value_description: what the value is (``"image"``, ``"video"``...).
        key: the recorded key, named in the message when given.
    """

    def __init__(self, unsupported_formats: Sequence[str], value_description: str, key: str | None = None) -> None:
        names = ", ".join(unsupported_formats)
        excluded = ", ".join(repr(name) for name in unsupported_formats)
        what = f"key {key!r} ({value_description})" if key is not None else f"the {value_description} value"
        super().__init__(
            f"format(s) {names} cannot show {what}: record it with exclude=({excluded},) so that only "
            "TensorBoard gets it"
        )
        self.unsupported_formats = tuple(unsupported_formats)
        self.value_description = value_description
        self.key = key


class KVWriter:
    """A destination for logged rows. Subclasses implement `write()` (and `close()` if they hold files)."""

    name = ""
    """The format name, used by ``Logger.record(..., exclude=...)``."""

    supported_value_types: tuple[type, ...] = ()
    """Which of `Image`, `Figure`, `Video`, `HParam` the writer shows; the others
    make `check_supported()` raise."""

    def write(self, values: dict[str, Any], step: int) -> None:
        """Write one row of ``key -> value`` at ``step`` (the total timesteps)."""
        raise NotImplementedError

    def check_supported(self, values: dict[str, Any]) -> None:
        """Raise `FormatUnsupportedError` if ``values`` holds a value type this writer cannot show.

        `Logger.dump()` calls it for every writer before any writes, so a row is written everywhere
        or nowhere.
        """
        for key, val in values.items():
            for kind, description in _VALUE_TYPES.items():
                if isinstance(val, kind) and not isinstance(val, self.supported_value_types):
                    raise FormatUnsupportedError([self.name], description, key)

    def close(self) -> None:
        """Release files; the default has none."""


class HumanOutputFormat(KVWriter):
    """Prints each dump as an aligned two-column table, keys grouped by their ``prefix/`` like SB3's stdout log.

    Args:
        stream: where to write; ``None`` means the current ``sys.stdout`` at each write. A file path here
            means ``path=`` (SB3's ``HumanOutputFormat(filename_or_file)``).
        path: write to this file instead (the ``"log"`` format, ``log.txt``).
    """

    name = "stdout"

    def __init__(
        self, stream: TextIO | str | os.PathLike[str] | None = None, path: str | os.PathLike[str] | None = None
    ) -> None:
        if isinstance(stream, (str, os.PathLike)):
            if path is not None:
                raise ValueError(f"HumanOutputFormat got two files: stream={stream!r} and path={path!r}")
            stream, path = None, stream
        self.stream = stream
        self._file: TextIO | None = None
        if path is not None:
            self.name = "log"
            self._file = open(path, "a")  # noqa: SIM115 - closed in close()

    def write(self, values: dict[str, Any], step: int) -> None:
        self.check_supported(values)
        stream = self._file or self.stream or sys.stdout
        rows: list[tuple[str, str]] = []
        last_group = None
        for key in sorted(values):
            val = values[key]
            if isinstance(val, float):
                text = f"{val:<8.3g}"
            elif isinstance(val, (str, Number)):
                text = str(val)
            else:
                continue  # images, histograms...: not for a text table
            group, _, leaf = key.rpartition("/")
            if group and group != last_group:
                rows.append((f"{group}/", ""))
                last_group = group
            rows.append((f"    {leaf}" if group else key, text[:40]))
        if not rows:
            return
        width_k = max(len(k) for k, _ in rows)
        width_v = max(len(v) for _, v in rows)
        line = "-" * (width_k + width_v + 7)
        lines = [line, *(f"| {k:<{width_k}} | {v:<{width_v}} |" for k, v in rows), line]
        stream.write("\n".join(lines) + "\n")
        stream.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class CSVOutputFormat(KVWriter):
    """Appends rows to ``progress.csv``. A new key adds a column: the file is then rewritten atomically."""

    name = "csv"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.keys: list[str] = []
        self.rows: list[dict[str, Any]] = []

    def write(self, values: dict[str, Any], step: int) -> None:
        self.check_supported(values)
        values = {k: v for k, v in values.items() if isinstance(v, (str, Number))}
        new_keys = sorted(k for k in values if k not in self.keys)
        self.rows.append(values)
        if new_keys or not self.path.exists():
            self.keys += new_keys
            text = io.StringIO(newline="")
            writer = csv.DictWriter(text, fieldnames=self.keys)
            writer.writeheader()
            writer.writerows(self.rows)
            with atomic_write(self.path) as out:
                out.write(text.getvalue().encode())
        else:
            with open(self.path, "a", newline="") as fh:
                csv.DictWriter(fh, fieldnames=self.keys).writerow(values)


class JSONOutputFormat(KVWriter):
    """Appends one JSON object per dump to ``progress.json`` (JSON lines)."""

    name = "json"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file: TextIO | None = open(self.path, "a")  # noqa: SIM115 - closed in close()

    def write(self, values: dict[str, Any], step: int) -> None:
        self.check_supported(values)
        row = {}
        for key, val in values.items():
            if isinstance(val, float) and not math.isfinite(val):
                row[key] = None
            elif isinstance(val, (str, Number)):
                row[key] = val
        assert self._file is not None, "writer used after close()"
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _video_grid(frames: Any) -> np.ndarray:
    """``(N, T, C, H, W)`` uint8 or [0, 1] floats → ``(T, rows*H, cols*W, C)`` uint8.

    The N videos are tiled as ``SummaryWriter.add_video`` tiles them: N padded with black videos to a power
    of two, ``2 ** floor(log2(N) / 2)`` rows.
    """
    if hasattr(frames, "detach"):
        frames = frames.detach().cpu().numpy()
    frames = np.asarray(frames)
    if frames.dtype != np.uint8:
        frames = (np.clip(frames.astype(np.float32), 0.0, 1.0) * 255.0).astype(np.uint8)
    n, t, c, h, w = frames.shape
    padded = 1 << (n - 1).bit_length()
    if padded > n:
        frames = np.concatenate([frames, np.zeros((padded - n, t, c, h, w), np.uint8)])
    rows = 1 << ((padded.bit_length() - 1) // 2)
    cols = padded // rows
    grid = frames.reshape(rows, cols, t, c, h, w).transpose(2, 0, 4, 1, 5, 3)
    return grid.reshape(t, rows * h, cols * w, c)


def _gif_summary(tag: str, frames: Any, fps: float) -> Any:
    """A TensorBoard image summary holding the frames as an animated GIF (what ``add_video`` writes)."""
    from PIL import Image as PILImage
    from tensorboard.compat.proto.summary_pb2 import Summary

    grid = _video_grid(frames)
    t, h, w, c = grid.shape
    pictures = [PILImage.fromarray(frame[..., 0] if c == 1 else frame) for frame in grid]  # L, RGB or RGBA
    buf = io.BytesIO()
    pictures[0].save(buf, format="GIF", save_all=True, append_images=pictures[1:], duration=1000.0 / float(fps), loop=0)
    image = Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=buf.getvalue())
    return Summary(value=[Summary.Value(tag=tag, image=image)])


class TensorBoardOutputFormat(KVWriter):
    """Writes a row to TensorBoard event files in ``folder`` (``torch.utils.tensorboard.SummaryWriter``).

    Numbers become scalars, strings text, arrays and tensors histograms, and the value types
    `Image`, `Figure`, `Video` and `HParam` images, figures, GIF videos and the
    HPARAMS tab. To log anything else, use the ``SummaryWriter`` itself: ``self.writer``, found among
    ``logger.output_formats``.

    Args:
        folder: the run folder of the event files.

    Raises:
        ImportError: the ``tensorboard`` package is missing (the ``tensorboard`` extra).
    """

    name = "tensorboard"
    supported_value_types = (Video, Figure, Image, HParam)

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as exc:  # torch raises this when the tensorboard package is absent
            raise ImportError(
                "TensorBoard logging needs the tensorboard package: install the 'tensorboard' extra "
                "(pip install -e '.[tensorboard]' in the rlkit_td3 clone)"
            ) from exc
        self.writer = SummaryWriter(log_dir=str(folder))

    def write(self, values: dict[str, Any], step: int) -> None:
        import torch  # already loaded by torch.utils.tensorboard

        for key, val in values.items():
            if isinstance(val, Number) and not isinstance(val, bool):
                self.writer.add_scalar(key, val, step)
            elif isinstance(val, str):
                self.writer.add_text(key, val, step)
            elif isinstance(val, (np.ndarray, torch.Tensor)):
                self.writer.add_histogram(key, val, step)
            elif isinstance(val, Image):
                self.writer.add_image(key, val.image, step, dataformats=val.dataformats)
            elif isinstance(val, Figure):
                self.writer.add_figure(key, val.figure, step, close=val.close)
            elif isinstance(val, Video):
                self.writer.file_writer.add_summary(_gif_summary(key, val.frames, val.fps), step)
            elif isinstance(val, HParam):
                self._write_hparams(val, step)
        self.writer.flush()

    def _write_hparams(self, value: HParam, step: int) -> None:
        # As SB3 does: the three hparams summaries go into this run's own event file (SummaryWriter.add_hparams
        # would open a sub-folder run instead).
        from torch.utils.tensorboard.summary import hparams

        hparam_dict = {k: _hparam_value(v) for k, v in value.hparam_dict.items()}
        metric_dict = {k: float(_to_python(v)) for k, v in value.metric_dict.items()}
        for summary in hparams(hparam_dict, metric_dict):
            self.writer.file_writer.add_summary(summary, step)

    def close(self) -> None:
        self.writer.close()


class Logger:
    """Collects key-value pairs and writes them to its writers on `dump()`.

    Args:
        folder: the folder the file writers write into (``None`` when there are none).
        output_formats: the destinations (SB3's name; kept in `output_formats`).
        writers: the same, under this library's earlier name; give one of the two.
    """

    def __init__(
        self,
        folder: str | os.PathLike[str] | None,
        output_formats: Sequence[KVWriter] | None = None,
        *,
        writers: Sequence[KVWriter] | None = None,
    ) -> None:
        if output_formats is not None and writers is not None:
            raise TypeError("Logger takes output_formats or writers (the same list), not both")
        self.folder = None if folder is None else Path(folder)
        self.output_formats: list[KVWriter] = list(output_formats if output_formats is not None else writers or ())
        self.name_to_value: dict[str, Any] = {}
        self.name_to_excluded: dict[str, tuple[str, ...]] = {}
        self._sums: dict[str, float] = defaultdict(float)
        self._counts: dict[str, int] = defaultdict(int)

    @property
    def writers(self) -> list[KVWriter]:
        """The writers: the same list as `output_formats`."""
        return self.output_formats

    @writers.setter
    def writers(self, value: Sequence[KVWriter]) -> None:
        self.output_formats = list(value)

    def record(self, key: str, value: Any, exclude: str | Sequence[str] | None = None) -> None:
        """Set ``key`` for the next dump (the last value wins).

        Args:
            key: the name, ``"group/name"`` by convention.
            value: a number, a string (numpy and torch scalars are converted), an array or tensor (a
                TensorBoard histogram) or one of `Image`, `Figure`, `Video`, `HParam`.
            exclude: format names (e.g. ``"tensorboard"``) that skip this key; as in SB3, ``"stdout"`` and
                ``"log"`` each exclude both text tables.
        """
        self.name_to_value[key] = _to_python(value)
        self.name_to_excluded[key] = (exclude,) if isinstance(exclude, str) else tuple(exclude or ())

    def record_mean(self, key: str, value: float, exclude: str | Sequence[str] | None = None) -> None:
        """Add ``value`` to a running mean of ``key``, reported at the next dump."""
        self._sums[key] += float(_to_python(value))
        self._counts[key] += 1
        self.name_to_excluded[key] = (exclude,) if isinstance(exclude, str) else tuple(exclude or ())

    def dump(self, step: int = 0) -> None:
        """Write one row with everything recorded since the last dump, then clear it.

        Args:
            step: the x-axis value of the row (total timesteps).
        """
        values = dict(self.name_to_value)
        values.update({k: self._sums[k] / self._counts[k] for k in self._sums})
        rows = []
        for writer in self.output_formats:
            # SB3's text table skips a key excluded from either "stdout" or "log".
            names = {"stdout", "log"} if writer.name in ("stdout", "log") else {writer.name}
            row = {k: v for k, v in values.items() if not names.intersection(self.name_to_excluded.get(k, ()))}
            writer.check_supported(row)  # every writer before the first write: the row goes everywhere or nowhere
            rows.append(row)
        for writer, row in zip(self.output_formats, rows):
            writer.write(row, step)
        self.name_to_value.clear()
        self.name_to_excluded.clear()
        self._sums.clear()
        self._counts.clear()

    def get_dir(self) -> Path | None:
        """The folder of the file writers, or ``None``."""
        return self.folder

    def close(self) -> None:
        """Close every writer's files."""
        for writer in self.output_formats:
            writer.close()


def configure(folder: str | os.PathLike[str] | None = None, format_strings: Sequence[str] | None = None) -> Logger:
    """Build a logger, e.g. ``configure("logs/run1", ["stdout", "csv", "tensorboard"])``.

    Args:
        folder: where file writers write; created if missing. Never a temporary directory: without a
            folder only ``"stdout"`` is allowed.
        format_strings: writers among ``"stdout"``, ``"log"``, ``"csv"``, ``"json"``, ``"tensorboard"``;
            ``None`` means ``["stdout"]``, ``[]`` a logger that writes nothing.

    Raises:
        ValueError: an unknown format, or a file format without ``folder``.
        ImportError: ``"tensorboard"`` without the tensorboard package.
    """
    formats = list(format_strings) if format_strings is not None else ["stdout"]
    for fmt in formats:
        if fmt not in FORMATS:
            raise ValueError(f"format_strings has unknown format {fmt!r}; allowed: {', '.join(FORMATS)}")
        if fmt != "stdout" and folder is None:
            raise ValueError(f"format {fmt!r} writes files: pass folder=, got folder=None")
    writers: list[KVWriter] = []
    path = None if folder is None else Path(folder)
    if path is not None and any(fmt != "stdout" for fmt in formats):
        path.mkdir(parents=True, exist_ok=True)
    for fmt in formats:
        if fmt == "stdout":
            writers.append(HumanOutputFormat())
        elif fmt == "log":
            writers.append(HumanOutputFormat(path=path / "log.txt"))
        elif fmt == "csv":
            writers.append(CSVOutputFormat(path / "progress.csv"))
        elif fmt == "json":
            writers.append(JSONOutputFormat(path / "progress.json"))
        else:
            writers.append(TensorBoardOutputFormat(path))
    return Logger(path, writers)


__all__ = [
    "FORMATS",
    "CSVOutputFormat",
    "Figure",
    "FormatUnsupportedError",
    "HParam",
    "HumanOutputFormat",
    "Image",
    "JSONOutputFormat",
    "KVWriter",
    "Logger",
    "TensorBoardOutputFormat",
    "Video",
    "configure",
]
