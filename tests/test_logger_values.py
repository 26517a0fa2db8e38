"""SB3's logger value types (Image, Figure, Video, HParam) read back from TensorBoard event files, the text
writers' FormatUnsupportedError, Logger.output_formats, the SummaryWriter recipe, LogEveryNTimesteps and
learn(log_interval=None)."""

from __future__ import annotations

import io
import json

import gymnasium as gym
import matplotlib
import numpy as np
import pandas as pd
import pytest
import torch
from conftest import make_counter
from PIL import Image as PILImage
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import plugin_data_pb2

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from rlkit_td3 import TD3  # noqa: E402
from rlkit_td3.callbacks import BaseCallback, LogEveryNTimesteps  # noqa: E402
from rlkit_td3.logger import (  # noqa: E402
    CSVOutputFormat,
    Figure,
    FormatUnsupportedError,
    HParam,
    HumanOutputFormat,
    Image,
    Logger,
    TensorBoardOutputFormat,
    Video,
    _video_grid,
    configure,
)

KW = dict(batch_size=16, policy_kwargs={"net_arch": [32]}, seed=0)


def _events(folder) -> EventAccumulator:
    files = sorted(folder.glob("events.out.tfevents.*"))
    assert len(files) == 1, files
    acc = EventAccumulator(str(files[0]), size_guidance={"images": 0, "tensors": 0})
    acc.Reload()
    return acc


def _decode(encoded: bytes) -> list[np.ndarray]:
    """All frames of a PNG (one) or an animated GIF, as RGB arrays."""
    picture = PILImage.open(io.BytesIO(encoded))
    frames = []
    for i in range(getattr(picture, "n_frames", 1)):
        picture.seek(i)
        frames.append(np.asarray(picture.convert("RGB")))
    return frames


def test_image_figure_video_and_hparams_in_tensorboard(tmp_path):
    logger = configure(tmp_path, ["tensorboard"])
    image = np.zeros((4, 6, 3), np.uint8)
    image[:, :3] = (255, 0, 0)  # left half red, right half black
    figure = plt.figure(figsize=(2.0, 1.5), dpi=50)
    plt.plot([0, 1], [1, 0])
    frames = np.zeros((1, 3, 3, 8, 10), np.uint8)  # (N, T, C, H, W): black, green, white
    frames[0, 1, 1] = 255
    frames[0, 2] = 255
    logger.record("img", Image(image, "HWC"))
    logger.record("fig", Figure(figure, close=True))
    logger.record("vid", Video(torch.as_tensor(frames), fps=5))
    hparams = {"lr": np.float32(0.5), "algo": "TD3", "delay": 2, "unset": None, "net_arch": [64, 64]}
    logger.record("hp", HParam(hparams, {"rollout/ep_rew_mean": 0}))
    logger.record("scalar", 1.5)
    logger.dump(step=12)
    logger.close()

    acc = _events(tmp_path)
    assert sorted(acc.Tags()["images"]) == ["fig", "img", "vid"]
    (img,) = acc.Images("img")
    assert (img.step, img.width, img.height) == (12, 6, 4)
    np.testing.assert_array_equal(_decode(img.encoded_image_string)[0], image)

    (fig,) = acc.Images("fig")
    assert (fig.step, fig.width, fig.height) == (12, 100, 75)  # 2 x 1.5 inches at 50 dpi
    assert figure.number not in plt.get_fignums()  # close=True closed it

    (vid,) = acc.Images("vid")
    assert (vid.step, vid.width, vid.height) == (12, 10, 8)
    assert vid.encoded_image_string.startswith(b"GIF89a")
    decoded = _decode(vid.encoded_image_string)
    assert len(decoded) == 3
    for got, want in zip(decoded, frames[0].transpose(0, 2, 3, 1)):
        np.testing.assert_array_equal(got, want)

    content = acc.PluginTagToContent("hparams")
    assert set(content) == {"_hparams_/experiment", "_hparams_/session_start_info", "_hparams_/session_end_info"}
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"]).session_start_info
    assert dict(start.hparams)["lr"].number_value == 0.5
    assert dict(start.hparams)["algo"].string_value == "TD3"
    assert dict(start.hparams)["delay"].number_value == 2
    assert dict(start.hparams)["net_arch"].string_value == "[64, 64]"  # other types as their str()
    assert "unset" not in start.hparams
    experiment = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
    assert [m.name.tag for m in experiment.metric_infos] == ["rollout/ep_rew_mean"]
    assert [e.value for e in acc.Scalars("scalar")] == [1.5]


def test_figure_close_false_keeps_it_open(tmp_path):
    logger = configure(tmp_path, ["tensorboard"])
    figure = plt.figure()
    logger.record("fig", Figure(figure, close=False))
    logger.dump(1)
    logger.close()
    assert figure.number in plt.get_fignums()
    plt.close(figure)
    assert len(_events(tmp_path).Images("fig")) == 1


