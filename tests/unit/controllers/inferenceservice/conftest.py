"""Install stubs of ome.resolution.models/runtimes (when they are missing) before any test imports them."""

from tests.unit.controllers.inferenceservice import fakes  # noqa: F401
