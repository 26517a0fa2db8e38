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

from rlkit_td3.fileio.serialization import atomic_write

if TYPE_CHECKING:
    import matplotlib.figure
    import torch

FORMATS = ("stdout", "log", "csv", "json", "tensorboard")
"""The writer names `configure()` accepts."""

# Message levels of `Logger.log()` (values as in stable_baselines3.common.logger)
DEBUG = 10
INFO = 20
WARN = 30
ERROR = 40
DISABLED = 50
"""At this level `Logger.dump()` and `Logger.log()` write nothing."""


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


def _excluded_names(excluded: str | Sequence[str] | None) -> tuple[str, ...]:
    """One key's exclusions as a tuple of format names (a single name may be given as a string)."""
    if excluded is None:
        return ()
    return (excluded,) if isinstance(excluded, str) else tuple(excluded)


class KVWriter:
    """A destination for logged rows. Subclasses implement `write()` (and `close()` if they hold files).

    ``write(key_values, key_excluded, step)`` has Stable-Baselines3's signature: ``key_excluded`` maps keys
    to the format names that skip them (`kept()` applies it for this writer's name).
    """

    name = ""
    """The format name, used by ``Logger.record(..., exclude=...)``."""

    supported_value_types: tuple[type, ...] = ()
    """Which of `Image`, `Figure`, `Video`, `HParam` the writer shows; the others
    make `check_supported()` raise."""

    def write(
        self,
        key_values: Mapping[str, Any],
        key_excluded: Mapping[str, str | Sequence[str] | None] | None = None,
        step: int = 0,
    ) -> None:
        """Write one row of ``key -> value`` at ``step`` (the total timesteps), leaving out the keys that
        ``key_excluded`` excludes from this format."""
        raise NotImplementedError

    def kept(
        self, key_values: Mapping[str, Any], key_excluded: Mapping[str, str | Sequence[str] | None] | None
    ) -> dict[str, Any]:
        """``key_values`` without the keys ``key_excluded`` excludes from this writer. As in SB3, ``"stdout"``
        and ``"log"`` each exclude both text tables.

        Raises:
            TypeError: ``key_excluded`` is not a mapping (e.g. a step given in its place).
        """
        if key_excluded is None:
            return dict(key_values)
        if not isinstance(key_excluded, Mapping):
            raise TypeError(
                f"key_excluded must map keys to excluded format names (write(key_values, key_excluded, step)), "
                f"got {key_excluded!r}"
            )
        names = {"stdout", "log"} if self.name in ("stdout", "log") else {self.name}
        return {k: v for k, v in key_values.items() if not names.intersection(_excluded_names(key_excluded.get(k)))}

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


class SeqWriter:
    """A destination for the text lines of `Logger.log()` (SB3's ``SeqWriter``)."""

    def write_sequence(self, sequence: Sequence[str]) -> None:
        """Write the strings on one line, separated by spaces."""
        raise NotImplementedError


