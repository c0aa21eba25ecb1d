"""Fixtures shared by the engine tests: one loopback image server per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.image_server import ImageServer, serve_images


@pytest.fixture(scope="module")
def server() -> Iterator[ImageServer]:
    with serve_images() as srv:
        yield srv


@pytest.fixture
def fresh(server: ImageServer) -> ImageServer:
    """The module's image server with its request log cleared."""
    server.requests.clear()
    return server
