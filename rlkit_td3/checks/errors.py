"""The errors the checks of a file raise: `ModelFileError`, and `UnsupportedModelError` for a model of another kind.

It lives at the bottom of the house (this module imports nothing) so that the one reader
(`rlkit_td3.fileio.file_reader`), the state checks (`rlkit_td3.checks.state`) and every component raise the same
class. Users catch them from ``rlkit_td3.save_util`` (``ModelFileError``, ``UnsupportedModelError``).
"""

from __future__ import annotations


class ModelFileError(ValueError):
    """A model file is unreadable, inconsistent, or asks for something loading does not allow."""


class UnsupportedModelError(ValueError):
    """The file is an SB3 model of another algorithm or policy than TD3 / DDPG with ``MlpPolicy``."""
