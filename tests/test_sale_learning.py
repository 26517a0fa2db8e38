"""TD3 with SALE (``policy_kwargs={"representation": "sale"}``) learns: Pendulum-v1 solved (mean deterministic return
>= -400 over 10 episodes, random play about -1,200 to -1,500) within 6k steps, with small networks, judged by the
median of three seeds; the encoders are trained.

The case (`learning_cases.SALE_PENDULUM_CASE`) is shared with ``benchmarks/learning_paths.py``, which runs it under
every float path (benchmarks/results/learning_paths/)."""

from __future__ import annotations

from learning_cases import SALE_PENDULUM_CASE, run_case


def test_td3_with_sale_learns_pendulum():
    result = run_case(SALE_PENDULUM_CASE)
    print(result.describe())
    assert result.passed, result.describe()


def test_td3_with_sale_trains_its_encoders():
    model = SALE_PENDULUM_CASE.build(0)
    model.learn(model.learning_starts + 20)
    assert model.policy.encoder_optimizer.state  # the encoders were trained
    assert model.policy.encoder_optimizer.state[next(model.policy.encoder.parameters())]["step"] == 20
