"""The distribution: a wheel built from pyproject.toml ships every package of the source tree
(an editable install finds them in the checkout whatever the configuration says, so only this
test notices a sub-package left out of a wheel)."""
import tomllib
from pathlib import Path

import setuptools

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_configuration_ships_every_package():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    shipped = set(setuptools.find_packages(where=ROOT, **config["packages"]["find"]))
    in_tree = {".".join(init.parent.relative_to(ROOT).parts)
               for init in (ROOT / "clusterkit").rglob("__init__.py")}
    assert in_tree and in_tree <= shipped
    assert "clusterkit._kernels" in config["package-data"]
