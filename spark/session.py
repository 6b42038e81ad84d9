"""SparkSession with Spark's stock Kafka connector on the class path.

The connector jars are resolved by Maven into spark/jars/ (`make spark-jars`) and handed to Spark
with `spark.jars`, which also ships them to executors on a cluster. Local defaults suit a 2-core
machine; `master` (the pipelines' `--master`) points the same code at a cluster instead.
"""
from __future__ import annotations

import glob
import os
import sys

JARS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jars")
LOG4J_CONF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")
DEFAULT_MASTER = "local[2]"

# Only for local mode: a cluster brings its own sizing.
LOCAL_DEFAULTS = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "2g",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.streaming.stopGracefullyOnShutdown": "true",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
}


class ConnectorMissing(RuntimeError):
    pass


def connector_jars() -> list[str]:
    """The resolved connector jars; a clear error when `make spark-jars` has not run."""
    import pyspark

    jars = sorted(glob.glob(os.path.join(JARS_DIR, "*.jar")))
    if not any(os.path.basename(j).startswith("spark-sql-kafka-0-10_") and
               j.endswith(f"-{pyspark.__version__}.jar") for j in jars):
        raise ConnectorMissing(f"spark-sql-kafka-0-10 {pyspark.__version__} not found in {JARS_DIR}: "
                               "run `make spark-jars`")
    return jars


def build(app_name: str = "rocketgate", master: str | None = None,
          conf: dict[str, str] | None = None):
    """Create (or reuse) the SparkSession; `conf` entries override the defaults."""
    from pyspark.sql import SparkSession

    master = master or os.environ.get("SPARK_MASTER") or DEFAULT_MASTER
    # Python workers (if any UDF runs) use this interpreter, i.e. the project's venv.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings: dict[str, str] = {}
    if master.startswith("local"):
        settings.update(LOCAL_DEFAULTS)
    settings["spark.jars"] = ",".join(connector_jars())
    # Dates derived from record timestamps (archive partitions, windows) must not depend on the host.
    settings["spark.sql.session.timeZone"] = "UTC"
    # Quiet driver logs (Spark INFO and Kafka client config dumps drown the progress lines).
    settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{LOG4J_CONF}"
    settings.update(conf or {})
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("SPARK_LOG_LEVEL", "ERROR"))
    return spark
