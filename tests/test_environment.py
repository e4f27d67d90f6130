"""environment.yml and pyproject.toml must describe the same environment."""
import re
from pathlib import Path

import tomllib
import yaml

REPO = Path(__file__).resolve().parent.parent


def _normalise(requirement: str) -> tuple[str, str]:
    name, _, version = re.split(r"(==)", requirement.strip(), maxsplit=1)
    return name.lower().replace("_", "-"), version


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pinned = project["dependencies"] + [d for deps in project["optional-dependencies"].values() for d in deps]
    conda = yaml.safe_load((REPO / "environment.yml").read_text())
    pip_block = next(d["pip"] for d in conda["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert dict(map(_normalise, pip_block)) == dict(map(_normalise, pinned))


def test_every_dependency_is_pinned():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    for requirement in project["dependencies"]:
        assert "==" in requirement, f"{requirement} is not pinned"


def test_ci_calls_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    assert "make test" in readme
    assert "make test" in (REPO / ".ci" / "run").read_text()
