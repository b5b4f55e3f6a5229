"""Property-based fuzzing of every route in our OpenAPI document (schemathesis): no server
error, no undocumented status or content type, and every response matches its own schema."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings
from properties import budget
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from envfactory.serving import ServeConfig, create_app

app = create_app(ServeConfig(envs=("retail",), max_sessions=256, trainer_token="fuzz-trainer"))
schema = schemathesis.openapi.from_asgi("/openapi.json", app)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@schema.parametrize()
@settings(budget(25), suppress_health_check=list(HealthCheck))
def test_api(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=CHECKS)
