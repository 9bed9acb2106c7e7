"""Dependency windows (which versions of a package carry a symbol) and release bisection."""
