"""``pimento serve``: the analysts' HTTP service and web page for one deployment (FastAPI, uvicorn)."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from pimento.cli._common import err_console, handle_errors
from pimento.errors import ConfigError, UserError

if TYPE_CHECKING:
    from pimento.service.app import ServiceOptions
    from pimento.service.deployment import Deployment

__all__ = ["CUSTODIAN_TOKEN_ENV", "is_loopback", "register", "serve_cmd", "serve_workers"]

CUSTODIAN_TOKEN_ENV = "PIMENTO_CUSTODIAN_TOKEN"
MIN_TOKEN_CHARS = 32


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost: addresses only this machine can reach."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def custodian_token(token_file: str | None) -> str | None:
    """The custodian token from --custodian-token-file, else PIMENTO_CUSTODIAN_TOKEN, else None (custodian endpoints off)."""
    if token_file:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"cannot read the custodian token file {token_file}: {exc.strerror}") from None
        source = token_file
    else:
        token = os.environ.get(CUSTODIAN_TOKEN_ENV, "").strip()
        source = CUSTODIAN_TOKEN_ENV
        if not token:
            return None
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"the custodian token in {source} is shorter than {MIN_TOKEN_CHARS} characters",
            hint="make one with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'",
        )
    return token


def refuse_halted(deployment: Deployment) -> None:
    """Refuse to start while the deployment's releases are halted (a release failed after its charge)."""
    with deployment.ledger() as ledger:
        halts = ledger.halts(deployment.location)
    if halts:
        first = halts[0]
        raise UserError(
            f"the releases on {deployment.location} are halted since {first.get('time', '?')} (a release failed after its charge "
            f"{first.get('failed_charge') or '-'}; {len(halts)} halt(s) in force): refusing to serve",
            hint="the custodian looks at `pimento audit show --db DB`, then resumes with `pimento audit resume --db DB`",
        )


@handle_errors
def serve_cmd(
    db: str = typer.Option(..., "--db", help="The deployment's database; its pimento.toml sets ledger, caps, synthetic copy."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback unless --allow-remote)."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="TCP port."),
    allow_remote: bool = typer.Option(False, "--allow-remote", help="Allow a non-loopback --host (put a TLS proxy in front)."),
    synthetic: str = typer.Option(None, "--synthetic", help="The synthetic copy ask and preview search; default: path under synth in pimento.toml, else DB.synthetic.duckdb."),
    rollouts: int = typer.Option(10, "--rollouts", min=0, help="MCTS rollouts of the search behind ask and preview."),
    rate: float = typer.Option(2.0, "--rate", min=0.001, help="Requests per second per key (token bucket)."),
    burst: int = typer.Option(20, "--burst", min=1, help="Requests a key may make at once before --rate applies."),
    max_body: int = typer.Option(65536, "--max-body", min=1024, help="Largest request body in bytes."),
    custodian_token_file: str = typer.Option(
        None, "--custodian-token-file", help=f"File holding the custodian token (else ${CUSTODIAN_TOKEN_ENV}; neither: custodian endpoints off)."
    ),
    secure_cookies: bool = typer.Option(False, "--secure-cookies", help="Mark the web page's cookies Secure (behind a TLS proxy)."),
    workers: int = typer.Option(1, "--workers", min=1, max=64, help="Worker processes (uvicorn); they share the ledger, the rate limits, the web sign-ins, the synthetic copy and the cache of readings."),
) -> None:
    """Serve the analysts' API (/v1/...) and web page for one deployment; bound to loopback by default."""
    if not is_loopback(host) and not allow_remote:
        raise UserError(
            f"refusing to listen on {host}: it is not a loopback address",
            hint="the service speaks plain HTTP, so keys and answers would cross the network in clear; put a TLS-terminating "
            "proxy in front and pass --allow-remote (with --secure-cookies), or keep the default 127.0.0.1",
        )
    from pimento.cli._checks import require_database
    from pimento.extras import check_extra

    require_database(db)
    try:  # the `service` extra (fastapi, starlette, uvicorn, jinja2): one line naming it when missing
        import uvicorn

        from pimento.service.app import ServiceOptions, create_app, token_digest
    except ImportError as exc:
        check_extra(exc, "service", "pimento serve")
        raise
    from pimento.service.deployment import Deployment, SearchSettings

    token = custodian_token(custodian_token_file)
    deployment = Deployment(db, search=SearchSettings(rollouts=rollouts, synthetic=synthetic))  # refuses a damaged ledger
    refuse_halted(deployment)
    deployment.hold_open()
    options = ServiceOptions(
        custodian_token_sha256=token_digest(token) if token else None,
        max_body_bytes=max_body, rate=rate, burst=burst, secure_cookies=secure_cookies, shared_limits=True,
    )
    application = create_app(deployment, options)  # checks the rate-limit store too, before any worker starts
    active = sum(1 for k in deployment.keys.keys() if k.active)
    err_console.print(
        f"pimento serve: {deployment.location} on http://{host}:{port} ({active} active key(s); custodian endpoints "
        f"{'on' if token else 'off'}; modes {', '.join(deployment.modes)}; {workers} worker(s)); API at /v1, OpenAPI at /openapi.json, web page at /",
        highlight=False, soft_wrap=True,
    )
    if not active:
        err_console.print("no analyst key yet: issue one with `pimento keys add --db DB --analyst NAME`", highlight=False)
    from pimento.mechanisms.caps import cap_statement  # issue 28: the caps in force, stated at start-up

    err_console.print(f"budget: {cap_statement(deployment.settings.ledger)}", highlight=False, soft_wrap=True, markup=False)
    common = {"host": host, "port": port, "log_level": "warning", "access_log": False, "server_header": False}
    if workers == 1:
        uvicorn.run(application, **common)  # type: ignore[arg-type]
        return
    serve_workers(deployment, options, workers, common)


def serve_workers(deployment: Deployment, options: ServiceOptions, workers: int, common: dict[str, object]) -> None:
    """``workers`` processes (uvicorn's supervisor restarts one that dies), each building its app with
    :func:`pimento.service.worker.make_app` from the configuration this process checked."""
    import uvicorn

    from pimento.service.worker import WORKER_ENV, worker_config

    os.environ[WORKER_ENV] = worker_config(deployment.db, deployment.search, options)
    deployment.close()  # the workers open their own connections
    uvicorn.run("pimento.service.worker:make_app", factory=True, workers=workers, **common)  # type: ignore[arg-type]


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (wiring only: the commands are the module-level functions above)."""
    app.command("serve")(serve_cmd)
