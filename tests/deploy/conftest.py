"""The live tests' emulated API server, kubeconfig and webhook launcher, for the RBAC-by-calls tests."""

from tests.live.conftest import api, kubeconfig, start_webhook, tls_pair  # noqa: F401  (pytest fixtures)
