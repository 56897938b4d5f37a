"""tests/titan: the `heavy` marker (a scan of torch and a torchtitan release, ~20 s each)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "heavy: scans a torchtitan release with torch (> 20 s)")
