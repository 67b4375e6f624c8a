"""Package discovery only; everything else is in pyproject.toml.

Every package under ``tensorprob/`` is found (none is listed by hand), and ``kernels/`` is
added as ``tensorprob_kernels`` (the directory is mapped in ``[tool.setuptools.package-dir]``).
"""
from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["tensorprob", "tensorprob.*"]), "tensorprob_kernels"])
