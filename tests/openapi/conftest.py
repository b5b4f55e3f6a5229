"""Fixtures for the OpenAPI tests."""

from __future__ import annotations

import pytest
from openapi_worlds import Client, world


@pytest.fixture
def clinic() -> Client:
    return Client(world("clinic-oas3.yaml"))


@pytest.fixture
def shop() -> Client:
    return Client(world("shop-swagger2.json"))
