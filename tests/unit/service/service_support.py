"""Constants shared by the service tests (importable: pytest puts this folder on sys.path)."""

# starlette's TestClient warns that it will move to another HTTP client; not our code's warning.
TESTCLIENT_WARNING = "ignore:Using `httpx` with `starlette.testclient`"
CUSTODIAN_TOKEN = "custodian-token-for-tests-" + "c" * 20
