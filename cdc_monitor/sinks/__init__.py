"""Sinks: render a ScanResult (reports, Prometheus, GX); transports are separate from rendering."""
