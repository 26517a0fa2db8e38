"""Hindsight Experience Replay: `HerReplayBuffer` and its `GoalSelectionStrategy`."""

from rlkit_td3.buffers import register_buffer
from rlkit_td3.her.goal_selection_strategy import GoalSelectionStrategy
from rlkit_td3.her.her_replay_buffer import HerReplayBuffer, per_env_infos

register_buffer("HerReplayBuffer", HerReplayBuffer)  # a saved model may name it

__all__ = ["GoalSelectionStrategy", "HerReplayBuffer", "per_env_infos"]
