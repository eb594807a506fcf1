"""The analysts' HTTP service and web page (``pimento serve``): see docs/serve.md and docs/service-api.md.

:func:`pimento.service.app.create_app` builds the FastAPI application for a
:class:`pimento.service.deployment.Deployment`; releases go through :mod:`pimento.release` only.
"""
