"""Features extractors: the network a policy runs on an observation before its MLPs.

As in Stable-Baselines3 (``common/torch_layers.py``, same names and constructor arguments):

* `FlattenExtractor` flattens a `Box` observation (``MlpPolicy``'s default; no parameters).
* `NatureCNN` is the convolutional network of Mnih et al. (2015) for image observations (``CnnPolicy``).
* `CombinedExtractor` runs a `NatureCNN` on every image key of a `Dict` observation, flattens the others and
  concatenates the results (``MultiInputPolicy``).

A policy scales images to [0, 1] (`rlkit_td3.preprocessing.preprocess_obs`) before its extractor sees them.
Unlike SB3, which transposes channels-last images in the env (``VecTransposeImage``), `NatureCNN` takes
channels-first and channels-last images alike and moves the channels itself.
"""

from __future__ import annotations

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from rlkit_td3.checks.arguments import ValueAssertionError, check_bool
from rlkit_td3.preprocessing import get_flattened_obs_dim, is_image_space, is_image_space_channels_first


class BaseFeaturesExtractor(nn.Module):
    """Base class of features extractors: maps a batch of (preprocessed) observations to ``(batch, features_dim)``.

    Args:
        observation_space: the observation space the extractor takes.
        features_dim: the number of features it outputs.

    Raises:
        ValueError: ``features_dim`` is not a non-negative int.
    """

    def __init__(self, observation_space: spaces.Space, features_dim: int = 0):
        super().__init__()
        if isinstance(features_dim, bool) or not isinstance(features_dim, (int, np.integer)) or features_dim < 0:
            raise ValueError(f"features_dim must be a non-negative int, got {features_dim!r}")
        features_dim = int(features_dim)
        self._observation_space = observation_space
        self._features_dim = features_dim

    @property
    def features_dim(self) -> int:
        """The number of features per observation."""
        return self._features_dim


class FlattenExtractor(BaseFeaturesExtractor):
    """Flattens each observation into a vector (no parameters); scalar observations give one column."""

    def __init__(self, observation_space: spaces.Space):
        super().__init__(observation_space, get_flattened_obs_dim(observation_space))

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return observations.reshape(observations.shape[0], -1)


class NatureCNN(BaseFeaturesExtractor):
    """The CNN of "Human-level control through deep reinforcement learning" (Mnih et al., 2015).

    Three convolutions (32 8x8 filters stride 4, 64 4x4 stride 2, 64 3x3 stride 1, ReLU), then a linear layer
    to ``features_dim`` with ReLU. Images must be at least 36x36 pixels.

    Args:
        observation_space: an image `Box` (see `rlkit_td3.preprocessing.is_image_space`), channels first or last.
        features_dim: the number of output features.
        normalized_image: the images are already scaled (any dtype and bounds are accepted).

    Raises:
        ValueError: ``observation_space`` is not an image space (a `rlkit_td3.utils.ValueAssertionError`, also an
            ``AssertionError`` as SB3's check), or the images are smaller than 36x36.
    """

    def __init__(self, observation_space: spaces.Box, features_dim: int = 512, normalized_image: bool = False):
        normalized_image = check_bool("normalized_image", normalized_image)
        if not is_image_space(observation_space, check_channels=False, normalized_image=normalized_image):
            raise ValueAssertionError(
                f"NatureCNN needs an image observation space (a uint8 Box of shape (C, H, W) or (H, W, C) with "
                f"bounds 0 and 255, or normalized_image=True for scaled images), got {observation_space!r}"
            )
        super().__init__(observation_space, features_dim)
        self.channels_first = is_image_space_channels_first(observation_space)
        shape = observation_space.shape
        channels, height, width = shape if self.channels_first else (shape[2], shape[0], shape[1])
        if height < 36 or width < 36:
            raise ValueError(f"NatureCNN needs images of at least 36x36 pixels, got {height}x{width}")
        self.cnn = nn.Sequential(
            nn.Conv2d(channels, 32, kernel_size=8, stride=4),
            nn.ReLU(),
            nn.Conv2d(32, 64, kernel_size=4, stride=2),
            nn.ReLU(),
            nn.Conv2d(64, 64, kernel_size=3, stride=1),
            nn.ReLU(),
            nn.Flatten(),
        )
        n_flatten = 64 * _conv_out(_conv_out(_conv_out(height, 8, 4), 4, 2), 3, 1)
        n_flatten *= _conv_out(_conv_out(_conv_out(width, 8, 4), 4, 2), 3, 1)
        self.linear = nn.Sequential(nn.Linear(n_flatten, features_dim), nn.ReLU())

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        if not self.channels_first:
            observations = observations.permute(0, 3, 1, 2)
        return self.linear(self.cnn(observations))


