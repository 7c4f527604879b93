"""Fixtures shared by the Python tests."""
from __future__ import annotations

import os

import pytest


@pytest.fixture
def no_bobcat_knobs(monkeypatch):
    """Unset every BOBCAT_* variable but BOBCAT_HOME (where the built tree is), so that knobs set
    in the caller's environment do not change what a test sees."""
    for k in list(os.environ):
        if k.startswith("BOBCAT_") and k != "BOBCAT_HOME":
            monkeypatch.delenv(k)
