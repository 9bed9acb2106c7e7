"""`.ci/run` runs what the README promises: the README's test command word for word,
measured for coverage by the plugin the test extra installs, then the heavy tests."""

from __future__ import annotations

import re

from tests.support.paths import REPO

CI = (REPO / ".ci" / "run").read_text()
README = (REPO / "README.md").read_text()


def test_the_readmes_test_command_runs_verbatim_in_ci() -> None:
    block = re.search(r"```bash\n(.*?)```", README, re.S)
    assert block is not None, "the README opens with its two commands"
    test_command = next(x for x in block.group(1).splitlines() if "pytest" in x)
    assert test_command in CI.splitlines()
    assert "python3 -m pytest -m heavy" in CI.splitlines()


def test_ci_measures_coverage_with_the_test_extras_plugin() -> None:
    pyproject = (REPO / "pyproject.toml").read_text()
    test_extra = re.search(r"^test = \[(.*?)\]", pyproject, re.M | re.S)
    assert test_extra is not None and '"pytest-cov>=' in test_extra.group(1)
    assert '[tool.coverage.run]\nsource = ["vllmdiag"]' in pyproject
    lines = CI.splitlines()
    measured = lines.index(next(x for x in lines if x.startswith("export PYTEST_ADDOPTS=")))
    assert "--cov" in lines[measured]
    assert lines.index("python3 -m pip install -e '.[test]' && python3 -m pytest") > measured
    assert any(x.startswith("COVERAGE_FILE=") for x in lines[:measured])  # not in the checkout
