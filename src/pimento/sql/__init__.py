"""See ARCHITECTURE.md for what this package holds."""
