"""Replay buffers. Custom buffers subclass `ReplayBuffer` and keep its constructor signature."""

from rlkit_td3.buffers.dict_replay_buffer import DictReplayBuffer, DictReplayBufferSamples
from rlkit_td3.buffers.n_step import NStepReplayBuffer, NStepReplayBufferSamples
from rlkit_td3.buffers.prioritized import LAPReplayBuffer, PrioritizedReplayBuffer, PrioritizedReplayBufferSamples
from rlkit_td3.buffers.replay_buffer import ReplayBuffer, ReplayBufferSamples

BUFFER_REGISTRY: dict[str, type[ReplayBuffer]] = {
    "ReplayBuffer": ReplayBuffer,
    "NStepReplayBuffer": NStepReplayBuffer,
    "PrioritizedReplayBuffer": PrioritizedReplayBuffer,
    "LAPReplayBuffer": LAPReplayBuffer,
    "DictReplayBuffer": DictReplayBuffer,
}
"""Buffer classes a saved model may name; add your own with `register_buffer()`."""


def register_buffer(name: str, cls: type[ReplayBuffer]) -> None:
    """Make ``cls`` loadable by ``name`` from a saved model."""
    if not (isinstance(cls, type) and issubclass(cls, ReplayBuffer)):
        raise TypeError(f"cls must be a ReplayBuffer subclass, got {cls!r}")
    BUFFER_REGISTRY[name] = cls


__all__ = [
    "BUFFER_REGISTRY",
    "DictReplayBuffer",
    "DictReplayBufferSamples",
    "LAPReplayBuffer",
    "NStepReplayBuffer",
    "NStepReplayBufferSamples",
    "PrioritizedReplayBuffer",
    "PrioritizedReplayBufferSamples",
    "ReplayBuffer",
    "ReplayBufferSamples",
    "register_buffer",
]
