"""The shell blocks of docs/cli.md run as written, in order, in one folder, with ``RLKIT_TD3_MAX_TIMESTEPS=400``
(the page's documented way to try a command line quickly).

``bash`` blocks: every command must succeed. ``console``/``text`` blocks: each ``$ command`` runs and the lines
shown after it must appear in its output (``...`` matches anything); a shown ``error:`` means exit code 2.
A block preceded by ``<!-- no-test: reason -->`` is skipped (the Ray cluster example).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "cli.md"
BLOCK = re.compile(r"(?P<skip><!-- no-test[^>]*-->\s*\n)?```(?P<lang>bash|console|text)\n(?P<body>.*?)```", re.S)


def page_commands() -> list[tuple[str, list[str]]]:
    """``(command, expected output lines)`` in page order."""
    commands: list[tuple[str, list[str]]] = []
    for match in BLOCK.finditer(PAGE.read_text()):
        if match["skip"]:
            continue
        body = match["body"].replace("\\\n", " ")
        if match["lang"] == "bash":
            commands += [(re.sub(r"\s+#.*$", "", line).strip(), []) for line in body.splitlines() if line.strip()]
        else:
            for line in body.splitlines():
                if line.startswith("$ "):
                    commands.append((line[2:].strip(), []))
                elif commands and line.strip():
                    commands[-1][1].append(line.strip())
    return commands


def _shown(expected: str, output: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.search(pattern, output) is not None


def test_the_page_has_the_commands_it_documents():
    commands = [command for command, _ in page_commands()]
    for sub in ("train", "eval", "record", "compare", "plot"):
        assert any(command.startswith(f"rlkit-td3 {sub}") for command in commands), sub
    assert not any(command.startswith("ray ") for command in commands)  # skipped: needs a cluster


def test_cli_page_commands_run_verbatim(tmp_path):
    env = {
        **os.environ,
        "RLKIT_TD3_MAX_TIMESTEPS": "400",
        "OMP_NUM_THREADS": "1",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    for command, expected in page_commands():
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True)
        output = done.stdout + done.stderr
        wants_error = any("error:" in line for line in expected)
        assert done.returncode == (2 if wants_error else 0), f"{command}\n{output[-3000:]}"
        for line in expected:
            assert _shown(line, output), f"{command}: {line!r} not in\n{output[-3000:]}"
    for path in (
        "runs/cheetah_td3_s0/model.zip",
        "runs/cheetah_td3_s0/evaluations.npz",
        "runs/ddpg_Pendulum-v1_seed0/model.zip",
        "cheetah.mp4",
        "cmp_bullet/results.csv",
        "cmp_bullet/summary.md",
    ):
        assert (tmp_path / path).is_file(), path
    assert list((tmp_path / "plots").glob("*.png"))


def test_the_smoke_variable_must_be_a_positive_integer(tmp_path):
    env = {**os.environ, "RLKIT_TD3_MAX_TIMESTEPS": "many"}
    done = subprocess.run(
        [sys.executable, "-m", "rlkit_td3", "train", "--algo", "td3", "--env", "Pendulum-v1"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "RLKIT_TD3_MAX_TIMESTEPS must be a positive integer, got 'many'" in done.stderr


def test_the_preset_lists_of_the_page_and_of_help_are_the_shipped_presets():
    from rlkit_td3.cli import build_parser
    from rlkit_td3.experiments import preset_names

    (row,) = [line for line in PAGE.read_text().splitlines() if line.startswith("| `--preset NAME` |")]
    assert re.findall(r"`(\w+)`", row.split("|")[2]) == preset_names()
    train = build_parser()._subparsers._group_actions[0].choices["train"]
    (action,) = [a for a in train._actions if "--preset" in a.option_strings]
    assert re.split(r", | or ", re.sub(r" \([^)]*\)", "", action.help)) == preset_names()  # in that order
