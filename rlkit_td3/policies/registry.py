"""The registry of policy aliases: the names accepted for ``policy=`` and stored in model files.

It imports nothing: `rlkit_td3.policies.td3_policy` enters the built-in policies, `rlkit_td3.policies.register_policy`
a user's.
"""

from __future__ import annotations

from typing import Any

POLICY_ALIASES: dict[str, Any] = {}
"""Names accepted for the ``policy`` argument, and used to store the policy class in model files (name → class)."""
