"""The ``api`` fixture (kmock serving API-server-shaped JSON) for every test of this folder."""

from tests.kube.live_fakes import api  # noqa: F401  (a fixture: pytest finds it by name)
