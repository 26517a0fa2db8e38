"""Policies: ``MlpPolicy`` (= `TD3Policy`), ``CnnPolicy``, ``MultiInputPolicy`` and the registry of policy aliases."""

from rlkit_td3.policies.registry import POLICY_ALIASES
from rlkit_td3.policies.td3_policy import (
    DEFAULT_NET_ARCH,
    Actor,
    CnnPolicy,
    CriticEnsemble,
    MultiInputPolicy,
    TD3Policy,
    parse_net_arch,
)
from rlkit_td3.policies.td7_policy import TD7Policy  # noqa: E402  (after TD3Policy, which it extends)

MlpPolicy = TD3Policy

BasePolicy = TD3Policy
"""SB3's name for the base of its policies (used in type hints, e.g. SB3's ONNX export recipe). Every rlkit_td3
policy (MlpPolicy, CnnPolicy, MultiInputPolicy, a registered subclass) is a `TD3Policy`, so the two names are one
class here."""


def register_policy(name: str, cls: type[TD3Policy]) -> None:
    """Make ``cls`` usable as ``policy=name`` and loadable from model files that name it."""
    if not (isinstance(cls, type) and issubclass(cls, TD3Policy)):
        raise TypeError(f"cls must be a TD3Policy subclass, got {cls!r}")
    POLICY_ALIASES[name] = cls


def get_policy_class(policy: "str | type[TD3Policy]") -> type[TD3Policy]:
    """Resolve a policy alias or class.

    Raises:
        ValueError: an unknown alias (the message lists the known ones).
        TypeError: neither a string nor a TD3Policy subclass.
    """
    if isinstance(policy, str):
        if policy not in POLICY_ALIASES:
            raise ValueError(f"policy {policy!r} is not a known policy alias; known: {sorted(POLICY_ALIASES)}")
        return POLICY_ALIASES[policy]
    if isinstance(policy, type) and issubclass(policy, TD3Policy):
        return policy
    raise TypeError(f"policy must be an alias such as 'MlpPolicy' or a TD3Policy subclass, got {policy!r}")


__all__ = [
    "DEFAULT_NET_ARCH",
    "POLICY_ALIASES",
    "Actor",
    "CnnPolicy",
    "CriticEnsemble",
    "MlpPolicy",
    "MultiInputPolicy",
    "TD3Policy",
    "TD7Policy",
    "get_policy_class",
    "parse_net_arch",
    "register_policy",
]
