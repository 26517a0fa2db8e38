"""Compatibility with Stable-Baselines 2 (TensorFlow), as SB3's ``common.sb2_compat``."""

from rlkit_td3.sb2_compat.rmsprop_tf_like import RMSpropTFLike

__all__ = ["RMSpropTFLike"]
