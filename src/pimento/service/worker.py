"""The application of one worker process of ``pimento serve --workers N`` (uvicorn's app factory).

uvicorn starts N processes, each importing :func:`make_app` and calling it: each opens the
deployment itself (its own ledger connections, its own held copy) from the settings the parent
``pimento serve`` checked and left in the environment variable :data:`WORKER_ENV` (JSON: the
database, the search settings and the :class:`~pimento.service.app.ServiceOptions`; the custodian
token only as its SHA-256). What the workers share is on disk or on the ledger's server: the
ledger, the keys file, the rate-limit buckets (:mod:`pimento.service.shared_limits`), the synthetic
copy (each worker reopens it when its file changes) and the cache of interpretations
(:mod:`pimento.release.reading_cache`) and the web sign-in sessions. See docs/serve.md.

The same environment variable lets another process manager (gunicorn with uvicorn workers) serve
the deployment: ``PIMENTO_SERVE_WORKER='{"db": "..."}' gunicorn -k uvicorn.workers.UvicornWorker
'pimento.service.worker:make_app()'``.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, fields
from typing import Any

from fastapi import FastAPI

from pimento.errors import ConfigError
from pimento.service.app import ServiceOptions, create_app
from pimento.service.deployment import Deployment, SearchSettings

__all__ = ["WORKER_ENV", "make_app", "worker_config"]

#: The environment variable that carries a worker's configuration (JSON).
WORKER_ENV = "PIMENTO_SERVE_WORKER"


def worker_config(db: str, search: SearchSettings, options: ServiceOptions) -> str:
    """The JSON text :func:`make_app` reads from :data:`WORKER_ENV`."""
    return json.dumps({"db": db, "search": asdict(search), "options": {k: v for k, v in asdict(options).items() if k != "extra"}})


def _read_config() -> dict[str, Any]:
    text = os.environ.get(WORKER_ENV)
    if not text:
        raise ConfigError(f"{WORKER_ENV} is not set: a worker does not know which deployment to serve",
                          hint="start the workers with `pimento serve --db DB --workers N`")
    try:
        config = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{WORKER_ENV} is not JSON: {exc}") from None
    if not isinstance(config, dict) or not isinstance(config.get("db"), str):
        raise ConfigError(f'{WORKER_ENV} must be a JSON object with "db"')
    return config


def make_app() -> FastAPI:
    """One worker's application: the deployment opened in this process, its connections held open until the
    worker shuts down (the app's lifespan closes them: :func:`pimento.service.app.create_app`)."""
    config = _read_config()
    search = SearchSettings(**config.get("search", {}))
    known = {f.name for f in fields(ServiceOptions)}
    options = ServiceOptions(**{k: v for k, v in config.get("options", {}).items() if k in known})
    options.shared_limits = True  # several processes: the buckets must be shared
    deployment = Deployment(config["db"], search=search)
    deployment.hold_open()
    return create_app(deployment, options)
