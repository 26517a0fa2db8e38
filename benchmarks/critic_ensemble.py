"""Batched critic ensemble vs a Python loop of per-critic MLPs: one critic update, timed interleaved.

Shapes of the HalfCheetah configuration: obs 26, act 6, [400, 300], batch 256, 2 critics. Each trial
times ``--steps`` critic updates (forward, sum-of-MSE loss, backward, fused Adam step) for both variants,
alternating A B A B; the script reports the median ms per update and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn

from rlkit_td3.policies import CriticEnsemble

OBS, ACT, ARCH, BATCH, N_CRITICS = 26, 6, [400, 300], 256, 2


class LoopCritics(nn.Module):
    """The usual layout: ``n`` separate ``nn.Sequential`` MLPs evaluated one after the other."""

    def __init__(self) -> None:
        super().__init__()
        sizes = [OBS + ACT, *ARCH, 1]
        self.qs = nn.ModuleList()
        for _ in range(N_CRITICS):
            layers: list[nn.Module] = []
            for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
                layers.append(nn.Linear(a, b))
                if i < len(sizes) - 2:
                    layers.append(nn.ReLU())
            self.qs.append(nn.Sequential(*layers))

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        x = torch.cat([obs, act], dim=1)
        return torch.stack([q(x).squeeze(-1) for q in self.qs])


def time_updates(critic: nn.Module, steps: int, data: tuple[torch.Tensor, ...]) -> float:
    obs, act, target = data
    opt = torch.optim.Adam(critic.parameters(), lr=1e-3, fused=True)
    start = time.perf_counter()
    for _ in range(steps):
        loss = (critic(obs, act) - target).pow(2).mean(dim=1).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return (time.perf_counter() - start) / steps * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--trials", type=int, default=7)
    args = parser.parse_args()
    torch.manual_seed(0)
    data = (torch.randn(BATCH, OBS), torch.rand(BATCH, ACT) * 2 - 1, torch.randn(BATCH))
    ensemble = CriticEnsemble(OBS, ACT, ARCH, nn.ReLU, N_CRITICS)
    loop = LoopCritics()
    time_updates(ensemble, 20, data)
    time_updates(loop, 20, data)
    ens_ms, loop_ms = [], []
    for _ in range(args.trials):
        ens_ms.append(time_updates(ensemble, args.steps, data))
        loop_ms.append(time_updates(loop, args.steps, data))
    ratios = [b / a for a, b in zip(ens_ms, loop_ms)]
    print(
        f"critic update, obs {OBS} act {ACT} {ARCH} batch {BATCH} x{N_CRITICS}, torch threads {torch.get_num_threads()}"
    )
    print(f"batched ensemble : median {statistics.median(ens_ms):.3f} ms/update  {[round(x, 3) for x in ens_ms]}")
    print(f"loop of MLPs     : median {statistics.median(loop_ms):.3f} ms/update  {[round(x, 3) for x in loop_ms]}")
    print(f"loop / ensemble time ratio: median {statistics.median(ratios):.3f} (>1 means the ensemble is faster)")


if __name__ == "__main__":
    main()
