"""The demo hospital database (see docs/demo.md)."""
