"""Features extractors (rlkit_td3.torch_layers) and the observation preprocessing helpers (rlkit_td3.preprocessing)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from rlkit_td3.preprocessing import get_flattened_obs_dim, is_image_space, is_image_space_channels_first, preprocess_obs
from rlkit_td3.torch_layers import BaseFeaturesExtractor, CombinedExtractor, FlattenExtractor, NatureCNN

IMG_FIRST = spaces.Box(0, 255, (3, 36, 36), np.uint8)
IMG_LAST = spaces.Box(0, 255, (36, 36, 3), np.uint8)


@pytest.mark.parametrize(
    "space, image, channels_ok",
    [
        (IMG_FIRST, True, True),
        (IMG_LAST, True, True),
        (spaces.Box(0, 255, (1, 40, 50), np.uint8), True, True),
        (spaces.Box(0, 255, (50, 40, 4), np.uint8), True, True),
        (spaces.Box(0, 255, (5, 36, 36), np.uint8), True, False),  # 5 channels: an image, not for check_channels
        (spaces.Box(0.0, 1.0, (3, 36, 36), np.float32), False, False),  # float: not an image unless normalized
        (spaces.Box(0, 254, (3, 36, 36), np.uint8), False, False),  # bounds other than 0..255
        (spaces.Box(0, 255, (36, 36), np.uint8), False, False),  # two dimensions
        (spaces.Box(-1.0, 1.0, (4,), np.float32), False, False),
        (spaces.Discrete(3), False, False),
    ],
)
def test_is_image_space(space, image, channels_ok):
    assert is_image_space(space) is image
    assert is_image_space(space, check_channels=True) is (image and channels_ok)


def test_normalized_images_accept_any_dtype_and_bounds():
    scaled = spaces.Box(0.0, 1.0, (3, 36, 36), np.float32)
    assert not is_image_space(scaled)
    assert is_image_space(scaled, normalized_image=True)


def test_channels_first_is_the_smallest_first_dimension():
    assert is_image_space_channels_first(IMG_FIRST)
    assert not is_image_space_channels_first(IMG_LAST)
    with pytest.warns(UserWarning, match="middle dimension"):
        assert not is_image_space_channels_first(spaces.Box(0, 255, (36, 3, 36), np.uint8))


def test_flattened_dims():
    assert get_flattened_obs_dim(spaces.Box(-1, 1, (2, 3), np.float32)) == 6
    assert get_flattened_obs_dim(spaces.Discrete(5)) == 5
    assert get_flattened_obs_dim(spaces.MultiDiscrete([2, 3])) == 5
    assert get_flattened_obs_dim(spaces.MultiBinary(4)) == 4
    with pytest.raises(TypeError, match="CombinedExtractor"):
        get_flattened_obs_dim(spaces.Dict(a=spaces.Discrete(2)))


def test_preprocess_obs_scales_images_only():
    img = torch.tensor(IMG_FIRST.sample()[None])
    out = preprocess_obs(img, IMG_FIRST)
    assert out.dtype == torch.float32 and torch.equal(out, img.float() / 255.0)
    assert torch.equal(preprocess_obs(img, IMG_FIRST, normalize_images=False), img.float())
    vec = torch.tensor([[300.0, -2.0]])
    assert preprocess_obs(vec, spaces.Box(-np.inf, np.inf, (2,), np.float32)) is vec  # float32 passes untouched
    one_hot = preprocess_obs(torch.tensor([2, 0]), spaces.Discrete(3))
    assert torch.equal(one_hot, torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]))
    both = preprocess_obs({"im": img, "v": vec}, spaces.Dict(im=IMG_FIRST, v=spaces.Box(-1, 1, (2,), np.float32)))
    assert torch.equal(both["im"], img.float() / 255.0) and torch.equal(both["v"], vec)


def test_base_extractor_checks_features_dim():
    assert BaseFeaturesExtractor(IMG_FIRST, 7).features_dim == 7
    with pytest.raises(ValueError, match="features_dim must be a non-negative int, got -1"):
        BaseFeaturesExtractor(IMG_FIRST, -1)


def test_flatten_extractor():
    ext = FlattenExtractor(spaces.Box(-1, 1, (2, 3), np.float32))
    assert ext.features_dim == 6 and not list(ext.parameters())
    x = torch.arange(12.0).reshape(2, 2, 3)
    assert torch.equal(ext(x), x.reshape(2, 6))
    assert ext(torch.ones(4)).shape == (4, 1)  # a batch of scalar observations: one column each


def test_nature_cnn_shapes_and_channel_order():
    torch.manual_seed(0)
    first = NatureCNN(IMG_FIRST, features_dim=20)
    last = NatureCNN(IMG_LAST, features_dim=20)
    last.load_state_dict(first.state_dict())  # same weights: channels-last input must give the same features
    assert first.features_dim == 20 and first.channels_first and not last.channels_first
    assert first.cnn[0].weight.shape == (32, 3, 8, 8) and first.linear[0].weight.shape == (20, 64)
    images = torch.rand(5, 3, 36, 36)
    out = first(images)
    assert out.shape == (5, 20) and bool((out >= 0).all())
    torch.testing.assert_close(last(images.permute(0, 2, 3, 1)), out, rtol=0, atol=0)


def test_nature_cnn_linear_size_follows_the_image_size():
    cnn = NatureCNN(spaces.Box(0, 255, (1, 84, 84), np.uint8))
    assert cnn.linear[0].in_features == 64 * 7 * 7 and cnn.features_dim == 512  # Mnih et al.'s 84x84 Atari frames


def test_nature_cnn_refuses_non_images():
    with pytest.raises(ValueError, match="NatureCNN needs an image observation space"):
        NatureCNN(spaces.Box(0.0, 1.0, (3, 36, 36), np.float32))
    assert NatureCNN(spaces.Box(0.0, 1.0, (3, 36, 36), np.float32), 8, normalized_image=True).features_dim == 8
    with pytest.raises(ValueError, match="at least 36x36 pixels, got 20x36"):
        NatureCNN(spaces.Box(0, 255, (3, 20, 36), np.uint8))


def test_combined_extractor():
    torch.manual_seed(0)
    space = spaces.Dict(
        goal=spaces.Box(-1, 1, (2,), np.float32), image=IMG_FIRST, state=spaces.Box(-1, 1, (3, 2), np.float32)
    )
    ext = CombinedExtractor(space, cnn_output_dim=16)
    assert ext.features_dim == 2 + 16 + 6
    assert isinstance(ext.extractors["image"], NatureCNN) and ext.extractors["image"].features_dim == 16
    obs = {"goal": torch.rand(4, 2), "image": torch.rand(4, 3, 36, 36), "state": torch.rand(4, 3, 2)}
    out = ext(obs)
    assert out.shape == (4, 24)
    keys = list(space.spaces)  # concatenated in the space's key order
    widths = {"goal": 2, "image": 16, "state": 6}
    start = 0
    for key in keys:
        expected = ext.extractors[key](obs[key])
        assert torch.equal(out[:, start : start + widths[key]], expected)
        start += widths[key]
    with pytest.raises(TypeError, match="needs a gymnasium.spaces.Dict"):
        CombinedExtractor(IMG_FIRST)
