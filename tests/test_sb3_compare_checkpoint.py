"""benchmarks/sb3_compare.py --checkpoint: an interrupted rlkit_td3 run continues exactly where it stood."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import sb3_compare  # noqa: E402


@pytest.fixture
def small_settings(monkeypatch):
    zoo = sb3_compare._settings

    def small(algo, env_id):
        hp = dict(zoo(algo, env_id))
        hp.update(learning_starts=300, buffer_size=5000, batch_size=64, net_arch=[32, 32])
        return hp

    monkeypatch.setattr(sb3_compare, "_settings", small)


def _rows(out: Path) -> list[tuple[str, str]]:
    with open(out / "runs" / "rlkit_td3_s0.csv") as f:
        return [(row["timesteps"], row["mean_return"]) for row in csv.DictReader(f)]


def test_an_interrupted_checkpointed_run_ends_as_an_uninterrupted_one(tmp_path, small_settings, monkeypatch):
    args = ("rlkit", "td3", "Pendulum-v1", 0, 1800, 600, 2)
    sb3_compare.run_one(tmp_path / "whole", *args)

    write, written = sb3_compare._write_checkpoint, []

    def write_then_stop_at_the_second(*a):
        write(*a)
        written.append(a)
        if len(written) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(sb3_compare, "_write_checkpoint", write_then_stop_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        sb3_compare.run_one(tmp_path / "split", *args, checkpoint=True)
    assert [t for t, _ in _rows(tmp_path / "split")] == ["600", "1200"]
    monkeypatch.setattr(sb3_compare, "_write_checkpoint", write)
    sb3_compare.run_one(tmp_path / "split", *args, checkpoint=True)

    assert _rows(tmp_path / "split") == _rows(tmp_path / "whole")
    assert len(_rows(tmp_path / "whole")) == 3


def test_a_finished_checkpointed_run_is_extended_exactly_by_a_larger_steps(tmp_path, small_settings):
    sb3_compare.run_one(tmp_path / "whole", "rlkit", "td3", "Pendulum-v1", 0, 1800, 600, 2)
    grown = tmp_path / "grown"
    sb3_compare.run_one(grown, "rlkit", "td3", "Pendulum-v1", 0, 1200, 600, 2, checkpoint=True)
    sb3_compare.run_one(grown, "rlkit", "td3", "Pendulum-v1", 0, 1200, 600, 2, checkpoint=True)  # done: no-op
    assert [t for t, _ in _rows(grown)] == ["600", "1200"]
    sb3_compare.run_one(grown, "rlkit", "td3", "Pendulum-v1", 0, 1800, 600, 2, checkpoint=True)
    assert _rows(grown) == _rows(tmp_path / "whole")


def test_without_checkpoint_an_unfinished_run_restarts_from_step_zero(tmp_path, small_settings):
    out = tmp_path / "sweep"
    (out / "runs").mkdir(parents=True)
    (out / "runs" / "rlkit_td3_s0.csv").write_text("lib,algo,env,seed,timesteps,mean_return,std_return,wall_s\n")
    sb3_compare.run_one(out, "rlkit", "td3", "Pendulum-v1", 0, 600, 600, 1)
    assert [t for t, _ in _rows(out)] == ["600"]


def test_summary_up_to_a_step_cuts_every_run_and_counts_those_that_reached_it(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    fields = sb3_compare.FIELDS
    for algo, seed, last in (("td3", 0, 30_000), ("td3", 1, 35_000), ("ddpg", 0, 30_000), ("ddpg", 1, 25_000)):
        with open(runs / f"rlkit_{algo}_s{seed}.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fields)
            writer.writeheader()
            for step in range(5_000, last + 1, 5_000):
                value = step / 1_000 + (10.0 if algo == "td3" else 0.0)
                writer.writerow(dict(lib="rlkit", algo=algo, env="E", seed=seed, timesteps=step, mean_return=value,
                                     std_return=0.0, wall_s=1.0))  # fmt: skip
    rows = sb3_compare._read_runs(tmp_path, up_to=30_000)
    assert max(int(r["timesteps"]) for r in rows) == 30_000  # td3 seed 1 is cut at 30k
    finished = {(r["algo"], r["seed"]) for r in rows if r["finished"]}
    assert finished == {("td3", "0"), ("td3", "1"), ("ddpg", "0")}  # ddpg seed 1 stopped at 25k
    assert not any(r["finished"] for r in sb3_compare._read_runs(tmp_path))  # no .done markers
    text = sb3_compare.summarize(tmp_path, up_to=30_000)
    assert "| TD3 rlkit_td3 | 2 | 30.0 | range 30.0 to 30.0 | s0: 30.0, s1: 30.0 |" in text
    assert "| DDPG rlkit_td3 | 1 | 20.0 | range 20.0 to 20.0 | s0: 20.0 |" in text
    assert "- E: P(TD3 rlkit_td3 > DDPG rlkit_td3) = 1.00 (no interval: 1 run in a group, fewer than 5)" in text
    assert "Unfinished runs (not in the table), steps reached: DDPG rlkit_td3 s1 at 25,000." in text
