"""Grafana dashboards built from code (``build``) and uploaded with the HTTP API (``push``)."""