def _conv_out(size: int, kernel: int, stride: int) -> int:
    return (size - kernel) // stride + 1


class CombinedExtractor(BaseFeaturesExtractor):
    """Features of a `Dict` observation: a `NatureCNN` per image key, a flatten per other key, concatenated
    in the space's key order.

    Args:
        observation_space: a `Dict` space whose values are image `Box` spaces or flattenable spaces.
        cnn_output_dim: ``features_dim`` of each key's `NatureCNN`.
        normalized_image: the images are already scaled (see `NatureCNN`).

    Raises:
        TypeError: ``observation_space`` is not a `Dict`, or one of its spaces cannot be flattened.
    """

    def __init__(self, observation_space: spaces.Dict, cnn_output_dim: int = 256, normalized_image: bool = False):
        normalized_image = check_bool("normalized_image", normalized_image)
        if not isinstance(observation_space, spaces.Dict):
            raise TypeError(
                f"CombinedExtractor needs a gymnasium.spaces.Dict observation space, got {observation_space!r}"
            )
        super().__init__(observation_space, features_dim=1)
        extractors: dict[str, nn.Module] = {}
        total = 0
        for key, subspace in observation_space.spaces.items():
            if is_image_space(subspace, normalized_image=normalized_image):
                extractors[key] = NatureCNN(subspace, features_dim=cnn_output_dim, normalized_image=normalized_image)
                total += cnn_output_dim
            else:
                extractors[key] = FlattenExtractor(subspace)
                total += get_flattened_obs_dim(subspace)
        self.extractors = nn.ModuleDict(extractors)
        self._features_dim = total

    def forward(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.cat([extractor(observations[key]) for key, extractor in self.extractors.items()], dim=1)


FEATURES_EXTRACTORS: dict[str, type[BaseFeaturesExtractor]] = {
    "FlattenExtractor": FlattenExtractor,
    "NatureCNN": NatureCNN,
    "CombinedExtractor": CombinedExtractor,
}
"""The extractors a model or policy file may name (loaded without ``allow_pickle``); others need ``custom_objects``."""


def create_mlp(
    input_dim: int,
    output_dim: int,
    net_arch: list[int],
    activation_fn: type[nn.Module] = nn.ReLU,
    squash_output: bool = False,
    with_bias: bool = True,
    pre_linear_modules: list[type[nn.Module]] | None = None,
    post_linear_modules: list[type[nn.Module]] | None = None,
) -> list[nn.Module]:
    """The layers of an MLP, as a list for ``nn.Sequential(*layers)`` (SB3's ``create_mlp``, same arguments).

    Each hidden layer is ``[pre modules] Linear [post modules] activation``; the output layer (if
    ``output_dim > 0``) is ``[pre modules] Linear``, then ``Tanh`` if ``squash_output``.

    Args:
        input_dim: input features.
        output_dim: output features; 0 for none (the last hidden layer is the output).
        net_arch: the hidden layers' widths.
        activation_fn: the activation class after each hidden layer.
        squash_output: end with ``nn.Tanh()``.
        with_bias: the linear layers have biases.
        pre_linear_modules: module classes built with the layer's input width and put before each linear
            layer (e.g. ``nn.BatchNorm1d``).
        post_linear_modules: module classes built with the layer's output width and put after each hidden
            linear layer (e.g. ``nn.LayerNorm``, ``nn.Dropout``... that take the width).
    """
    pre = pre_linear_modules or []
    post = post_linear_modules or []
    widths = [input_dim, *net_arch]
    layers: list[nn.Module] = []
    for n_in, n_out in zip(widths[:-1], widths[1:]):
        layers += [module(n_in) for module in pre]
        layers.append(nn.Linear(n_in, n_out, bias=with_bias))
        layers += [module(n_out) for module in post]
        layers.append(activation_fn())
    if output_dim > 0:
        layers += [module(widths[-1]) for module in pre]
        layers.append(nn.Linear(widths[-1], output_dim, bias=with_bias))
    if squash_output:
        layers.append(nn.Tanh())
    return layers


__all__ = [
    "FEATURES_EXTRACTORS",
    "BaseFeaturesExtractor",
    "CombinedExtractor",
    "FlattenExtractor",
    "NatureCNN",
    "create_mlp",
]
