"""PATCH: JSON patch, JSON merge patch and strategic merge patch."""