class HumanOutputFormat(KVWriter, SeqWriter):
    """Prints each dump as an aligned two-column table, keys grouped by their ``prefix/`` like SB3's stdout log.

    Args:
        stream: where to write (any object with ``write``); ``None`` means the current ``sys.stdout`` at each
            write. A file path here means ``path=`` (SB3's ``HumanOutputFormat(filename_or_file)``).
        max_length: keys and values longer than this are cut to it, ending in ``"..."`` (SB3's default, 36,
            keeps the table within 79 columns). Settable later as the attribute ``max_length``.
        path: write to this file instead (the ``"log"`` format, ``log.txt``).

    Raises:
        ValueError: two files given, or ``max_length`` is not an integer >= 4.
    """

    name = "stdout"

    def __init__(
        self,
        stream: TextIO | str | os.PathLike[str] | None = None,
        max_length: int = 36,
        path: str | os.PathLike[str] | None = None,
    ) -> None:
        if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 4:
            raise ValueError(f"HumanOutputFormat max_length must be an integer >= 4, got {max_length!r}")
        if isinstance(stream, (str, os.PathLike)):
            if path is not None:
                raise ValueError(f"HumanOutputFormat got two files: stream={stream!r} and path={path!r}")
            stream, path = None, stream
        self.stream = stream
        self.max_length = max_length
        self._file: TextIO | None = None
        if path is not None:
            self.name = "log"
            self._file = open(path, "a")  # noqa: SIM115 - closed in close()

    def _cut(self, text: str) -> str:
        return text if len(text) <= self.max_length else text[: self.max_length - 3] + "..."

    def write(
        self,
        key_values: Mapping[str, Any],
        key_excluded: Mapping[str, str | Sequence[str] | None] | None = None,
        step: int = 0,
    ) -> None:
        """Write the row as a table.

        Raises:
            FormatUnsupportedError: the row holds an `Image`, `Figure`, `Video` or `HParam`.
            ValueError: two keys of one group are the same once cut to ``max_length``.
        """
        values = self.kept(key_values, key_excluded)
        self.check_supported(values)
        rows: dict[tuple[str, str], str] = {}
        last_group = None
        for key in sorted(values):
            val = values[key]
            text = f"{val:<8.3g}" if isinstance(val, float) else str(val)
            group, _, leaf = key.rpartition("/")
            if group and group != last_group:
                rows[(f"{group}/", "")] = ""
                last_group = group
            shown = self._cut(f"   {leaf}" if group else key)
            if (group, shown) in rows:
                raise ValueError(
                    f"Key '{key}' truncated to '{shown}' that already exists. Consider increasing `max_length` "
                    f"(now {self.max_length})."
                )
            rows[(group, shown)] = self._cut(" ".join(text.split()) if isinstance(val, str) else text)
        if not rows:
            return
        lines_kv = [(shown or group, text) for (group, shown), text in rows.items()]
        width_k = max(len(k) for k, _ in lines_kv)
        width_v = max(len(v) for _, v in lines_kv)
        line = "-" * (width_k + width_v + 7)
        lines = [line, *(f"| {k:<{width_k}} | {v:<{width_v}} |" for k, v in lines_kv), line]
        self._emit("\n".join(lines) + "\n")

    def write_sequence(self, sequence: Sequence[str]) -> None:
        """Write the strings on one line, separated by spaces (what `Logger.log()` prints)."""
        self._emit(" ".join(sequence) + "\n")

    def _emit(self, text: str) -> None:
        stream = self._file or self.stream or sys.stdout
        stream.write(text)
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

    def write(
        self,
        key_values: Mapping[str, Any],
        key_excluded: Mapping[str, str | Sequence[str] | None] | None = None,
        step: int = 0,
    ) -> None:
        values = self.kept(key_values, key_excluded)
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

    def write(
        self,
        key_values: Mapping[str, Any],
        key_excluded: Mapping[str, str | Sequence[str] | None] | None = None,
        step: int = 0,
    ) -> None:
        values = self.kept(key_values, key_excluded)
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

    def write(
        self,
        key_values: Mapping[str, Any],
        key_excluded: Mapping[str, str | Sequence[str] | None] | None = None,
        step: int = 0,
    ) -> None:
        import torch  # already loaded by torch.utils.tensorboard

        for key, val in self.kept(key_values, key_excluded).items():
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
        self.dir: str | None = None if folder is None else os.fspath(folder)
        """The folder as given, a string (SB3's attribute)."""
        self.output_formats: list[KVWriter] = list(output_formats if output_formats is not None else writers or ())
        self.name_to_value: dict[str, Any] = defaultdict(float)
        """The values recorded since the last dump (a `record_mean` key holds its running mean)."""
        self.name_to_count: dict[str, int] = defaultdict(int)
        self.name_to_excluded: dict[str, tuple[str, ...]] = {}
        self.level = INFO
        """`log()` writes messages at this level or above; `DISABLED` also silences `dump()`."""

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

    def record_mean(self, key: str, value: float | None, exclude: str | Sequence[str] | None = None) -> None:
        """Add ``value`` to a running mean of ``key``, reported at the next dump (``None`` is ignored, as in SB3)."""
        if value is None:
            return
        count = self.name_to_count[key]
        mean = self.name_to_value[key] if count else 0.0
        self.name_to_value[key] = mean + (float(_to_python(value)) - mean) / (count + 1)
        self.name_to_count[key] = count + 1
        self.name_to_excluded[key] = (exclude,) if isinstance(exclude, str) else tuple(exclude or ())

    def dump(self, step: int = 0) -> None:
        """Write one row with everything recorded since the last dump, then clear it.

        Args:
            step: the x-axis value of the row (total timesteps).
        """
        if self.level == DISABLED:
            return
        values, excluded = dict(self.name_to_value), dict(self.name_to_excluded)
        for writer in self.output_formats:
            # every writer before the first write: the row goes everywhere or nowhere
            writer.check_supported(writer.kept(values, excluded))
        for writer in self.output_formats:
            writer.write(values, excluded, step)
        self.name_to_value.clear()
        self.name_to_count.clear()
        self.name_to_excluded.clear()

    def log(self, *args: Any, level: int = INFO) -> None:
        """Write ``args`` (as ``str``, space-separated) on one line of the text writers (stdout, ``log.txt``)
        if ``level`` is at least the logger's `level`."""
        if self.level <= level:
            for writer in self.output_formats:
                if isinstance(writer, SeqWriter):
                    writer.write_sequence([str(arg) for arg in args])

    def debug(self, *args: Any) -> None:
        """`log()` at level `DEBUG`."""
        self.log(*args, level=DEBUG)

    def info(self, *args: Any) -> None:
        """`log()` at level `INFO`."""
        self.log(*args, level=INFO)

    def warn(self, *args: Any) -> None:
        """`log()` at level `WARN`."""
        self.log(*args, level=WARN)

    def error(self, *args: Any) -> None:
        """`log()` at level `ERROR`."""
        self.log(*args, level=ERROR)

    def set_level(self, level: int) -> None:
        """Set `level` (`DEBUG`, `INFO`, `WARN`, `ERROR` or `DISABLED`, ints as in SB3).

        Raises:
            TypeError: not an int (``"debug"``: SB3 takes it, then every ``info`` raises; refused at once here).
        """
        if isinstance(level, bool) or not isinstance(level, (int, np.integer)):
            raise TypeError(f"level must be an int (DEBUG=10, INFO=20, WARN=30, ERROR=40, DISABLED=50), got {level!r}")
        self.level = int(level)

    def get_dir(self) -> str | None:
        """The folder of the file writers as a string (as in SB3), or ``None``."""
        return self.dir

    def close(self) -> None:
        """Close every writer's files."""
        for writer in self.output_formats:
            writer.close()


