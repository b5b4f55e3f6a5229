"""The dashboard's tests share one headless Chromium per module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    from envfactory.web.browser import launch

    chrome = launch()
    chrome.set_window_size(1400, 1600)
    try:
        yield chrome
    finally:
        chrome.quit()
