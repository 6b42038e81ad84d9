"""Operability: request statistics kept on the hot path (`stats`), Prometheus collectors that read
the App at scrape time (`collector`) and the HTTP service (`http`: /metrics, /healthz, /readyz and a
read-only JSON API the admin command uses). docs/metrics.md lists every metric."""