def make_output_format(_format: str, log_dir: str | os.PathLike[str], log_suffix: str = "") -> KVWriter:
    """One writer, by its format name (SB3's function): ``"stdout"``, or a file in ``log_dir`` (created if
    missing): ``"log"`` (``log<suffix>.txt``), ``"json"`` (``progress<suffix>.json``), ``"csv"``
    (``progress<suffix>.csv``) or ``"tensorboard"`` (event files).

    Raises:
        ValueError: an unknown format.
    """
    if _format not in FORMATS:
        raise ValueError(f"Unknown format specified: {_format!r}; allowed: {', '.join(FORMATS)}")
    if _format == "stdout":
        return HumanOutputFormat()
    folder = Path(log_dir)
    folder.mkdir(parents=True, exist_ok=True)
    if _format == "log":
        return HumanOutputFormat(path=folder / f"log{log_suffix}.txt")
    if _format == "json":
        return JSONOutputFormat(folder / f"progress{log_suffix}.json")
    if _format == "csv":
        return CSVOutputFormat(folder / f"progress{log_suffix}.csv")
    return TensorBoardOutputFormat(folder)


def configure(folder: str | os.PathLike[str] | None = None, format_strings: Sequence[str] | None = None) -> Logger:
    """Build a logger, e.g. ``configure("logs/run1", ["stdout", "csv", "tensorboard"])``.

    Args:
        folder: where file writers write; created if missing. ``None`` means ``$SB3_LOGDIR`` if set (as in
            SB3), else none. Never a temporary directory: without a folder only ``"stdout"`` is allowed.
        format_strings: writers among ``"stdout"``, ``"log"``, ``"csv"``, ``"json"``, ``"tensorboard"``;
            ``[]`` means a logger that writes nothing. ``None`` means ``$SB3_LOG_FORMAT`` (comma-separated) if
            set, else ``["stdout", "log", "csv"]`` with a folder (SB3's default) and ``["stdout"]`` without.

    Raises:
        ValueError: an unknown format, or a file format without ``folder``.
        ImportError: ``"tensorboard"`` without the tensorboard package.
    """
    if folder is None:
        folder = os.environ.get("SB3_LOGDIR") or None
    if format_strings is None and os.environ.get("SB3_LOG_FORMAT"):
        format_strings = os.environ["SB3_LOG_FORMAT"].split(",")
    if format_strings is None:
        format_strings = ["stdout"] if folder is None else ["stdout", "log", "csv"]
    formats = [fmt for fmt in format_strings if fmt]
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
    "DEBUG",
    "DISABLED",
    "ERROR",
    "FORMATS",
    "INFO",
    "WARN",
    "CSVOutputFormat",
    "Figure",
    "FormatUnsupportedError",
    "HParam",
    "HumanOutputFormat",
    "Image",
    "JSONOutputFormat",
    "KVWriter",
    "Logger",
    "SeqWriter",
    "TensorBoardOutputFormat",
    "Video",
    "configure",
    "make_output_format",
]