def test_strings_become_text_and_arrays_histograms(tmp_path):
    logger = configure(tmp_path, ["tensorboard"])
    logger.record("note", "hello")
    logger.record("weights", np.array([0.0, 1.0, 1.0, 3.0]))
    logger.record("grads", torch.tensor([[2.0, -1.0]]))
    logger.record("table", pd.Series([1.0, 2.0]))  # neither a number nor an array: not written
    logger.dump(3)
    logger.close()
    acc = _events(tmp_path)
    (text,) = acc.Tensors("note/text_summary")
    assert text.tensor_proto.string_val == [b"hello"]
    assert sorted(acc.Tags()["histograms"]) == ["grads", "weights"]
    (hist,) = acc.Histograms("weights")
    assert (hist.step, hist.histogram_value.num, hist.histogram_value.sum, hist.histogram_value.max) == (3, 4, 5, 3)
    (hist,) = acc.Histograms("grads")
    assert (hist.histogram_value.num, hist.histogram_value.min, hist.histogram_value.max) == (2, -1, 2)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_video_grid_tiles_like_add_video(n):
    rng = np.random.default_rng(n)
    frames = rng.integers(0, 256, size=(n, 2, 3, 4, 5), dtype=np.uint8)
    grid = _video_grid(frames)
    padded = 1 << (n - 1).bit_length()  # torch's add_video pads N to a power of two, in rows of 2**(log2(N)//2)
    rows = 2 ** (int(np.log2(padded)) // 2)
    cols = padded // rows
    assert grid.shape == (2, rows * 4, cols * 5, 3)
    for i in range(padded):
        r, c = divmod(i, cols)
        tile = grid[:, r * 4 : (r + 1) * 4, c * 5 : (c + 1) * 5]
        want = frames[i].transpose(0, 2, 3, 1) if i < n else np.zeros_like(tile)
        np.testing.assert_array_equal(tile, want)


def test_video_float_frames_scale_to_255():
    frames = torch.tensor([0.0, 0.5, 1.0, 2.0]).reshape(1, 4, 1, 1, 1)
    np.testing.assert_array_equal(_video_grid(frames).ravel(), [0, 127, 255, 255])


@pytest.mark.parametrize("fmt", ["stdout", "log", "csv", "json"])
@pytest.mark.parametrize(
    "value,description",
    [
        (lambda: Image(np.zeros((2, 2)), "HW"), "image"),
        (lambda: Figure(plt.figure(), close=True), "figure"),
        (lambda: Video(np.zeros((1, 1, 1, 2, 2)), fps=1), "video"),
        (lambda: HParam({"a": 1}, {"m": 0.0}), "hparam"),
    ],
)
def test_text_writers_raise_unless_excluded(tmp_path, fmt, value, description):
    logger = configure(tmp_path, [fmt])
    logger.record("x", 1)
    logger.record("rich", value())
    with pytest.raises(FormatUnsupportedError, match=rf"{fmt} cannot show key 'rich' \({description}\)") as info:
        logger.dump(1)
    assert isinstance(info.value, NotImplementedError)  # SB3's FormatUnsupportedError base
    logger.record("x", 2)
    logger.record("rich", value(), exclude=("stdout", "log", "json", "csv"))
    logger.dump(2)
    logger.close()
    plt.close("all")
    if fmt == "csv":
        assert pd.read_csv(tmp_path / "progress.csv").to_dict("list") == {"x": [2]}
    elif fmt == "json":
        assert [json.loads(line) for line in (tmp_path / "progress.json").read_text().splitlines()] == [{"x": 2}]


def test_a_refused_row_is_written_nowhere(tmp_path):
    logger = configure(tmp_path, ["tensorboard", "csv"])
    logger.record("x", 1.0)
    logger.record("img", Image(np.zeros((2, 2)), "HW"))
    with pytest.raises(FormatUnsupportedError, match="csv"):
        logger.dump(1)
    logger.close()
    acc = _events(tmp_path)
    assert acc.Tags()["scalars"] == [] and acc.Tags()["images"] == []
    assert not (tmp_path / "progress.csv").exists()


def test_stdout_and_log_exclusions_cover_both_tables(tmp_path):
    stream = io.StringIO()
    logger = Logger(tmp_path, [HumanOutputFormat(stream), HumanOutputFormat(path=tmp_path / "log.txt")])
    logger.record("shown", 1)
    logger.record("hidden_a", 2, exclude="stdout")
    logger.record("hidden_b", 3, exclude="log")
    logger.dump(1)
    logger.close()
    for text in (stream.getvalue(), (tmp_path / "log.txt").read_text()):
        assert "shown" in text and "hidden" not in text


def test_human_output_format_takes_a_file_name_as_sb3(tmp_path):
    writer = HumanOutputFormat(str(tmp_path / "table.txt"))  # SB3: HumanOutputFormat(filename_or_file)
    assert writer.name == "log"
    writer.write({"a/b": 1.5}, {"a/b": None}, 0)
    writer.close()
    assert "| a/" in (tmp_path / "table.txt").read_text()
    with pytest.raises(ValueError, match="two files"):
        HumanOutputFormat(tmp_path / "x.txt", path=tmp_path / "y.txt")


def test_output_formats_is_the_writer_list(tmp_path):
    csv = CSVOutputFormat(tmp_path / "p.csv")
    assert Logger(None, output_formats=[csv]).output_formats == [csv]
    logger = Logger(None, writers=[csv])
    assert logger.output_formats == [csv] and logger.writers is logger.output_formats
    logger.writers = []
    assert logger.output_formats == []
    with pytest.raises(TypeError, match="not both"):
        Logger(None, [csv], writers=[csv])
    assert configure(None, ["stdout"]).output_formats[0].name == "stdout"


def test_value_types_validate_their_arguments():
    with pytest.raises(ValueError, match=r"Video frames must have shape \(N, T, C, H, W\).*\(2, 3, 4\)"):
        Video(np.zeros((2, 3, 4)), fps=4)
    with pytest.raises(ValueError, match="C in"):
        Video(np.zeros((1, 2, 2, 4, 4)), fps=4)
    with pytest.raises(ValueError, match="fps must be a positive number, got 0"):
        Video(np.zeros((1, 2, 3, 4, 4)), fps=0)
    with pytest.raises(ValueError, match="names 3 axes but the image has 2"):
        Image(np.zeros((4, 4)), "HWC")
    with pytest.raises(ValueError, match="distinct letters"):
        Image(np.zeros((4, 4, 3)), "HWX")
    with pytest.raises(ValueError, match="metric_dict must not be empty"):
        HParam({"lr": 0.1}, {})
    with pytest.raises(ValueError, match=r"metric_dict\['m'\] must be a number, got 'high'"):
        HParam({"lr": 0.1}, {"m": "high"})
    with pytest.raises(TypeError, match="matplotlib Figure"):
        Figure(np.zeros(3), close=True)


class _DirectWriter(BaseCallback):
    """SB3's documented recipe: find the TensorBoard writer among the logger's output formats."""

    def _on_training_start(self) -> None:
        self.tb = next(f for f in self.logger.output_formats if isinstance(f, TensorBoardOutputFormat))

    def _on_step(self) -> bool:
        if self.n_calls % 50 == 0:
            self.tb.writer.add_text("direct/text", f"step {self.num_timesteps}", self.num_timesteps)
            self.tb.writer.flush()
        return True


def test_summary_writer_recipe(tmp_path):
    model = TD3("MlpPolicy", make_counter(5), learning_starts=1000, tensorboard_log=tmp_path, **KW)
    model.learn(100, callback=_DirectWriter(), log_interval=None)
    model.logger.close()
    texts = _events(tmp_path / "TD3_1").Tensors("direct/text/text_summary")
    assert [(t.step, t.tensor_proto.string_val[0]) for t in texts] == [(50, b"step 50"), (100, b"step 100")]


def _csv_timesteps(folder) -> list[int]:
    path = folder / "progress.csv"
    return pd.read_csv(path)["time/total_timesteps"].tolist() if path.exists() else []


@pytest.mark.parametrize("n_envs,expected", [(1, [7, 14, 21, 28]), (2, [8, 14, 22, 28])])
def test_log_every_n_timesteps(tmp_path, n_envs, expected):
    env = make_counter(5) if n_envs == 1 else gym.vector.SyncVectorEnv([lambda: make_counter(5)] * 2)
    model = TD3("MlpPolicy", env, learning_starts=1000, **KW)
    model.set_logger(configure(tmp_path, ["csv"]))
    model.learn(30, callback=LogEveryNTimesteps(n_steps=7), log_interval=None)
    model.logger.close()
    assert _csv_timesteps(tmp_path) == expected  # each crossing of a multiple of 7, no per-episode row


@pytest.mark.parametrize("log_interval,expected", [(None, []), (2, [10, 20, 30]), (3, [15, 30])])
def test_learn_log_interval(tmp_path, log_interval, expected):
    model = TD3("MlpPolicy", make_counter(5), learning_starts=1000, **KW)  # 5-step episodes
    model.set_logger(configure(tmp_path, ["csv"]))
    model.learn(30, log_interval=log_interval)
    model.logger.close()
    assert _csv_timesteps(tmp_path) == expected


def test_learn_log_interval_validation():
    model = TD3("MlpPolicy", make_counter(5), learning_starts=1000, **KW)
    with pytest.raises(ValueError, match="log_interval must be >= 1, got 0"):
        model.learn(10, log_interval=0)
    with pytest.raises(TypeError, match="log_interval must be an int"):
        model.learn(10, log_interval=2.0)
