"""The ``pimento`` command line: an edge that builds a :class:`pimento.release.request.Request` and hands it to
:mod:`pimento.release`, and the custodian's tools. :mod:`pimento.cli.app` is the entry point; each
``cmd_*`` module holds its commands as module-level functions (see :mod:`pimento.cli.app`)."""
