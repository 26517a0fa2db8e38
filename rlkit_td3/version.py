"""The package version: one string, read by ``pyproject.toml``, the docs header and ``rlkit_td3.__version__``."""

__version__ = "0.1.0"
