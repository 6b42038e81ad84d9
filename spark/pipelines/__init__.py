"""Runnable Spark pipelines over the gateway: `python -m spark.pipelines.<name> --help`."""
